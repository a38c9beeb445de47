import { describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { GREEK, SimCluster } from '../support/sim-cluster.js';

/**
 * The chaos runner's finding (session 37, U6, load 44–68): under load the resolver's sides took
 * every member of six down one after another, and every node restarted in place as a new
 * incarnation joining the members it knew with `mayFormCluster` false, so none of them could
 * form: all six ended `join-failed`. Now the first of the operator's seeds (`formingSeeds`, kept
 * across incarnations) forms again once every other seed and, with itself, a strict majority of
 * the members it last knew (`lastMembers`) asked it to join and no member answered (positive
 * evidence that no cluster is left), and the others join it. Under a partition the side holding
 * half the members or more is made of members, which ask nothing, so the first seed forms
 * nothing, even when every seed sits on the minority side.
 */

const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];

/** Five nodes, each with every node as its seeds (athens first), downed nodes restarting in place. */
async function fiveNodes(seed: number, config: Partial<ClusterConfig>): Promise<SimCluster> {
  const c = new SimCluster({ seed, captureLogs: true }, config);
  for (const n of NAMES) {
    c.start(n, NAMES);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(NAMES), { description: 'initial convergence', timeoutMs: 30_000 });
  c.restartDowned = true;
  return c;
}

/** Every node alone (each a minority of one: keep-majority downs them all), then the network healed. */
async function totalDowning(c: SimCluster): Promise<void> {
  for (const n of NAMES)
    c.split(
      [n],
      NAMES.filter((o) => o !== n),
    );
  await c.sim.runUntil(() => NAMES.every((n) => c.downedAt.some((d) => d.name === n)), {
    description: 'every member downed',
    timeoutMs: 60_000,
  });
  c.sim.heal();
}

/** The addresses SimCluster gives these names (10.0.0.x:2552 in GREEK order). */
const formingSeeds = (names: readonly string[]) =>
  names.map((n) => ({ host: `10.0.0.${GREEK.indexOf(n as (typeof GREEK)[number]) + 1}`, port: 2552 }));
const reformedBy = (c: SimCluster): string[] =>
  c.sim.logEntries('membership.reformed').map((e) => String(e.node));

describe('after a total downing the seeds re-form one cluster', () => {
  it('every member downed and restarted in place: athens forms again, the four join it, all up', async () => {
    await forEachSeed([1, 2, 3, 4, 5], async (seed) => {
      const c = await fiveNodes(seed, { formingSeeds: formingSeeds(NAMES) });
      await totalDowning(c);
      await c.sim.runUntil(() => c.converged(NAMES), {
        description: 'one cluster of the five new incarnations',
        timeoutMs: 60_000,
      });
      expect(c.coordinatorOf('byzantium')).toBe('athens');
      // formed once, by athens's new incarnation, on the evidence of the four asking it
      expect(reformedBy(c)).toEqual([c.get('athens').system.nodeName]);
      await c.sim.runFor(5000);
      expect(c.converged(NAMES)).toBe(true);
    });
  });

  it('positive control: without forming seeds (the old restart) nobody may form and all five fail to join', async () => {
    const c = await fiveNodes(1, {});
    await totalDowning(c);
    await c.sim.runUntil(() => NAMES.every((n) => c.get(n).cluster.state().status === 'join-failed'), {
      description: 'all five join-failed',
      timeoutMs: 120_000,
    });
    expect(reformedBy(c)).toEqual([]);
  });
});

describe('under a partition the first seed forms no second cluster', () => {
  /** athens and byzantium cut off (a minority: downed, restarted in place) for 30 s, then healed. */
  async function minorityWithFirstSeed(seed: number, forming: readonly string[]) {
    const c = await fiveNodes(seed, { formingSeeds: formingSeeds(forming) });
    let formedOwn = false;
    c.sim.addInvariant('athens never holds a membership without cyrene', () => {
      const m = c.nodes.get('athens')?.cluster.state().membership;
      if (m && !m.members.some((x) => x.name === 'cyrene')) formedOwn = true;
      return true;
    });
    const minority = ['athens', 'byzantium'];
    const majority = ['cyrene', 'delphi', 'ephesus'];
    c.split(minority, majority);
    await c.sim.runUntil(() => minority.every((n) => c.downedAt.some((d) => d.name === n)), {
      description: 'the minority downed itself',
      timeoutMs: 60_000,
    });
    await c.sim.runFor(30_000);
    return { c, formedOwn: () => formedOwn, minority, majority };
  }

  it('the minority side (athens, the first seed, with byzantium) restarts and keeps joining; healed, all five are one cluster', async () => {
    await forEachSeed([1, 2, 3], async (seed) => {
      const { c, formedOwn } = await minorityWithFirstSeed(seed, NAMES);
      expect(formedOwn()).toBe(false);
      expect(reformedBy(c)).toEqual([]);
      c.sim.heal();
      // they may have given up joining meanwhile (join-failed): a supervisor restarts them
      for (const n of ['athens', 'byzantium']) {
        if (c.get(n).cluster.state().status === 'join-failed') {
          c.crash(n);
          c.start(n, NAMES, { mayFormCluster: false });
        }
      }
      await c.sim.runUntil(() => c.converged(NAMES), {
        description: 'one cluster of five',
        timeoutMs: 60_000,
      });
      expect(formedOwn()).toBe(false);
    });
  });

  it('two forming seeds, the rest of the five asking nothing: byzantium joining alone is no majority, athens forms nothing', async () => {
    const { c, formedOwn } = await minorityWithFirstSeed(1, ['athens', 'byzantium']);
    expect(formedOwn()).toBe(false);
    expect(reformedBy(c)).toEqual([]);
    expect(c.upMembers('cyrene')).toEqual(['cyrene', 'delphi', 'ephesus']);
  });
});

describe('the seeds all on the minority side: the majority of the last membership decides', () => {
  const SEVEN = GREEK.slice(0, 7);
  const SEEDS = ['athens', 'byzantium'];
  const REST = SEVEN.filter((n) => !SEEDS.includes(n));

  /**
   * Seven nodes started with the operator's seeds athens and byzantium only; both seeds cut off
   * from the other five (keep-majority downs them, they restart in place and ask each other) for
   * 30 s. Watches whether athens ever holds a membership without cyrene (a second cluster).
   */
  async function seedsIsolated(seed: number, config: Partial<ClusterConfig>) {
    const c = new SimCluster({ seed, captureLogs: true }, { formingSeeds: formingSeeds(SEEDS), ...config });
    for (const n of SEVEN) {
      c.start(n, SEEDS);
      await c.sim.runFor(200);
    }
    await c.sim.runUntil(() => c.converged(SEVEN), { description: 'initial convergence', timeoutMs: 30_000 });
    c.restartDowned = true;
    let formedOwn = false;
    c.sim.addInvariant('athens never holds a membership without cyrene', () => {
      const m = c.nodes.get('athens')?.cluster.state().membership;
      if (m && !m.members.some((x) => x.name === 'cyrene')) formedOwn = true;
      return true;
    });
    c.split(SEEDS, REST);
    await c.sim.runUntil(() => SEEDS.every((n) => c.downedAt.some((d) => d.name === n)), {
      description: 'both seeds downed on the minority side',
      timeoutMs: 60_000,
    });
    await c.sim.runFor(30_000);
    return { c, formedOwn: () => formedOwn };
  }

  it('byzantium asks athens, nobody else can: no second cluster while the partition lasts; healed, one cluster of seven', async () => {
    await forEachSeed([1, 2, 3], async (seed) => {
      const { c, formedOwn } = await seedsIsolated(seed, {});
      expect(formedOwn()).toBe(false);
      expect(reformedBy(c)).toEqual([]);
      expect(c.upMembers('cyrene')).toEqual([...REST].sort());
      c.sim.heal();
      // they may have given up joining meanwhile (join-failed): a supervisor restarts them
      for (const n of SEEDS) {
        if (c.get(n).cluster.state().status === 'join-failed') {
          c.crash(n);
          c.start(n, SEVEN, { mayFormCluster: false });
        }
      }
      await c.sim.runUntil(() => c.converged(SEVEN), {
        description: 'one cluster of seven',
        timeoutMs: 60_000,
      });
      expect(formedOwn()).toBe(false);
      expect(reformedBy(c)).toEqual([]);
    });
  });

  it('positive control: with an empty last membership (the majority requirement off) athens forms a second cluster', async () => {
    const { c, formedOwn } = await seedsIsolated(1, { lastMembers: [] });
    expect(formedOwn()).toBe(true);
    expect(reformedBy(c).length).toBeGreaterThan(0);
    expect(c.upMembers('cyrene')).toEqual([...REST].sort());
  });
});
