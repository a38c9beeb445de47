import { describe, expect, it } from 'vitest';
import { shouldMergeInto } from '../../packages/cluster/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { formedSimCluster, GREEK } from '../support/sim-cluster.js';

const FIVE = GREEK.slice(0, 5) as unknown as string[];

const autoCluster = (seed: number, names: string[]) =>
  formedSimCluster(names, { seed, captureLogs: true }, { downing: 'auto' });

describe('split-brain checker: the seed recovery under auto downing', () => {
  it('who merges into whom is the same answer on both sides', () => {
    expect(shouldMergeInto({ size: 2, address: '10.0.0.2:1' }, { size: 3, address: '10.0.0.1:1' })).toBe(
      true,
    );
    expect(shouldMergeInto({ size: 3, address: '10.0.0.1:1' }, { size: 2, address: '10.0.0.2:1' })).toBe(
      false,
    );
    // tie: the side with the lowest coordinator address stays
    expect(shouldMergeInto({ size: 2, address: '10.0.0.1:1' }, { size: 2, address: '10.0.0.3:1' })).toBe(
      false,
    );
    expect(shouldMergeInto({ size: 2, address: '10.0.0.3:1' }, { size: 2, address: '10.0.0.1:1' })).toBe(
      true,
    );
  });

  it('the five-node split heals into one cluster: the two merge into the three, within five seconds', async () => {
    await forEachSeed([71, 72, 73], async (seed) => {
      const c = await autoCluster(seed, FIVE);
      const sideA = ['athens', 'delphi', 'ephesus'];
      const sideB = ['byzantium', 'cyrene'];
      c.split(sideA, sideB);
      await c.sim.runUntil(() => c.converged(sideA) && c.converged(sideB), { timeoutMs: 10_000 });
      expect(c.coordinatorOf('cyrene')).toBe('byzantium');
      c.sim.heal();
      const took = await c.sim.runUntil(() => c.converged(FIVE), {
        timeoutMs: 20_000,
        description: 'merged cluster',
      });
      expect(took).toBeLessThan(5000);
      expect(c.coordinatorOf('byzantium')).toBe('athens');
      expect(c.rejoins.map((r) => r.name).sort()).toEqual(sideB.sort());
      const merges = c.sim.logEntries('split-brain.merge');
      expect(merges.some((m) => m.role === 'initiator' && m.node === '10.0.0.2:2552')).toBe(true);
    });
  });

  it('equal halves agree deterministically: the side with the lower coordinator address stays', async () => {
    const names = GREEK.slice(0, 4) as unknown as string[];
    const c = await autoCluster(74, names);
    c.split(['athens', 'cyrene'], ['byzantium', 'delphi']);
    await c.sim.runUntil(() => c.converged(['athens', 'cyrene']) && c.converged(['byzantium', 'delphi']), {
      timeoutMs: 10_000,
    });
    c.sim.heal();
    await c.sim.runUntil(() => c.converged(names), { timeoutMs: 20_000 });
    expect(c.rejoins.map((r) => r.name).sort()).toEqual(['byzantium', 'delphi']);
  });

  it('without a heal, nothing merges: probes to the other side go unanswered', async () => {
    const c = await autoCluster(75, FIVE);
    c.split(['athens'], FIVE.slice(1));
    await c.sim.runFor(15_000);
    expect(c.rejoins).toEqual([]);
  });
});

describe('quorum protection (minimum cluster size)', () => {
  it('refuses work with NotEnoughMembers on the side below the minimum, during and after a split', async () => {
    const { NotEnoughMembersError } = await import('../../packages/cluster/src/index.js');
    const c = await formedSimCluster(FIVE, { seed: 81 }, { downing: 'auto', minimumClusterSize: 3 });
    expect(c.get('cyrene').cluster.hasQuorum()).toBe(true);
    expect(() => c.get('cyrene').cluster.requireQuorum()).not.toThrow();
    c.split(['athens', 'delphi', 'ephesus'], ['byzantium', 'cyrene']);
    await c.sim.runUntil(() => !c.get('cyrene').cluster.hasQuorum(), { timeoutMs: 5000 });
    expect(() => c.get('cyrene').cluster.requireQuorum()).toThrow(NotEnoughMembersError);
    expect(() => c.get('cyrene').cluster.requireQuorum()).toThrow(
      /requires at least 3 reachable members, 2 present/,
    );
    expect(c.get('athens').cluster.hasQuorum()).toBe(true);
  });
});
