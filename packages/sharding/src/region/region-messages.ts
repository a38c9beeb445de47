import { type ActorRef, FieldError, type Message, type MessageTypes, read, schema } from '@doyen/core';
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
 * Messages for entities on one owner, sent together: the wire's per-message work (route, type
 * lookup, the sender's membership, the schema's rebuild, the region's delivery as an actor) is
 * paid once per batch, not per message (issue 29's sharded tell). Each message is checked alone
 * by the region, so a bad one is refused alone.
 */
export interface EntityBatch {
  readonly type: 'sharding.batch';
  /** The sender's table version when the batch began (a new table flushes the batch first). */
  readonly version: number;
  /** The entity types the batch names, each once. */
  readonly entityTypes: readonly string[];
  /** Per message BATCH_SLOTS slots: entity type index, entity id, partition, hops, payload, sender or nil. */
  readonly entries: readonly unknown[];
}

/** Slots per message in `EntityBatch.entries`. */
export const BATCH_SLOTS = 6;
/**
 * Most messages in one batch: a sender's pending batch is sent when it holds this many. The
 * receiver's wire looks at its clock every 32 messages, so this bounds what it delivers between
 * two looks (2,048 entity messages, ~1 ms); 256 cost no less CPU per message than 64.
 */
export const MAX_BATCH_MESSAGES = 64;
/** Most entity types one batch names. */
export const MAX_BATCH_TYPES = 16;

/** A batch's entries: the layout only; each message's slots are checked by the region. */
const readEntries = (value: unknown, path: string): unknown[] => {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length % BATCH_SLOTS !== 0 ||
    value.length > MAX_BATCH_MESSAGES * BATCH_SLOTS
  )
    throw new FieldError(
      path,
      `must be a list of ${BATCH_SLOTS} to ${MAX_BATCH_MESSAGES * BATCH_SLOTS} slots, a multiple of ${BATCH_SLOTS}`,
    );
  return value;
};

/** The readers of `readPayload`, made once (not per payload). */
const MAX_PAYLOAD_TYPE = 256;
const readPlainPayload = read.plainData();
const readPayloadType = read.string(MAX_PAYLOAD_TYPE);

/**
 * Payloads: plain data with a string type (refs inside kept, so `replyTo` works across nodes). A
 * copy, never the decoded object: handed on as decoded (tried for speed), the counters of
 * crash-real-processes never reached their counts.
 */
export const readPayload = (value: unknown, path: string): Message => {
  const data = readPlainPayload(value, path) as Record<string, unknown> | null;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return read.object<Message>({ type: readPayloadType })(undefined, path);
  // checked here, the path built only for the error (a batch reads one payload per entry)
  const type = data.type;
  if (typeof type !== 'string' || type.length > MAX_PAYLOAD_TYPE) readPayloadType(type, `${path}.type`);
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
  types.register(
    'sharding.batch',
    schema<EntityBatch>(
      {
        version: read.count,
        entityTypes: read.list(read.string(64), MAX_BATCH_TYPES),
        entries: readEntries,
      },
      undefined,
      'member',
    ),
  );
}
