// A bench's helper child process (TypeScript through tsx, an IPC channel): started until its first
// message, and stopped with SIGTERM, then SIGKILL if it lingers. Written once for every such child.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { withTimeout } from './timeout.js';

/** A started child, the first message it sent (its readiness report), and how to stop it. */
export type IpcChild<Ready> = {
  readonly child: ChildProcess;
  readonly ready: Ready;
  readonly stop: () => Promise<void>;
};

/**
 * Spawns `script` with the workspace's sources and waits (`readyTimeoutMs`, 15 s by default) for its first
 * IPC message; `name` names it in errors. A child that fails to report is stopped before the error is thrown.
 */
export async function startIpcChild<Ready>(
  script: string,
  name: string,
  env: NodeJS.ProcessEnv = {},
  readyTimeoutMs = 15_000,
): Promise<IpcChild<Ready>> {
  // Absolute loader URL, so the child does not depend on the caller's working directory.
  const tsx = import.meta.resolve('tsx');
  const child = spawn(process.execPath, ['--conditions=@doyen/source', '--import', tsx, script], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
  const stop = () => stopChild(child, name);
  try {
    const ready = await withTimeout(firstMessage<Ready>(child, name), readyTimeoutMs, `starting ${name}`);
    return { child, ready, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function firstMessage<T>(child: ChildProcess, name: string): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (msg: T) => resolve(msg));
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`${name} exited early (${code ?? signal})`)));
  });
}

async function stopChild(child: ChildProcess, name: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  try {
    await withTimeout(exited, 5_000, `stopping ${name}`);
  } catch {
    child.kill('SIGKILL');
  }
}
