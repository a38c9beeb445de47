import type { ActorRef } from './actor-ref.js';
import { parseActorAddress } from './address.js';
import { read, schema } from './message-schema.js';
import type { MessageTypes } from './message-types.js';

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

/** Asks the node hosting `target` to tell `watcher` when it terminates. */
export interface Watch {
  readonly type: 'doyen.watch';
  readonly target: string;
  readonly watcher: ActorRef;
}

export interface Unwatch {
  readonly type: 'doyen.unwatch';
  readonly target: string;
  readonly watcher: ActorRef;
}

/**
 * The runtime's own messages, rebuilt from their fields; each speaks only for its own node. Any
 * connected node may send them (`anyone`): any node may hold a ref to an actor here and watch
 * it, in a cluster or not (per-peer caps bound what that costs).
 */
export function registerSystemMessages(types: MessageTypes): void {
  const watch = { target: read.path, watcher: read.ref };
  types.register(
    'doyen.watch',
    schema<Watch>(watch, (m) => [m.watcher], 'anyone'),
  );
  types.register(
    'doyen.unwatch',
    schema<Unwatch>(watch, (m) => [m.watcher], 'anyone'),
  );
  types.register(
    'doyen.terminated',
    schema<Terminated>(
      {
        ref: read.ref,
        reason: read.oneOf('stopped', 'failed', 'node-unreachable', 'node-removed', 'not-found'),
      },
      (m) => [m.ref],
      'anyone',
    ),
  );
  types.register(
    'doyen.rejected',
    schema<Rejected>(
      { target: read.actorAddress, reason: read.oneOf('mailbox-full'), messageType: read.string(256) },
      (m) => [parseActorAddress(m.target).node],
      'anyone',
    ),
  );
}
