import { installSignalCleanup, ProcessCluster } from './singleton-processes.js';

installSignalCleanup();
const n = Number(process.argv[2] ?? 5);
const t0 = performance.now();
const c = await ProcessCluster.start(n);
console.log('started', n, Math.round(performance.now() - t0));
for (let i = 0; i < 2; i++) {
  const t1 = performance.now();
  const s = await c.killOldest();
  console.log(JSON.stringify(s), Math.round(performance.now() - t1));
}
await c.close();
