import { type ActorRef, type Message, type MessageTypes, read, schema } from '@doyen/core';
import { MAX_ENTITY_ID_BYTES } from '../entity-type.js';

/** Where each node's region takes envelopes: on the user lane, like the app's own messages. */
export const REGION_NAME = 'sharding-region';
export const REGION_PATH = `/user/${REGION_NAME}`;

/** A message for one entity, sent to the region of the partition's owner in the sender's table. */
export interface EntityEnvelope {
  readonly type: 'sharding.envelope';
  readonly entityType: string;
  readonly entityId: string;
  readonly partition: number;
  /** The sender's table version: a region with a newer table forwards, never the other way. */
  readonly version: number;
  /** Regions that forwarded it so far (over MAX_HOPS it is dropped: no loops). */
  readonly hops: number;
  readonly payload: Message;
  /** The original sender, as the entity sees it. */
  readonly sender?: ActorRef;
}

/** A region forwards a message at most this many times before dead-lettering it. */
export const MAX_HOPS = 3;

/**
 * Payloads: plain data with a string type (refs inside kept, so `replyTo` works across nodes). A
 * copy, never the decoded object: handed on as decoded (tried for speed), the counters of
 * crash-real-processes never reached their counts.
 */
const readPayload = (value: unknown, path: string): Message => {
  const data = read.plainData()(value, path) as Record<string, unknown> | null;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return read.object<Message>({ type: read.string(256) })(undefined, path);
  read.string(256)(data.type, `${path}.type`);
  return data as unknown as Message;
};

/**
 * Any member may send envelopes (every node routes); what one names is checked by the region
 * (type registered, id within bounds, message registered), which dead-letters with a reason.
 * An envelope speaks for no one: the payload's own refs are the app's business, as with a
 * message sent to any actor.
 */
export function registerRegionMessages(types: MessageTypes): void {
  types.register(
    'sharding.envelope',
    schema<EntityEnvelope>(
      {
        entityType: read.string(64),
        // characters, not bytes: the region checks the UTF-8 length
        entityId: read.string(MAX_ENTITY_ID_BYTES),
        partition: read.count,
        version: read.count,
        hops: read.count,
        payload: readPayload,
        sender: read.optional(read.ref),
      },
      undefined,
      'member',
    ),
  );
}
