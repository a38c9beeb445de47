import { describe, expect, it } from 'vitest';
import { GREEK, SimCluster } from '../support/sim-cluster.js';

const FIVE = GREEK.slice(0, 5) as unknown as string[];

describe('member.unreachable comes from each node’s own view, before the resolver decides', () => {
  it('on the side without the coordinator, every member publishes member.unreachable before any decision', async () => {
    const c = new SimCluster({ seed: 41, captureLogs: true }, {});
    for (const n of FIVE) {
      c.start(n);
      await c.sim.runFor(200);
    }
    await c.sim.runUntil(() => c.converged(FIVE));
    const seen = new Map<string, { member: string; at: number }[]>();
    for (const n of ['cyrene', 'delphi', 'ephesus']) {
      seen.set(n, []);
      c.get(n).cluster.subscribe((e) => {
        if (e.type === 'member.unreachable') seen.get(n)!.push({ member: e.member.name, at: c.sim.now });
      });
    }
    const start = c.sim.now;
    c.sim.partition(
      ['athens', 'byzantium'].map((n) => c.get(n).system),
      ['cyrene', 'delphi', 'ephesus'].map((n) => c.get(n).system),
    );
    await c.sim.runUntil(() => c.converged(['cyrene', 'delphi', 'ephesus']), { timeoutMs: 15_000 });
    const decidedAt = Math.min(
      ...c.sim
        .logEntries('sbr.decision')
        .filter((d) => (d.time as number) > start)
        .map((d) => d.time as number),
    );
    for (const [n, events] of seen) {
      expect(events.map((e) => e.member).sort(), n).toEqual(['athens', 'byzantium']);
      for (const e of events) expect(e.at, n).toBeLessThan(decidedAt);
    }
    // and the cluster heals its view: the downed ones are not reported reachable, they are removed
    expect(c.sim.logEntries('member.reachable').filter((e) => (e.time as number) > start)).toEqual([]);
  });
});
