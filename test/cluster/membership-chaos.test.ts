import { describe, expect, it } from 'vitest';
import { forEachSeed, SeededRandom } from '../../packages/testkit/src/index.js';
import { GREEK, SimCluster } from '../support/sim-cluster.js';

const NAMES = GREEK.slice(0, 5) as unknown as string[];

/** A node's view: coordinator, version, and the up members it sees. */
function viewOf(c: SimCluster, name: string): string {
  const s = c.get(name).cluster.state();
  return `${s.coordinator?.name}@${s.membership?.version}:${c.upMembers(name).join(',')}`;
}

/**
 * After the faults stop, every node that is up agrees with every running, up member of its
 * view: one coordinator per connected cluster, one membership per cluster.
 */
function consistent(c: SimCluster): string | undefined {
  for (const name of c.nodes.keys()) {
    const me = c.get(name).cluster.state();
    if (me.status !== 'up') continue;
    for (const other of c.upMembers(name)) {
      const them = c.nodes.get(other);
      if (them?.cluster.state().status !== 'up') continue;
      if (viewOf(c, other) !== viewOf(c, name))
        return `${name} sees ${viewOf(c, name)} but ${other} sees ${viewOf(c, other)}`;
    }
    const coordinators = new Set(
      c.upMembers(name).map((m) => (c.nodes.has(m) ? c.coordinatorOf(m) : undefined)),
    );
    coordinators.delete(undefined);
    if (coordinators.size > 1) return `${name}'s cluster has coordinators ${[...coordinators].join(', ')}`;
  }
  return undefined;
}

describe('membership under seeded chaos', () => {
  it.each(['auto', 'keep-majority'] as const)(
    '%s: crashes, restarts, pauses and partitions end in consistent clusters with one coordinator each',
    async (downing) => {
      const seeds = Array.from({ length: 20 }, (_, i) => 1000 + i);
      await forEachSeed(seeds, async (seed) => {
        const c = new SimCluster({ seed, network: { jitterMs: 2, dropRate: 0.01 } }, { downing });
        const rnd = new SeededRandom(seed).fork('chaos');
        for (const n of NAMES) {
          c.start(n, ['athens', 'byzantium']);
          await c.sim.runFor(rnd.int(500));
        }
        await c.sim.runUntil(() => c.converged(NAMES), {
          timeoutMs: 30_000,
          description: 'initial convergence',
        });
        for (let step = 0; step < 8; step++) {
          const victim = rnd.pick(NAMES);
          const roll = rnd.next();
          if (roll < 0.3 && c.nodes.has(victim)) {
            c.crash(victim);
          } else if (roll < 0.5 && !c.nodes.has(victim)) {
            c.start(victim, ['athens', 'byzantium']);
          } else if (roll < 0.75 && c.nodes.has(victim)) {
            c.sim.pause(c.get(victim).system, 100 + rnd.int(2000));
          } else {
            const running = [...c.nodes.keys()];
            const side = running.filter(() => rnd.chance(0.5));
            const other = running.filter((n) => !side.includes(n));
            if (side.length > 0 && other.length > 0) {
              c.sim.partition(
                side.map((n) => c.get(n).system),
                other.map((n) => c.get(n).system),
              );
            }
          }
          await c.sim.runFor(500 + rnd.int(3000));
          if (rnd.chance(0.5)) c.sim.heal();
        }
        c.sim.heal();
        await c.sim.runUntil(() => consistent(c) === undefined, { timeoutMs: 20_000 }).catch(() => undefined);
        await c.sim.runFor(3000);
        expect(consistent(c)).toBeUndefined();
      });
    },
    120_000,
  );
});
