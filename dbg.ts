import { SeededRandom } from './packages/testkit/src/index.ts';
import { GREEK, SimCluster } from './test/support/sim-cluster.ts';
import { withNotebook } from './test/support/sim-singletons.ts';
const FIVE = GREEK.slice(0, 5) as unknown as string[];
const seed = Number(process.argv[2]); const strat = process.argv[3];
const config: any = strat === 'static-quorum' ? { downing: 'static-quorum', sbr: { quorumSize: 3, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 } } : { downing: strat };
const c = new SimCluster({ seed, captureLogs: true } as any, config);
c.restartDowned = true;
for (const n of FIVE) { c.start(n); await c.sim.runFor(100); }
await c.sim.runUntil(() => c.converged(FIVE));
const nb = withNotebook(c);
const rnd = new SeededRandom(seed).fork('singleton-faults');
try {
await c.sim.runFor(300);
for (let step = 0; step < 3; step++) {
  const names = [...c.nodes.keys()];
  const roll = rnd.next();
  if (roll < 0.3 && names.length > 1) { const v = rnd.pick(names); console.log(c.sim.now, 'crash', v); c.crash(v); }
  else if (roll < 0.55) { const v = rnd.pick(names); const ms = 300 + rnd.int(2500); console.log(c.sim.now, 'pause', v, ms); c.sim.pause(c.get(v).system, ms); }
  else if (roll < 0.8) { const side = names.filter(() => rnd.chance(0.5)); const other = names.filter((n) => !side.includes(n)); if (side.length && other.length) { console.log(c.sim.now, 'partition', side, other); c.sim.partition(side.map((n) => c.get(n).system), other.map((n) => c.get(n).system)); } }
  else if (names.includes('athens')) { console.log(c.sim.now, 'leave', names[0]); void c.get(names[0]!).cluster.leave(); }
  await c.sim.runFor(1000 + rnd.int(4000));
  if (rnd.chance(0.6)) { console.log(c.sim.now, 'heal'); c.sim.heal(); }
}
} catch (e) { console.log(String(e)); }
for (const l of c.sim.logs) if (/sbr.decision/.test(l)) console.log(l);
