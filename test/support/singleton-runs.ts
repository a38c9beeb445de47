import { expect } from 'vitest';
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import type { SingletonPlacement } from '../../packages/singleton/src/index.js';
import { forEachSeed, SeededRandom } from '../../packages/testkit/src/index.js';
import { GREEK, SimCluster, type SimNode } from './sim-cluster.js';
import { withNotebook } from './sim-singletons.js';

export const FIVE = GREEK.slice(0, 5) as unknown as string[];

/**
 * Starts the five (athens … ephesus, 100 ms apart, restarted as new incarnations when downed) in
 * `c`, waits for them to converge and puts the notebook singleton on them.
 */
export async function fiveWithNotebook(
  c: SimCluster,
  options: Parameters<typeof withNotebook>[1] = {},
): Promise<ReturnType<typeof withNotebook>> {
  c.restartDowned = true;
  for (const n of FIVE) {
    c.start(n);
    await c.sim.runFor(100);
  }
  await c.sim.runUntil(() => c.converged(FIVE), { description: 'initial convergence' });
  return withNotebook(c, options);
}

/** How many seeded runs per strategy (100 × 3 strategies = 300); DOYEN_SINGLETON_RUNS overrides (the CI budget: raise it in soaks). */
export const SINGLETON_RUNS = Number(process.env.DOYEN_SINGLETON_RUNS ?? 100);

/**
 * Seeded runs with crashes, pauses, partitions and graceful leaves under one downing strategy:
 * the notebook singleton never has two instances alive at the same instant (checked after
 * every simulated step).
 */
export async function singletonSeededRuns(
  config: Partial<ClusterConfig>,
  firstSeed: number,
  options: {
    runs?: number;
    /** Called once per run: where that run's singletons go, per node incarnation. */
    placement?: (c: SimCluster) => (node: SimNode) => SingletonPlacement;
    /** After the last heal, also require exactly one instance within this many simulated ms. */
    runningAgainWithinMs?: number;
  } = {},
): Promise<{ livenessChecked: number }> {
  let livenessChecked = 0;
  const seeds = Array.from({ length: options.runs ?? SINGLETON_RUNS }, (_, i) => firstSeed + i);
  await forEachSeed(seeds, async (seed) => {
    const c = new SimCluster({ seed }, config);
    const nb = await fiveWithNotebook(c, options.placement ? { placement: options.placement(c) } : {});
    const rnd = new SeededRandom(seed).fork('singleton-faults');
    await c.sim.runFor(300);
    for (let step = 0; step < 3; step++) {
      const names = [...c.nodes.keys()];
      const roll = rnd.next();
      if (roll < 0.3 && names.length > 1) c.crash(rnd.pick(names));
      else if (roll < 0.55) c.sim.pause(c.get(rnd.pick(names)).system, 300 + rnd.int(2500));
      else if (roll < 0.8) {
        const side = names.filter(() => rnd.chance(0.5));
        const other = names.filter((n) => !side.includes(n));
        if (side.length && other.length) {
          c.split(side, other);
        }
      } else if (names.includes('athens')) void c.get(names[0]!).cluster.leave();
      await c.sim.runFor(1000 + rnd.int(3000));
      if (rnd.chance(0.6)) c.sim.heal();
    }
    c.sim.heal();
    await c.sim.runFor(4000);
    expect(nb.peak()).toBeLessThanOrEqual(1);
    // a cluster left with up members runs the singleton again (some fault sequences leave none:
    // e.g. a leave and two crashes put the last two on the losing side of keep-majority)
    if (
      options.runningAgainWithinMs !== undefined &&
      [...c.nodes.values()].some((n) => n.cluster.state().status === 'up')
    ) {
      livenessChecked++;
      await c.sim.runUntil(() => nb.running() === 1, {
        timeoutMs: options.runningAgainWithinMs,
        description: 'one notebook instance after the heal',
      });
    }
  });
  return { livenessChecked };
}
