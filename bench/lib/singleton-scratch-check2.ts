import { LocalCluster } from './singleton-inprocess.js';
const n = Number(process.argv[2] ?? 5);
const t0 = performance.now();
const c = await LocalCluster.start(n);
console.log('started', n, Math.round(performance.now() - t0));
for (let i = 0; i < 3; i++) {
  const t1 = performance.now();
  const s = await c.handOver();
  console.log(JSON.stringify(s), Math.round(performance.now() - t1));
}
const j = await c.join();
console.log(JSON.stringify(j));
const l = await c.leave(c.byAge()[2]!);
console.log(JSON.stringify(l));
await c.close();
