import { FieldError, type Message, type MessageTypes, type Read, read, schema } from '@doyen/core';
import { MAX_PARTITION_COUNT } from '@doyen/partitions';
import type { CargoMessage, CargoSnapshot, HandOffCargo } from './keeper-host.js';

/**
 * The partition keeper's wire messages (see keeper-decisions.ts for the protocol). Each speaks
 * only for the member that sends it (`from` must be the connection's authenticated member), so
 * no member can renounce, hand off, mark or announce for another; only members may send them.
 * Partitions are bounded by MAX_PARTITION_COUNT here and by the table's count in the decisions;
 * lists and cargo are capped.
 */

/** A token's identity: created at (version, round) by that table's owner; `seq` counts hand-offs. */
export interface Stamp {
  readonly version: number;
  readonly round: number;
  readonly seq: number;
}

/** Owner without the token -> every member: where are these partitions' tokens? */
export interface TokenQuery {
  readonly type: 'sharding.token-query';
  readonly from: string;
  /** The querier's table version (it owns the partitions in it). */
  readonly version: number;
  /** The querier's round: a creation gets epoch (version, round). */
  readonly round: number;
  readonly partitions: readonly number[];
}

/**
 * Querier -> every member, when it ends its query of these partitions at (version, round) WITHOUT
 * creating their tokens (the live token reached it, or it adopted a newer table): it never creates
 * at that epoch, so the renounces it was given there bind nobody. Sent behind the query on the same
 * connection (FIFO: it never overtakes it, nor a later query's round); a lost one leaves the
 * renounce in force (slower, still safe).
 */
export interface TokenWithdraw {
  readonly type: 'sharding.token-withdraw';
  readonly from: string;
  readonly version: number;
  readonly round: number;
  readonly partitions: readonly number[];
}

/** One partition's renounce: what this member saw of the token, and its promise (by sending it). */
export interface PartitionAnswer {
  readonly partition: number;
  readonly seen: Stamp | null;
  readonly handed: { readonly to: string; readonly stamp: Stamp } | null;
  /** A token that reached this member after it renounced: void here, its cargo for the creation. */
  readonly dormant: { readonly stamp: Stamp; readonly cargo: HandOffCargo } | null;
}

/** Member -> querier. Partitions whose token it holds are left out: the hand-off is that answer. */
export interface TokenAnswer {
  readonly type: 'sharding.token-answer';
  readonly from: string;
  /** The query's version and round. */
  readonly version: number;
  readonly round: number;
  /** This member's table is newer (this version): the querier waits for it. */
  readonly newer: number | null;
  readonly answers: readonly PartitionAnswer[];
}

/** Holder -> the owner in its newest table: the token, with the partition's cargo. */
export interface HandOff {
  readonly type: 'sharding.hand-off';
  readonly from: string;
  readonly partition: number;
  readonly stamp: Stamp;
  /** The sender's table version. */
  readonly version: number;
  readonly cargo: HandOffCargo;
}

/**
 * Every node -> every member on each table adoption (and to a member new in its view), behind the
 * entity messages it sent it: "I route by this table (or a newer one) from now on", and which
 * partitions are active at the sender under it (so buffering senders flush).
 */
export interface DrainMarker {
  readonly type: 'sharding.drain-marker';
  readonly from: string;
  readonly version: number;
  readonly active: readonly number[];
}

/**
 * A stopping node -> every member, on the entity path behind every entity message it sent them
 * (its region is closed: it sends none after this). It counts as marked at every version, so a
 * drain no longer waits for the fence of an incarnation that left (issue 29: ~650 ms per restart).
 * Accepted from a non-member: the node is usually removed by the time it stops; it speaks only
 * for itself.
 */
export interface Farewell {
  readonly type: 'sharding.farewell';
  readonly from: string;
}

/** New owner -> every member: these partitions are active here at this version (flush to me). */
export interface ActiveNotice {
  readonly type: 'sharding.active';
  readonly from: string;
  readonly version: number;
  readonly partitions: readonly number[];
}

/**
 * Sender -> receiver of an unconfirmed hand-off, on the connection the hand-off took (so it comes
 * after it): "did you get this token?" A connection that resets drops what it had in flight; the
 * receipt tells the sender whether it must take the token back (a receiver that answers "not
 * received" never takes that stamp afterwards).
 */
export interface HandOffProbe {
  readonly type: 'sharding.hand-off-probe';
  readonly from: string;
  readonly partition: number;
  readonly stamp: Stamp;
  /** Which sending of the hand-off this probe follows (receipts of older ones are stale). */
  readonly attempt: number;
}

/** Receiver -> sender, on every hand-off received and every probe: whether it saw this stamp (or a later one). */
export interface HandOffReceipt {
  readonly type: 'sharding.hand-off-receipt';
  readonly from: string;
  readonly partition: number;
  readonly stamp: Stamp;
  /** The probe's attempt (0 when the receipt answers the hand-off itself). */
  readonly attempt: number;
  readonly received: boolean;
}

/**
 * A node waiting for a member's drain marker (a drain, held messages to reroute) or for an owner's
 * activation (a buffering sender) asks it, at a bounded rate, to send its marker again: a marker
 * sent NOW still comes behind everything the member sent before, so it may be re-sent at any time.
 */
export interface MarkerRequest {
  readonly type: 'sharding.marker-request';
  readonly from: string;
  /** The table version the asker waits for. */
  readonly version: number;
}

/**
 * One frame's worth of a hand-off whose cargo is over one frame (hand-off-parts.ts): parts go in
 * order on one connection and are reassembled at the receiver into the `sharding.hand-off` they
 * came from; a gap (a reset connection) discards the partial cargo, and the sender's probe finds
 * the hand-off lost (it takes the token back).
 */
export interface HandOffPart {
  readonly type: 'sharding.hand-off-part';
  readonly from: string;
  readonly partition: number;
  readonly stamp: Stamp;
  readonly version: number;
  readonly index: number;
  readonly total: number;
  readonly cargo: HandOffCargo;
}

export type KeeperMessage =
  | TokenQuery
  | TokenWithdraw
  | TokenAnswer
  | HandOff
  | DrainMarker
  | Farewell
  | ActiveNotice
  | HandOffProbe
  | HandOffReceipt
  | MarkerRequest;

/** Cargo entries per hand-off (snapshots + messages); a partition holding more is refused. */
export const MAX_CARGO_ENTRIES = 50_000;
/** Parts of one chunked hand-off (with MAX_CARGO_ENTRIES, bounds a reassembly). */
export const MAX_HAND_OFF_PARTS = 10_000;
/** Each snapshot or payload: plain data of at most this many nodes. */
const MAX_VALUE_NODES = 10_000;
const MAX_ENTITY_ID_CHARS = 256;

const partition: Read<number> = (v, path) => {
  const p = read.count(v, path);
  if (p >= MAX_PARTITION_COUNT)
    throw new FieldError(path, `must be a partition below ${MAX_PARTITION_COUNT}`);
  return p;
};
const partitions = read.list(partition, MAX_PARTITION_COUNT);
const stamp = read.object<Stamp>({ version: read.count, round: read.count, seq: read.count });
const entityType = read.string(64);
const entityId = read.string(MAX_ENTITY_ID_CHARS);

const payload: Read<Message> = (v, path) => {
  const data = read.plainData(32, MAX_VALUE_NODES)(v, path) as Record<string, unknown> | null;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return read.object<Message>({ type: read.string(256) })(undefined, path);
  read.string(256)(data.type, `${path}.type`);
  return data as unknown as Message;
};

const cargo = read.object<HandOffCargo>({
  snapshots: read.list(
    read.object<CargoSnapshot>({ entityType, entityId, snapshot: read.plainData(32, MAX_VALUE_NODES) }),
    MAX_CARGO_ENTRIES,
  ),
  forwarded: read.list(
    read.object<CargoMessage>({
      entityType,
      entityId,
      partition,
      payload,
      sender: read.optional(read.ref),
      hops: read.count,
    }),
    MAX_CARGO_ENTRIES,
  ),
});

const partIndex: Read<number> = (v, path) => {
  const n = read.count(v, path);
  if (n >= MAX_HAND_OFF_PARTS) throw new FieldError(path, `must be below ${MAX_HAND_OFF_PARTS}`);
  return n;
};
const partTotal: Read<number> = (v, path) => {
  const n = read.count(v, path);
  if (n < 1 || n > MAX_HAND_OFF_PARTS) throw new FieldError(path, `must be 1..${MAX_HAND_OFF_PARTS}`);
  return n;
};

const handed = read.nullable(read.object({ to: read.memberKey, stamp }));
const dormant = read.nullable(read.object({ stamp, cargo }));

const bySender = (m: { readonly from: string }) => [m.from];

export function registerKeeperMessages(types: MessageTypes): void {
  types.register(
    'sharding.token-query',
    schema<TokenQuery>(
      { from: read.memberKey, version: read.count, round: read.count, partitions },
      bySender,
      'member',
    ),
  );
  types.register(
    'sharding.token-withdraw',
    schema<TokenWithdraw>(
      { from: read.memberKey, version: read.count, round: read.count, partitions },
      bySender,
      'member',
    ),
  );
  types.register(
    'sharding.token-answer',
    schema<TokenAnswer>(
      {
        from: read.memberKey,
        version: read.count,
        round: read.count,
        newer: read.nullable(read.count),
        answers: read.list(
          read.object<PartitionAnswer>({ partition, seen: read.nullable(stamp), handed, dormant }),
          MAX_PARTITION_COUNT,
        ),
      },
      bySender,
      'member',
    ),
  );
  types.register(
    'sharding.hand-off',
    schema<HandOff>(
      { from: read.memberKey, partition, stamp, version: read.count, cargo },
      bySender,
      'member',
    ),
  );
  types.register(
    'sharding.drain-marker',
    schema<DrainMarker>(
      { from: read.memberKey, version: read.count, active: partitions },
      bySender,
      'member',
    ),
  );
  // from anyone: a stopping node is mostly removed already; it can only say it sends no more
  types.register('sharding.farewell', schema<Farewell>({ from: read.memberKey }, bySender, 'anyone'));
  types.register(
    'sharding.active',
    schema<ActiveNotice>({ from: read.memberKey, version: read.count, partitions }, bySender, 'member'),
  );
  types.register(
    'sharding.hand-off-probe',
    schema<HandOffProbe>({ from: read.memberKey, partition, stamp, attempt: read.count }, bySender, 'member'),
  );
  types.register(
    'sharding.hand-off-receipt',
    schema<HandOffReceipt>(
      { from: read.memberKey, partition, stamp, attempt: read.count, received: read.boolean },
      bySender,
      'member',
    ),
  );
  types.register(
    'sharding.marker-request',
    schema<MarkerRequest>({ from: read.memberKey, version: read.count }, bySender, 'member'),
  );
  types.register(
    'sharding.hand-off-part',
    schema<HandOffPart>(
      {
        from: read.memberKey,
        partition,
        stamp,
        version: read.count,
        index: partIndex,
        total: partTotal,
        cargo,
      },
      bySender,
      'member',
    ),
  );
}
