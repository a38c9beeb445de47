import { addressOfKey, type Cluster, memberKey, nodeOfKey } from '@doyen/cluster';
import {
  type ActorRef,
  type ActorSystem,
  FieldError,
  type Message,
  type Read,
  read,
  schema,
} from '@doyen/core';
import { partitionOf } from '../partition-of.js';
import { countsByOwner, type PartitionTable, validateTable } from '../partition-table.js';

export const PARTITIONS_PATH = '/system/partitions';

/** Allocator -> every member: the new table; answered with an ack. */
export interface TableMessage {
  readonly type: 'partitions.table';
  readonly table: PartitionTable;
  readonly replyTo: ActorRef;
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

export interface TableAck {
  readonly type: 'partitions.ack';
  readonly version: number;
  readonly from: string;
}

/**
 * A node's view of the partition table: adopts newer tables from the allocator (acknowledging
 * them), logs `partitions.table` on every change, and routes keys: `partitionOf(key)` (a stable
 * hash, the same on every node) → owner → a ref on the owner's node.
 */
export class PartitionService {
  private current: PartitionTable | undefined;
  private readonly listeners = new Set<(table: PartitionTable) => void>();

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    readonly partitionCount: number,
  ) {
    system.messageTypes.register(
      'partitions.table',
      schema<TableMessage>({ table: readTable, replyTo: read.ref }, (m) => [m.replyTo]),
    );
    system.messageTypes.register(
      'partitions.ack',
      schema<TableAck>({ version: read.count, from: read.memberKey }, (m) => [m.from]),
    );
    system.functionRef(PARTITIONS_PATH.split('/')[2]!, (message) => this.onMessage(message), 'system');
    // A table can overtake the membership update that introduces its sender (they are handled
    // by different actors): keep it until the membership catches up.
    cluster.subscribeMembership(() => {
      const pending = this.pending;
      if (pending && this.fromMember(pending)) {
        this.pending = undefined;
        this.accept(pending);
      }
    });
  }

  private pending: TableMessage | undefined;

  /** The latest table this node knows (undefined before the first one arrives). */
  table(): PartitionTable | undefined {
    return this.current;
  }

  subscribe(listener: (table: PartitionTable) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  partitionOf(key: string | Uint8Array): number {
    return partitionOf(key, this.partitionCount);
  }

  /** Member key (`host:port#uid`) owning `key`'s partition, if the table assigns one. */
  ownerOf(key: string | Uint8Array): string | undefined {
    const owner = this.current?.owners[this.partitionOf(key)];
    return owner ? owner : undefined;
  }

  /** A ref to `path` on the node owning `key`: send to it to reach the key's owner. */
  refFor<M extends Message = Message>(key: string | Uint8Array, path: string): ActorRef<M> | undefined {
    const owner = this.ownerOf(key);
    if (!owner) return undefined;
    return this.system.remoteRef<M>(nodeOfKey(owner), path);
  }

  /** Adopts a table created on this node (the allocator runs here). */
  adopt(table: PartitionTable): boolean {
    if (this.current && table.version <= this.current.version) return false;
    if (table.partitionCount !== this.partitionCount) {
      this.system.logger.warn(
        { event: 'partitions.mismatch', theirs: table.partitionCount, ours: this.partitionCount },
        'partition table with another partition count ignored',
      );
      return false;
    }
    this.current = table;
    const counts = Object.fromEntries(
      [...countsByOwner(table)].map(([owner, n]) => [addressOfKey(owner) || '(none)', n]),
    );
    this.system.logger.info(
      { event: 'partitions.table', version: table.version, partitionCount: table.partitionCount, counts },
      `partition table v${table.version}`,
    );
    for (const l of this.listeners) l(table);
    return true;
  }

  private onMessage(message: Message): void {
    if (message.type !== 'partitions.table') return;
    const m = message as unknown as TableMessage;
    // only from a member of our own cluster (the allocator runs on its oldest)
    if (this.fromMember(m)) this.accept(m);
    else if (!this.pending || this.pending.table.version < m.table.version) this.pending = m;
  }

  private fromMember(m: TableMessage): boolean {
    const sender = memberKey(m.replyTo.address.node);
    return (this.cluster.state().membership?.members ?? []).some((x) => memberKey(x) === sender);
  }

  private accept(m: TableMessage): void {
    this.adopt(m.table);
    const ack: TableAck = { type: 'partitions.ack', version: m.table.version, from: this.cluster.self.key };
    m.replyTo.send(ack);
  }
}
