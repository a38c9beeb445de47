import { describe, expect, it } from 'vitest';
import { SimCluster } from '../support/sim-cluster.js';

const names = (n: number) => Array.from({ length: n }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);

describe('stability means reachability: joins are not instability', () => {
  it('a rolling join of 30 members with nothing unreachable never triggers a decision, down-all included', async () => {
    // short timers make the resolver as eager as it can be: any instability would show
    const c = new SimCluster(
      { seed: 30, captureLogs: true },
      {
        sbr: {
          stableAfterMs: 1000,
          downAllWhenUnstableMs: 500,
          downIfAlone: true,
          acquireLeaseDelayForMinorityMs: 0,
        },
      },
    );
    const all = names(30);
    const unstable = new Set<string>();
    for (const name of all) {
      const node = c.start(name, ['n01', 'n02']);
      const ref = node.system.lookup('/system/downing')!;
      node.system.subscribeSnapshots(ref, (s) => {
        if (!(s as { matches: (v: string) => boolean }).matches('stable')) unstable.add(name);
      });
      await c.sim.runFor(50);
    }
    await c.sim.runUntil(() => c.converged(all), { timeoutMs: 60_000, description: 'thirty up' });
    await c.sim.runFor(2000);
    expect(c.sim.logEntries('sbr.decision')).toEqual([]);
    expect(unstable).toEqual(new Set());
    // positive control: the same resolver does act on a real failure in this cluster
    c.crash('n30');
    await c.sim.runUntil(() => c.converged(all.slice(0, 29)), { timeoutMs: 20_000 });
    expect(c.sim.logEntries('sbr.decision').map((d) => d.decision)).toContain('down-unreachable');
  }, 180_000);
});
