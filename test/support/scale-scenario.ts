// The scale scenario of `pnpm bench scale` in the deterministic simulation, for sizes one machine
// cannot run as processes (100, 250): the same steps and figures as with real nodes, in simulated
// milliseconds, plus the messages each member sends per second while idle.
import { compareAddress } from '../../packages/cluster/src/downing/sbr-view.js';
import { exitOnDown } from './exit-on-down.js';
import { SimCluster } from './sim-cluster.js';

const STAGGER_MS = 200;
/** Predicates are checked every this many simulated ms (the figures' resolution). */
const STEP_MS = 10;

export interface SimulatedScale {
  readonly n: number;
  readonly convergeMs: number;
  readonly falseDownings: number;
  readonly falseSuspicions: number;
  readonly messagesPerNodePerSec: number;
  readonly agreementMs: number;
  readonly twoEight: { readonly cutToDecisionMs: number; readonly decisionToLosingDownMs: number };
  readonly fifty: { readonly cutToDecisionMs: number; readonly decisionToLosingDownMs: number };
  /** Wall-clock seconds the run took. */
  readonly wallS: number;
}

const name = (i: number) => `m${String(i + 1).padStart(3, '0')}`;

/** Runs the simulation until `holds`, checking every STEP_MS; the simulated ms it took. */
async function until(c: SimCluster, holds: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const t0 = c.sim.now;
  while (!holds()) {
    if (c.sim.now - t0 > timeoutMs)
      throw new Error(`simulation (seed ${c.sim.seed}): ${what} not done after ${timeoutMs} ms`);
    await c.sim.runFor(STEP_MS);
  }
  return c.sim.now - t0;
}

export async function simulatedScale(n: number, seed = n): Promise<SimulatedScale> {
  const wall0 = Date.now();
  const c = new SimCluster({ seed, captureLogs: true, logLevel: 'info' }, { downing: 'keep-majority' });
  let cursor = 0;
  /** Log entries since the last call, parsed once. */
  const newEntries = () => {
    const lines = c.sim.logs.slice(cursor);
    cursor = c.sim.logs.length;
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  const all = Array.from({ length: n }, (_, i) => name(i));
  const seeds = all.slice(0, 3);
  const allUp = (names: readonly string[]) => names.every((x) => c.upMembers(x).length === names.length);

  // 1. rolling start, one per 200 ms, through three seeds
  for (const [i, x] of all.entries()) {
    c.start(x, seeds);
    if (i < n - 1) await c.sim.runFor(STAGGER_MS);
  }
  const convergeMs = await until(c, () => allUp(all), 120_000, `${n} up`);
  const rolling = newEntries();
  const falseDownings = rolling.filter(
    (e) => e.event === 'sbr.decision' || e.event === 'member.downed',
  ).length;
  const falseSuspicions = rolling.filter((e) => e.event === 'fd.peer-unreachable').length;

  // 2. idle traffic
  await c.sim.runFor(2000);
  let frames = 0;
  const stop = c.sim.network.observe((e) => {
    if (e.kind === 'send') frames++;
  });
  await c.sim.runFor(5000);
  stop();
  newEntries();

  // 3. crash of the coordinator: every survivor names the next oldest and no longer counts it up
  const coordinator = c.coordinatorOf(all[n - 1]!)!;
  const byAge = [...c.get(all[n - 1]!).cluster.state().membership!.members]
    .sort((a, b) => a.age - b.age)
    .map((m) => m.name!);
  const survivors = byAge.filter((x) => x !== coordinator);
  c.crash(coordinator);
  const agreementMs = await until(
    c,
    () =>
      survivors.every((x) => c.coordinatorOf(x) === survivors[0] && !c.upMembers(x).includes(coordinator)),
    60_000,
    'survivors agreeing on the next coordinator',
  );
  await until(c, () => allUp(survivors), 30_000, 'survivors settled');

  // 4. the youngest fifth cut off, then a 50/50 split of the rest, 3 s apart (as with processes)
  const { downAt } = exitOnDown(c, survivors, 'flush');
  const partition = async (winners: readonly string[], losers: readonly string[]) => {
    newEntries();
    c.sim.partition(
      winners.map((x) => c.get(x).system),
      losers.map((x) => c.get(x).system),
    );
    const cutAt = c.sim.now;
    await until(c, () => losers.every((x) => downAt.has(x)), 60_000, 'the losing side down');
    const decisions = newEntries()
      .filter((e) => e.event === 'sbr.decision')
      .map((e) => e.time as number);
    const decidedAt = decisions.length > 0 ? Math.min(...decisions) : cutAt;
    const lastDown = Math.max(...losers.map((x) => downAt.get(x)!));
    await until(c, () => allUp(winners), 30_000, 'the winning side agreeing');
    for (const x of losers) if (c.nodes.has(x)) c.crash(x);
    c.sim.heal();
    return { cutToDecisionMs: decidedAt - cutAt, decisionToLosingDownMs: lastDown - decidedAt };
  };
  await c.sim.runFor(3000);
  const small = Math.max(1, Math.round(survivors.length / 5));
  const majority = survivors.slice(0, survivors.length - small);
  const twoEight = await partition(majority, survivors.slice(survivors.length - small));
  await c.sim.runFor(3000);
  // keep-majority on a tie: the half with the lowest address stays
  const addressOf = (x: string) => `${c.addressOf(x).host}:${c.addressOf(x).port}`;
  const byAddress = [...majority].sort((a, b) => compareAddress(addressOf(a), addressOf(b)));
  const half = Math.floor(byAddress.length / 2);
  const fifty = await partition(
    byAddress.slice(0, byAddress.length - half),
    byAddress.slice(byAddress.length - half),
  );
  c.sim.shutdown();
  return {
    n,
    convergeMs,
    falseDownings,
    falseSuspicions,
    messagesPerNodePerSec: +(frames / n / 5).toFixed(1),
    agreementMs,
    twoEight,
    fifty,
    wallS: +((Date.now() - wall0) / 1000).toFixed(1),
  };
}
