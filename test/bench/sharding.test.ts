// `pnpm bench sharding` (issue 29) in its smallest configuration (--smallest: 2 real `doyen node`
// processes, the proxy-only load generator's node, a few hundred entities, no scale-out): it runs end to
// end and its last line is the JSON object with every figure beside its target, so the bench cannot rot.
// Its figures are not judged here (a benchmark, not a timed test). The overlap check it reports is fed
// a planted overlap (positive control) and a clean hand-off, so "0 overlaps" cannot pass vacuously.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { EntityLine } from '../../bench/lib/sharding-nodes.js';
import { type CounterEvent, counterLogic } from '../../bench/lib/sharding-protocol.js';
import { entityOverlaps } from '../../bench/lib/sharding-run.js';
import { busiestWindow } from '../../bench/lib/stats.js';
import { etcdEndpoints } from '../support/etcd.js';
import { etcdInstalled } from '../support/throwaway-etcd.js';

const run = promisify(execFile);
const runner = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));

const FIGURES = [
  'rollingAddedP99Ms',
  'rollingAddedMaxMs',
  'rollingLost',
  'rollingDuplicated',
  'rollingOutOfOrder',
  'rollingUnanswered',
  'rollingOverlaps',
  'rollingLogLinesLost',
  'killNonOwnerAddedP99Ms',
  'killOwnerRecoveryP99Ms',
  'coldLocalP99Ms',
  'coldRemoteP99Ms',
  'entitiesPerGB',
  'shardedVsRemoteTell',
  'shardedVsRemoteTellSameFanout',
];

function line(node: string, entityId: string, started: boolean, time: number): EntityLine {
  return {
    node,
    entityId,
    line: { event: started ? 'singleton.started' : 'singleton.stopped', singleton: entityId, time },
  };
}

describe('pnpm bench sharding --smallest', () => {
  it('runs end to end and prints every figure beside its target', async () => {
    const { stdout } = await run(process.execPath, [runner, 'sharding', '--smallest'], {
      timeout: 170_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result.bench).toBe('sharding');
    for (const key of FIGURES) {
      expect(result, key).toHaveProperty(key);
      expect(typeof result[`${key}Target`], `${key}Target`).toBe('number');
      expect(result, `${key}VsTarget`).toHaveProperty(`${key}VsTarget`);
    }
    // figures every run measures are numbers (null only when nothing could be measured)
    for (const key of [
      'entitiesPerGB',
      'coldLocalP99Ms',
      'coldRemoteP99Ms',
      'shardedVsRemoteTell',
      'shardedVsRemoteTellSameFanout',
    ])
      expect(Number.isFinite(result[key]), key).toBe(true);
    // with an etcd (CI installs etcd-server) the remembered owner's kill is measured too
    if (etcdInstalled() || etcdEndpoints())
      for (const key of [
        'rememberedNotRestarted',
        'rememberedStartedTwice',
        'rememberedBusiestSecondVsRate',
      ]) {
        expect(Number.isFinite(result[key]), key).toBe(true);
        expect(typeof result[`${key}Target`], `${key}Target`).toBe('number');
      }
    expect(Array.isArray(result.targetsMissed)).toBe(true);
    expect(result.nodeProcessesLeft).toBe(0);
  }, 180_000);

  it("counts a rate's busiest second over any window, not per calendar second", () => {
    // 60 at the end of one second and 60 at the start of the next: 120 in one second's window
    const times = [
      ...Array.from({ length: 60 }, (_, i) => 500 + i * 8),
      ...Array.from({ length: 60 }, (_, i) => 1000 + i * 8),
    ];
    expect(busiestWindow(times, 1000)).toBe(120);
    expect(busiestWindow([0, 999, 1000, 1999], 1000)).toBe(2);
    expect(busiestWindow([], 1000)).toBe(0);
  });

  it('finds two activations of one entity alive at once, and none across a clean hand-off', () => {
    const clean = [line('a', 'e-1', true, 100), line('a', 'e-1', false, 200), line('b', 'e-1', true, 200)];
    expect(entityOverlaps(clean, [], 1000).count).toBe(0);
    // positive control: b starts e-1 before a stopped it
    const planted = [line('a', 'e-1', true, 100), line('b', 'e-1', true, 150), line('a', 'e-1', false, 200)];
    expect(entityOverlaps(planted, [], 1000).count).toBe(1);
    // a kill -9 ends what the process ran: a later start elsewhere is no overlap
    const killed = [line('a', 'e-2', true, 100), line('b', 'e-2', true, 300)];
    expect(entityOverlaps(killed, [{ node: 'a', kind: 'killed', t: 250 }], 1000).count).toBe(0);
    expect(entityOverlaps(killed, [], 1000).count).toBe(1);
  });
});

describe("the bench counter's per-sender order", () => {
  const counted = (seqs: readonly number[]) => {
    const actor = createActor(counterLogic).start();
    for (const seq of seqs) actor.send({ type: 'sb.add', seq } as CounterEvent);
    const { count, outOfOrder } = actor.getSnapshot().context;
    actor.stop();
    return { count, outOfOrder };
  };

  it('a gap (a message lost on the way) is a loss, not a reorder', () => {
    expect(counted([1, 2, 4, 5])).toEqual({ count: 4, outOfOrder: 0 });
  });

  it('an earlier message after a later one, or a repeat, is out of order', () => {
    expect(counted([1, 3, 2, 4])).toEqual({ count: 4, outOfOrder: 1 });
    expect(counted([1, 2, 2])).toEqual({ count: 3, outOfOrder: 1 });
  });
});
