import { singletonSeededRuns } from './test/support/singleton-runs.ts';
const t = performance.now();
await singletonSeededRuns({ downing: 'keep-majority' }, 20000);
console.log('ms', performance.now() - t);
