import { ActorRef } from './actor-ref.js';
import { isValidPath } from './address.js';
import type { Message } from './message.js';
import type { MessageTypes } from './message-types.js';

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

const isRef = (v: unknown) => v instanceof ActorRef;

function watchShape(m: Message): string | undefined {
  const w = m as Partial<Watch>;
  if (typeof w.target !== 'string' || !isValidPath(w.target)) return 'target must be an actor path';
  if (!isRef(w.watcher)) return 'watcher must be an actor ref';
  return undefined;
}

/** The runtime's own messages, accepted from any peer once validated. */
export function registerSystemMessages(types: MessageTypes): void {
  types.register(['doyen.watch', 'doyen.unwatch'], watchShape);
  types.register('doyen.terminated', (m) => {
    const t = m as Partial<{ ref: unknown; reason: unknown }>;
    if (!isRef(t.ref)) return 'ref must be an actor ref';
    return typeof t.reason === 'string' ? undefined : 'reason must be a string';
  });
  types.register('doyen.rejected', (m) =>
    typeof (m as { target?: unknown }).target === 'string' ? undefined : 'target must be a string',
  );
}
