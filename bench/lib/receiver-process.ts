// Starts and stops the raw-ws-receiver child process; it reports its port over IPC once listening.
import { fileURLToPath } from 'node:url';
import { startIpcChild } from './ipc-child.js';

export type Receiver = { port: number; stop: () => Promise<void> };

const script = fileURLToPath(new URL('./raw-ws-receiver.ts', import.meta.url));

export async function startReceiver(): Promise<Receiver> {
  const { ready, stop } = await startIpcChild<{ port: number }>(script, 'raw-ws-receiver');
  return { port: ready.port, stop };
}
