/**
 * Heartbeat traffic at scale on the simulated network: N members (ring, K = 9), idle for 5 s of
 * simulated time once all are up; counts heartbeat.ping/pong frames sent. Prints one JSON line.
 * Run: SIZES=100,250 node --import tsx --conditions=@doyen/source test/cluster/heartbeat-rate.measure.ts
 */
import { SimCluster } from '../support/sim-cluster.js';

const sizes = (process.env.SIZES ?? '100,250').split(',').map(Number);
const results: Record<string, number> = {};
for (const n of sizes) {
  const c = new SimCluster(
    { seed: n },
    { downing: 'keep-majority', joinTimeoutMs: 5000, maxJoinAttempts: 50 },
  );
  const names = Array.from({ length: n }, (_, i) => `m${i + 1}`);
  for (const name of names) {
    c.start(name, ['m1']);
    await c.sim.runFor(20);
  }
  await c.sim.runUntil(() => names.every((x) => c.get(x).cluster.state().status === 'up'), {
    timeoutMs: 600_000,
    stepMs: 100,
  });
  await c.sim.runUntil(() => c.upMembers('m1').length === n, { timeoutMs: 600_000, stepMs: 100 });
  await c.sim.runFor(2000);
  let frames = 0;
  const stop = c.sim.network.observe((e) => {
    if (e.kind === 'send' && e.messageType.startsWith('heartbeat.')) frames++;
  });
  const idleMs = 5000;
  await c.sim.runFor(idleMs);
  stop();
  results[`heartbeatFramesPerNodePerSecond@${n}`] = +(frames / n / (idleMs / 1000)).toFixed(1);
  c.sim.shutdown();
}
console.log(JSON.stringify(results));
