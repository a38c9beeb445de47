import { type ActorRef, FieldError, type MessageTypes, type Read, read, schema } from '@doyen/core';
import { type PartitionTable, validateTable } from '../partition-table.js';

/** Allocator -> every member: the new table; answered with an ack. */
export interface TableMessage {
  readonly type: 'partitions.table';
  readonly table: PartitionTable;
  readonly replyTo: ActorRef;
  /** Version of the membership the allocator computed it from: a receiver judges it at that version. */
  readonly membershipVersion: number;
}

/**
 * Member -> allocator: this member adopted (or already held) the table of `version`; a version
 * past the table's is the newer one the member holds (the allocator then numbers past it).
 */
export interface TableAck {
  readonly type: 'partitions.ack';
  readonly version: number;
  readonly from: string;
}

/**
 * Member -> allocator: "compute a table in which I own nothing" (Akka's shard regions hand off
 * before cluster-leave): sent by a node about to leave, while it is still up, so its partitions
 * move away in a planned hand-off instead of being recreated after its membership ends. Re-sent
 * until the table shows it retired; a member may retire only itself.
 */
export interface RetireRequest {
  readonly type: 'partitions.retire';
  readonly from: string;
}

/** A table from the network: checked whole (its invariants span fields), then copied. */
const readTable: Read<PartitionTable> = (value, path) => {
  const problem = validateTable(value);
  if (problem !== undefined) throw new FieldError(path, problem);
  const t = value as PartitionTable;
  return {
    version: t.version,
    partitionCount: t.partitionCount,
    owners: [...t.owners],
    backups: t.backups.map((b) => [...b]),
  };
};

/**
 * At the boundary a table comes from a member (or to a joiner, which judges it once it has a
 * view); which member hosts the allocator is judged by the receiving service, at the table's
 * own membership. An ack only ends the allocator's wait for its own sender, whoever that is now.
 * A retire request comes from a member and speaks for its sender only.
 */
export function registerAllocatorMessages(types: MessageTypes): void {
  types.register(
    'partitions.table',
    schema<TableMessage>(
      { table: readTable, replyTo: read.ref, membershipVersion: read.count },
      (m) => [m.replyTo],
      'member',
    ),
  );
  types.register(
    'partitions.ack',
    schema<TableAck>({ version: read.count, from: read.memberKey }, (m) => [m.from], 'anyone'),
  );
  // a member speaks only for itself: the connection must be `from`'s
  types.register(
    'partitions.retire',
    schema<RetireRequest>({ from: read.memberKey }, (m) => [m.from], 'member'),
  );
}
