import { type ActorRef, ActorRef as ActorRefClass, type Message } from '@doyen/core';
import { BATCH_SLOTS, type EntityBatch, MAX_BATCH_MESSAGES, MAX_BATCH_TYPES } from './region-messages.js';

/**
 * A batch's estimated encoded size beyond which it is sent at once: far below any frame limit,
 * so a batch is never refused as too large where its messages alone would have passed.
 */
const BATCH_BYTES = 16 * 1024;
/** A payload estimated larger than this goes alone (as an envelope), never in a batch. */
const MAX_BATCHED_PAYLOAD_BYTES = 2 * 1024;
/** A batchable payload has at most this many fields. */
const MAX_BATCHED_FIELDS = 32;

interface Pending {
  readonly version: number;
  readonly entityTypes: string[];
  /** Made at the size the last batch reached (see `lastSlots`), trimmed to `used` when sent. */
  readonly entries: unknown[];
  used: number;
  bytes: number;
}

/**
 * The region's outgoing messages per owner, sent as one `sharding.batch` at the end of the
 * current task (a microtask: no added latency), or at once when full (bounded by count and
 * estimated bytes). Only flat payloads (primitive fields, refs, short strings) are batched, so a
 * batch always encodes and fits a frame; any other payload is the caller's to send alone, after
 * `flush(owner)` so it keeps its place behind the batched ones. Whatever else the region sends
 * to an owner's region (a drain marker, a lone envelope) must flush that owner first: a batch
 * and the region's other messages then leave in the order they were sent.
 */
export class EntityBatches {
  private readonly pending = new Map<string, Pending>();
  private scheduled = false;
  /**
   * Slots the last batch sent held: the next one's entries are made that long. Grown by a push
   * per message, a batch of 64 copied its entries seven times on the way: ~28 of the ~90 ns a
   * sharded tell cost its sender before the wire (issue 29, session 39). A batch made too long is
   * trimmed when sent; one bigger than the last grows as before.
   */
  private lastSlots = BATCH_SLOTS;

  constructor(
    private readonly send: (ownerKey: string, batch: EntityBatch) => void,
    private readonly version: () => number,
  ) {}

  /** Adds a message to `ownerKey`'s batch; false when its payload cannot be batched (nothing added). */
  add(
    ownerKey: string,
    entityType: string,
    entityId: string,
    partition: number,
    hops: number,
    payload: Message,
    sender: ActorRef | undefined,
  ): boolean {
    const bytes = batchedSize(payload);
    if (bytes < 0) return false;
    const version = this.version();
    let batch = this.pending.get(ownerKey);
    if (batch !== undefined && batch.version !== version) {
      this.flush(ownerKey);
      batch = undefined;
    }
    let typeIndex = batch === undefined ? -1 : batch.entityTypes.indexOf(entityType);
    if (batch !== undefined && typeIndex < 0 && batch.entityTypes.length >= MAX_BATCH_TYPES) {
      this.flush(ownerKey);
      batch = undefined;
    }
    if (batch === undefined) {
      batch = { version, entityTypes: [], entries: new Array(this.lastSlots), used: 0, bytes: 0 };
      this.pending.set(ownerKey, batch);
      this.schedule();
    }
    if (typeIndex < 0) typeIndex = batch.entityTypes.push(entityType) - 1;
    const entries = batch.entries;
    const at = batch.used;
    // within the made length a write is a store; beyond it (a bigger batch than the last) it grows
    entries[at] = typeIndex;
    entries[at + 1] = entityId;
    entries[at + 2] = partition;
    entries[at + 3] = hops;
    entries[at + 4] = payload;
    entries[at + 5] = sender ?? null;
    batch.used = at + BATCH_SLOTS;
    batch.bytes += bytes + 3 * entityId.length + 16 + (sender ? 3 * sender.id.length : 0);
    if (batch.used >= MAX_BATCH_MESSAGES * BATCH_SLOTS || batch.bytes >= BATCH_BYTES) this.flush(ownerKey);
    return true;
  }

  /** Sends `ownerKey`'s pending batch now, if any. */
  flush(ownerKey: string): void {
    const batch = this.pending.get(ownerKey);
    if (batch === undefined) return;
    this.pending.delete(ownerKey);
    const entries = batch.entries;
    // a smaller batch than the last: no empty slots may travel
    if (entries.length !== batch.used) entries.length = batch.used;
    this.lastSlots = batch.used;
    this.send(ownerKey, {
      type: 'sharding.batch',
      version: batch.version,
      entityTypes: batch.entityTypes,
      entries,
    });
  }

  /** Sends every pending batch now (before a new table, at close). */
  flushAll(): void {
    for (const ownerKey of [...this.pending.keys()]) this.flush(ownerKey);
  }

  /** Messages pending now (tests). */
  get size(): number {
    let n = 0;
    for (const b of this.pending.values()) n += b.used / BATCH_SLOTS;
    return n;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(this.runFlush);
  }

  private readonly runFlush = (): void => {
    this.scheduled = false;
    this.flushAll();
  };
}

/**
 * A payload's estimated encoded size when it may ride in a batch, else -1: a plain object of at
 * most MAX_BATCHED_FIELDS fields, each a string, number, boolean, nil or actor ref, small in all
 * (estimates err high: 3 bytes per UTF-16 unit). Such a payload always encodes, so one message
 * can never make its batch unsendable.
 */
export function batchedSize(payload: Message): number {
  if (Object.getPrototypeOf(payload) !== Object.prototype) return -1;
  let bytes = 2;
  let fields = 0;
  for (const key in payload) {
    if (++fields > MAX_BATCHED_FIELDS) return -1;
    const value: unknown = (payload as unknown as Record<string, unknown>)[key];
    bytes += 3 * key.length + 2;
    switch (typeof value) {
      case 'string':
        bytes += 3 * value.length + 5;
        break;
      case 'number':
      case 'boolean':
      case 'undefined':
        bytes += 9;
        break;
      case 'object':
        if (value === null) bytes += 1;
        else if (value instanceof ActorRefClass) bytes += 3 * value.id.length + 8;
        else return -1;
        break;
      default:
        return -1;
    }
    if (bytes > MAX_BATCHED_PAYLOAD_BYTES) return -1;
  }
  return bytes;
}
