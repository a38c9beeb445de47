// Starts and stops the raw-ws-receiver child process; it reports its port over IPC once listening.
import { fileURLToPath } from 'node:url';
import { startIpcChild } from './ipc-child.js';

export type Receiver = { port: number; stop: () => Promise<void> };

const script = fileURLToPath(new URL('./raw-ws-receiver.ts', import.meta.url));

/** `env` configures the child, e.g. `tlsEnv(...)` for a `wss` receiver with mutual TLS. */
export async function startReceiver(env: NodeJS.ProcessEnv = {}): Promise<Receiver> {
  const { ready, stop } = await startIpcChild<{ port: number }>(script, 'raw-ws-receiver', env);
  return { port: ready.port, stop };
}
