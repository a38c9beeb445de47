// Starts and stops the doyen-node-process child, and sends it requests over IPC.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildReady, ChildReply, CountReply, HeartbeatReply } from './bench-messages.js';
import { startIpcChild } from './ipc-child.js';
import { withTimeout } from './timeout.js';

type RequestBody =
  | { cmd: 'reset'; watchLoop: boolean }
  | { cmd: 'await-count'; n: number }
  | { cmd: 'await-heartbeats'; n: number };

export type DoyenPeer = {
  /** Actor addresses in the child, for `system.refFor`. */
  readonly addresses: Omit<ChildReady, 'ready'>;
  /** Starts a phase: counts and heartbeats from zero; `watchLoop` samples the child's event-loop delay. */
  reset(watchLoop?: boolean): Promise<void>;
  /** Resolves once the child's counter has counted `n` since the last reset. */
  awaitCount(n: number, timeoutMs: number): Promise<CountReply>;
  /** Resolves with the heartbeat delays (µs) once `n` heartbeats arrived since the last reset. */
  awaitHeartbeats(n: number, timeoutMs: number): Promise<Omit<HeartbeatReply, 'id'>>;
  stop(): Promise<void>;
};

const script = fileURLToPath(new URL('./doyen-node-process.ts', import.meta.url));

export async function startDoyenPeer(env: NodeJS.ProcessEnv = {}): Promise<DoyenPeer> {
  const { child, ready, stop } = await startIpcChild<ChildReady>(script, 'doyen-node-process', env);
  return peer(child, ready, stop);
}

function peer(child: ChildProcess, ready: ChildReady, stop: () => Promise<void>): DoyenPeer {
  const pending = new Map<number, { resolve: (reply: ChildReply) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  child.on('message', (reply: ChildReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    waiter?.resolve(reply);
  });
  child.on('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`doyen child exited (${code ?? signal})`));
    pending.clear();
  });
  const request = <R extends ChildReply>(body: RequestBody, timeoutMs: number, what: string): Promise<R> => {
    const id = nextId++;
    const replied = new Promise<ChildReply>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ id, ...body });
    });
    return withTimeout(replied, timeoutMs, what).finally(() => pending.delete(id)) as Promise<R>;
  };
  const { ready: _, ...addresses } = ready;
  return {
    addresses,
    reset: async (watchLoop = false) => {
      await request({ cmd: 'reset', watchLoop }, 5_000, 'resetting the doyen child');
    },
    awaitCount: (n, timeoutMs) =>
      request<CountReply>({ cmd: 'await-count', n }, timeoutMs, `waiting for ${n} messages in the child`),
    awaitHeartbeats: async (n, timeoutMs) => {
      const { id: _id, ...reply } = await request<HeartbeatReply>(
        { cmd: 'await-heartbeats', n },
        timeoutMs,
        `waiting for ${n} heartbeats in the child`,
      );
      return reply;
    },
    stop,
  };
}
