import { expect } from 'vitest';
import { type ClusterConfig, defaultStableAfterMs } from '../../packages/cluster/src/index.js';
import { forEachSeed, SeededRandom } from '../../packages/testkit/src/index.js';
import { formedSimCluster, GREEK, type SimCluster } from './sim-cluster.js';

const FIVE = GREEK.slice(0, 5) as unknown as string[];

/** Seeded runs per strategy (40 × 3 = 120); DOYEN_SBR_RUNS overrides (the CI budget: raise it in soaks). */
export const SBR_RUNS = Number(process.env.DOYEN_SBR_RUNS ?? 40);

const status = (c: SimCluster, n: string) => c.get(n).cluster.state().status;
const five = (seed: number, config: Partial<ClusterConfig>) => formedSimCluster(FIVE, { seed }, config);

/**
 * Clean, asymmetric and indirect partitions, flapping, crashes and pauses under one strategy.
 * Invariant: coordinator lifetimes of different incarnations never overlap once each is shifted
 * by the down-removal margin (so a singleton started after the margin never runs beside the old
 * one); after healing and restarts, one cluster again.
 */
export async function sbrSeededRuns(config: Partial<ClusterConfig>, firstSeed: number): Promise<void> {
  const seeds = Array.from({ length: SBR_RUNS }, (_, i) => firstSeed + i);
  await forEachSeed(seeds, async (seed) => {
    const c = await five(seed, config);
    c.restartDowned = true;
    const rnd = new SeededRandom(seed).fork('faults');
    const margin = defaultStableAfterMs(5); // stable-after at 5 nodes, the default down-removal margin
    const intervals: { node: string; uid: string; start: number; end: number }[] = [];
    const open = new Map<string, { node: string; uid: string; start: number }>();
    c.sim.addInvariant('coordinator intervals', () => {
      const now = c.sim.now;
      const current = new Set<string>();
      for (const [name, n] of c.nodes) {
        const s = n.cluster.state();
        if (s.status === 'up' && s.isCoordinator) current.add(`${name}#${n.system.node.uid}`);
      }
      for (const id of current)
        if (!open.has(id)) open.set(id, { node: id.split('#')[0]!, uid: id.split('#')[1]!, start: now });
      for (const [id, o] of open) {
        if (!current.has(id)) {
          intervals.push({ ...o, end: now });
          open.delete(id);
        }
      }
      return true;
    });
    const kind = rnd.pick(['clean', 'asymmetric', 'indirect', 'flapping', 'crash', 'pause'] as const);
    const names = [...FIVE];
    const sideA = names.filter(() => rnd.chance(0.5));
    const sideB = names.filter((n) => !sideA.includes(n));
    if (kind === 'clean' && sideA.length && sideB.length) c.split(sideA, sideB);
    if (kind === 'asymmetric')
      c.sim.blockOneWay(c.get(rnd.pick(names)).system, c.get(rnd.pick(names)).system);
    if (kind === 'indirect') {
      const [x, y] = rnd.shuffle(names);
      c.sim.partition([c.get(x!).system], [c.get(y!).system]);
    }
    if (kind === 'flapping' && sideA.length && sideB.length) {
      for (let i = 0; i < 6; i++) {
        c.split(sideA, sideB);
        await c.sim.runFor(300 + rnd.int(1500));
        c.sim.heal();
        await c.sim.runFor(200 + rnd.int(1000));
      }
    }
    if (kind === 'crash') c.crash(rnd.pick(names));
    if (kind === 'pause') c.sim.pause(c.get(rnd.pick(names)).system, 500 + rnd.int(4000));
    await c.sim.runFor(8000 + rnd.int(4000));
    c.sim.heal();
    for (const n of names)
      if (!c.nodes.has(n))
        c.start(n, ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'], { mayFormCluster: false });
    // until everyone is back in one cluster (or 25 s), then a little longer for late surprises
    const settled = () => names.every((n) => c.nodes.has(n) && status(c, n) === 'up') && c.converged(names);
    await c.sim.runUntil(settled, { timeoutMs: 25_000 }).catch(() => undefined);
    await c.sim.runFor(2000);
    for (const [, o] of open) intervals.push({ ...o, end: c.sim.now });
    // shifted by the margin, coordinator intervals of different incarnations never overlap
    for (const a of intervals) {
      for (const b of intervals) {
        if (a === b || `${a.node}#${a.uid}` === `${b.node}#${b.uid}`) continue;
        const overlap = Math.min(a.end, b.end) - Math.max(a.start + margin, b.start + margin);
        if (overlap > 0 && a.start !== b.start) {
          throw new Error(
            `${kind}: coordinators ${a.node} [${a.start}, ${a.end}) and ${b.node} [${b.start}, ${b.end}) overlap`,
          );
        }
      }
    }
    // after the heal and the restarts: one cluster again (down-all style outcomes excepted)
    const up = names.filter((n) => c.nodes.has(n) && status(c, n) === 'up');
    if (up.length > 0) expect(c.converged(up, up)).toBe(true);
    expect(up.length === names.length || c.downedAt.length > 0).toBe(true);
  });
}
