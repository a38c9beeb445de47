// The sharding bench splits each cold ask from another node where it crosses the processes and
// sets the slowest beside the processes' GC pauses and event-loop stalls (bench/lib/
// sharding-cold-trace.ts): the evidence for what the tail waits on. What must hold: the slowest
// are picked by the measured round trip (not the pacing delay), a pause counts only if it overlaps
// one of them, the base rate is reported beside it, and a stall's waiting share comes from its CPU.
import { describe, expect, it } from 'vitest';
import { summarizeColdTrace } from '../../bench/lib/sharding-cold-trace.js';
import type { ColdTrace } from '../../bench/lib/sharding-load.js';

/** 200 asks 0.2 ms apart, 0.5 ms each way; `slow` of them (by index) take 10 ms out instead. */
function trace(slow: readonly number[], lateOf: (i: number) => number = () => 0): ColdTrace[] {
  return Array.from({ length: 200 }, (_, i) => ({
    i,
    t: 1_000 + i * 0.2,
    late: lateOf(i),
    out: slow.includes(i) ? 10 : 0.5,
    back: 0.5,
    pid: slow.includes(i) ? 42 : 7,
  }));
}

describe('the cold asks split at the process boundaries', () => {
  it('picks the slowest by round trip, names their owner and the pauses and stalls they overlapped', () => {
    const asks = trace([100, 101]);
    const summary = summarizeColdTrace(asks, {
      // one pause overlapping the slow asks, one long after every ask
      gcPauses: [
        { proc: 'n1', at: 1_000 + 100 * 0.2 + 1, ms: 4 },
        { proc: 'n2', at: 5_000, ms: 4 },
      ],
      stalls: [
        { proc: 'n1', at: 1_000 + 100 * 0.2, ms: 8, cpuMs: 2 },
        { proc: 'load', at: 1_000 + 10 * 0.2, ms: 8, cpuMs: 8 },
      ],
      procOfPid: new Map([[42, 'n1']]),
    })!;
    expect(summary.slowestIndices).toEqual([100, 101]);
    expect(summary.slowest.out).toBe(10);
    expect(summary.slowestOwners).toEqual({ n1: 2 });
    expect(summary.slowestDuringGc).toBe(2);
    expect(summary.gcPausesDuring).toEqual([{ proc: 'n1', ms: 4 }]);
    // the base rate: the pause overlaps more asks than the two slow ones
    expect(summary.allDuringGcShare).toBeGreaterThan(0.01);
    expect(summary.allDuringGcShare).toBeLessThan(0.5);
    // only the stall under the slow asks; it ran 2 of its 8 ms: waiting for a core 3/4 of it
    expect(summary.stallsDuringSlowest).toMatchObject({ count: 1, maxMs: 8, waitingShare: 0.75 });
    expect(summary.p99ByQuarterMs[2]).toBeGreaterThan(summary.p99ByQuarterMs[0]!);
  });

  it('the pacing delay is shown beside the round trip, not counted in it', () => {
    // every other ask left 20 ms late: counted in, ask 5 (11 ms) would be the fastest of all
    const asks = trace([5], (i) => (i === 5 ? 0 : 20));
    const summary = summarizeColdTrace(asks)!;
    expect(summary.slowestIndices).toContain(5);
    expect(summary.slowest.out).toBeGreaterThan(5);
    expect(summary.all.late).toBe(20);
    // no stall reported: no waiting share to speak of
    expect(summary.stallsDuringSlowest).toMatchObject({ count: 0, maxMs: 0 });
    expect(summary.stallsDuringSlowest.waitingShare).toBeNaN();
  });
});
