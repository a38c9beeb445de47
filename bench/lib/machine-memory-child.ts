// Child process for the messaging bench's memory figure: a fresh process runs 1M tells to one
// `createMachine` counter (doyen: `ref.send`; bare xstate: `actor.send`), then collects garbage and
// reports its resident set size, so what each side retains after a run is measured apart from the bench.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { doyenMachineTellRate } from './doyen-local.js';
import { bareXstateMachineSendRate } from './xstate-baselines.js';

export type MachineMemoryReady = { rssBytes: number; heapUsedBytes: number; msgsPerSec: number };

if (!process.send) {
  console.error('machine-memory-child reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const side = process.env.DOYEN_BENCH_MEMORY_SIDE;
const messages = Number(process.env.DOYEN_BENCH_MEMORY_MESSAGES ?? 1_000_000);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const msgsPerSec =
  side === 'doyen'
    ? await doyenMachineTellRate(messages)
    : side === 'xstate'
      ? await bareXstateMachineSendRate(messages)
      : Number.NaN;
if (Number.isNaN(msgsPerSec)) {
  console.error(`DOYEN_BENCH_MEMORY_SIDE must be doyen or xstate, not ${side}`);
  process.exit(2);
}
// what the run left behind, not its garbage
gc();
await new Promise((resolve) => setTimeout(resolve, 50));
gc();
const { rss, heapUsed } = process.memoryUsage();
process.send({ rssBytes: rss, heapUsedBytes: heapUsed, msgsPerSec } satisfies MachineMemoryReady);
process.on('disconnect', () => process.exit(0));
