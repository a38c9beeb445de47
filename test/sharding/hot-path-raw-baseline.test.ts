// The sharding bench's `--hot-path` sets doyen's remote asks beside raw `ws` + msgpackr processes at
// the same rate (bench/lib/raw-relay-*.ts) and gives each phase's CPU and run-queue wait per ask by
// process (bench/lib/proc-schedstat.ts). What must hold: every raw ask is answered, the relayed one
// really crosses the relay process (its CPU shows on that path and not on the direct one), the spread
// one wakes every echo (doyen's fan-out over its owners), and the CPU figures are this process's work, not the wall time it spent waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedTimes, schedTimes, timedByGroup } from '../../bench/lib/proc-schedstat.js';
import { type RawAskBaseline, startRawAskBaseline } from '../../bench/lib/raw-relay-baseline.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Spins until this process has used `ms` of CPU (by CPU, not wall time: a loaded machine stretches the latter). */
async function spin(ms: number): Promise<void> {
  const from = process.cpuUsage();
  for (;;) {
    const used = process.cpuUsage(from);
    if ((used.user + used.system) / 1000 >= ms) return;
  }
}

describe('CPU and run-queue wait per process (schedstat)', () => {
  it('counts a busy loop as CPU and a sleep as none', async () => {
    const self = { me: [process.pid] };
    // 90 ms each: the worker's own main-thread work during the sleep (11 ms of a 30 ms sleep once, on a
    // loaded CI run) stays well under a third of the busy loop's
    const busy = await timedByGroup(self, 1, () => spin(90));
    const idle = await timedByGroup(self, 1, () => sleep(90));
    expect(busy.times.me!.mainCpuUs).toBeGreaterThan(20_000);
    expect(idle.times.me!.mainCpuUs).toBeLessThan(busy.times.me!.mainCpuUs / 3);
    // divided by `per`
    const halved = await timedByGroup(self, 2, () => spin(90));
    expect(halved.times.me!.mainCpuUs).toBeLessThan(busy.times.me!.mainCpuUs * 0.8);
  });

  it('a process that is gone reads as zeros, not an error', () => {
    const none: SchedTimes = schedTimes(2 ** 30);
    expect(none).toMatchObject({ cpuNs: 0, mainCpuNs: 0, mainWaitNs: 0, systemNs: 0 });
  });
});

describe('the raw ask baseline', () => {
  let raw: RawAskBaseline;
  beforeAll(async () => {
    raw = await startRawAskBaseline(3);
  }, 30_000);
  afterAll(() => raw?.stop());

  it('answers every ask, directly and through the relay, and the relay is on the relayed path only', async () => {
    const request = { prefix: 't-', count: 300, rate: 2000 };
    const direct = await timedByGroup(raw.pids.relayed, request.count, () => raw.direct(request));
    const relayed = await timedByGroup(raw.pids.relayed, request.count, () => raw.relayed(request));
    for (const r of [direct.result, relayed.result]) {
      expect(r.failed).toBe(0);
      expect(r.ms).toHaveLength(request.count);
      expect(Math.min(...r.ms)).toBeGreaterThan(0);
    }
    // the control: the relay works only while asks cross it
    expect(relayed.times.relay!.mainCpuUs).toBeGreaterThan(2);
    expect(direct.times.relay!.mainCpuUs).toBeLessThan(relayed.times.relay!.mainCpuUs / 2);
    // the echo answers both ways
    expect(relayed.times.owners!.mainCpuUs).toBeGreaterThan(0);
  }, 30_000);

  it('spreads asks over every echo by the id, each answered', async () => {
    const echoes = raw.pids.spread?.owners ?? [];
    expect(echoes).toHaveLength(3);
    const each = Object.fromEntries(echoes.map((pid, i) => [`echo${i}`, [pid]]));
    const request = { prefix: 's-', count: 600, rate: 2000 };
    const spread = await timedByGroup(each, request.count, () => raw.spread!(request));
    expect(spread.result.failed).toBe(0);
    expect(spread.result.ms).toHaveLength(request.count);
    for (const i of [0, 1, 2]) expect(spread.times[`echo${i}`]!.mainCpuUs).toBeGreaterThan(1);
    // the control: the direct path wakes the first echo only, so the others work only while asks spread
    const direct = await timedByGroup(each, request.count, () => raw.direct(request));
    for (const i of [1, 2])
      expect(direct.times[`echo${i}`]!.mainCpuUs).toBeLessThan(spread.times[`echo${i}`]!.mainCpuUs / 3);
  }, 30_000);
});
