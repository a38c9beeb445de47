// RSS of a fresh process after 1M tells to one `createMachine` counter, doyen beside bare xstate
// (see machine-memory-child.ts): what each retains after the run.
import { fileURLToPath } from 'node:url';
import { startIpcChild } from './ipc-child.js';
import type { MachineMemoryReady } from './machine-memory-child.js';

const script = fileURLToPath(new URL('./machine-memory-child.ts', import.meta.url));

export async function machineRunMemory(
  side: 'doyen' | 'xstate',
  messages: number,
): Promise<MachineMemoryReady> {
  const { ready, stop } = await startIpcChild<MachineMemoryReady>(
    script,
    `machine-memory-child (${side})`,
    { DOYEN_BENCH_MEMORY_SIDE: side, DOYEN_BENCH_MEMORY_MESSAGES: String(messages) },
    120_000,
  );
  await stop();
  return ready;
}
