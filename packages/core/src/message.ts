import type { ActorRef } from './actor-ref.js';

/** Every message is a plain object with a `type` discriminant, namespaced by protocol (`membership.join`). */
export interface Message {
  readonly type: string;
}

/** Delivered to a watcher when a watched actor stops, fails for good, or its node is gone. */
export interface Terminated {
  readonly type: 'doyen.terminated';
  readonly ref: ActorRef;
  readonly reason: TerminationReason;
}

export type TerminationReason = 'stopped' | 'failed' | 'node-unreachable' | 'node-removed' | 'not-found';

/** Sent back to a known sender when the target's mailbox rejected its message. */
export interface Rejected {
  readonly type: 'doyen.rejected';
  readonly target: string;
  readonly reason: 'mailbox-full';
  readonly messageType: string;
}

export function isMessage(value: unknown): value is Message {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { type?: unknown }).type === 'string'
  );
}
