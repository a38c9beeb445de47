import type { ActorRef, Message } from '@doyen/core';

/** One message on its way to an entity, as the region keeps, buffers and forwards it. */
export interface RoutedMessage {
  readonly entityType: string;
  readonly entityId: string;
  readonly partition: number;
  readonly payload: Message;
  /** Who sent it (the entity sees it as the sender: replies to `ask` go to `payload.replyTo`). */
  readonly sender: ActorRef | undefined;
  /** How many regions forwarded it already (bounded, so a stale pair of tables cannot loop it). */
  readonly hops: number;
}
