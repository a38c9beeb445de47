// What the messaging bench's two doyen nodes say to each other, over the wire and over the IPC channel.
import type { ActorRef } from './doyen.js';

export const BENCH_CLUSTER = 'bench';
/** Only ever on 127.0.0.1; set so the handshake does its HMAC work as in production. */
export const BENCH_SECRET = 'bench-secret';

/** Parent -> child `/user/counter`: `n` counts up from 0 in each phase, so the child can see a gap. */
export type Inc = { type: 'bench.inc'; n: number };
/** Parent -> child `/user/echo` or `/user/echo-actor`, answered with a `Pong` of the same `n`. */
export type Ping = { type: 'bench.ping'; n: number; replyTo: ActorRef<Pong> };
export type Pong = { type: 'bench.pong'; n: number };
/** Parent -> child `/system/hb` every 10 ms; `sentUs` is `nowUs()` in the parent. */
export type Heartbeat = { type: 'bench.hb'; seq: number; sentUs: number };

export const CHILD_MESSAGE_TYPES = ['bench.inc', 'bench.ping', 'bench.hb'] as const;
export const PARENT_MESSAGE_TYPES = ['bench.pong'] as const;

/**
 * Microseconds on CLOCK_MONOTONIC, which on Linux is one clock for every process on the machine, so a
 * timestamp taken in one process can be subtracted from one taken in another. (`performance.timeOrigin`
 * is sampled once per process from the wall clock, which can put two processes a fraction of a ms apart.)
 */
export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Parent -> child over IPC. Every request gets exactly one reply with the same `id`. */
export type ChildRequest =
  /** Forget counts and heartbeats: the next phase starts at `n` 0. `watchLoop` samples event-loop delay. */
  | { id: number; cmd: 'reset'; watchLoop: boolean }
  /** Reply once `/user/counter` has counted `n` messages since the last reset. */
  | { id: number; cmd: 'await-count'; n: number }
  /** Reply with the heartbeat delays once `n` heartbeats have arrived since the last reset. */
  | { id: number; cmd: 'await-heartbeats'; n: number };

export type CountReply = {
  id: number;
  count: number;
  /** Messages whose `n` was not the one expected next: a drop, duplicate or reordering. */
  outOfOrder: number;
  deadLetters: number;
  rejected: number;
};
export type HeartbeatReply = {
  id: number;
  delaysUs: number[];
  /** p99 of the child's event-loop delay since the reset, ms (NaN unless `watchLoop` was set). */
  loopDelayP99Ms: number;
};
export type ChildReply = { id: number } | CountReply | HeartbeatReply;

/** The child's first IPC message, once its node is listening. */
export type ChildReady = {
  ready: true;
  counter: string;
  /** A function actor: handled synchronously, straight from the wire. */
  echo: string;
  /** An xstate actor: its reply goes through its mailbox and the dispatcher first. */
  echoActor: string;
  heartbeat: string;
};
