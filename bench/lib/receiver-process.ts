// Starts and stops the raw-ws-receiver child process; it reports its port over IPC once listening.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { withTimeout } from './timeout.js';

export type Receiver = { port: number; stop: () => Promise<void> };

const script = fileURLToPath(new URL('./raw-ws-receiver.ts', import.meta.url));

export async function startReceiver(): Promise<Receiver> {
  // Absolute loader URL, so the child does not depend on the caller's working directory.
  const tsx = import.meta.resolve('tsx');
  const child = spawn(process.execPath, ['--conditions=@doyen/source', '--import', tsx, script], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const stop = () => stopChild(child);
  try {
    const port = await withTimeout(portOf(child), 15_000, 'starting raw-ws-receiver');
    return { port, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function portOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('message', (msg: { port: number }) => resolve(msg.port));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`raw-ws-receiver exited early (${code ?? signal})`)),
    );
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  try {
    await withTimeout(exited, 5_000, 'stopping raw-ws-receiver');
  } catch {
    child.kill('SIGKILL');
  }
}
