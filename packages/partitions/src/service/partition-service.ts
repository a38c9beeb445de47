import { addressOfKey, type Cluster, type Membership, memberKey, nodeOfKey, oldestOf } from '@doyen/cluster';
import { type ActorRef, type ActorSystem, type Message, RateLimitedLog } from '@doyen/core';
import { partitionOf } from '../partition-of.js';
import { countsByOwner, type PartitionTable } from '../partition-table.js';
import { registerAllocatorMessages, type TableAck, type TableMessage } from './allocator-messages.js';
import { strangerIn, tableRefusal } from './table-authority.js';

export type { TableAck, TableMessage } from './allocator-messages.js';

export const PARTITIONS_PATH = '/system/partitions';

export interface PartitionServiceOptions {
  /**
   * The member key of the node hosting the allocator singleton in `membership`, as this node
   * sees it. Default: the oldest up member (the singletons' default placement); pass the
   * singletons' placement when the allocator has a role or an elected placement.
   */
  readonly allocatorHost?: (membership: Membership) => string | undefined;
}

/** Tables held until this node's view reaches their membership, at most one per sender. */
const MAX_HELD_TABLES = 16;

const REFUSED_TOTAL = 'doyen_partitions_tables_refused_total';
const REFUSED_HELP = 'Partition tables refused: not from the allocator host, or naming non-members';

/**
 * A node's view of the partition table: adopts newer tables from the allocator (acknowledging
 * them), logs `partitions.table` on every change, and routes keys: `partitionOf(key)` (a stable
 * hash, the same on every node) → owner → a ref on the owner's node.
 */
export class PartitionService {
  private current: PartitionTable | undefined;
  private readonly listeners = new Set<(table: PartitionTable) => void>();

  private readonly allocatorHost: (membership: Membership) => string | undefined;
  /** Sender key -> the latest table it sent that this node's view has not caught up with. */
  private readonly held = new Map<string, TableMessage>();
  private readonly refusedLog: RateLimitedLog;

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    readonly partitionCount: number,
    options: PartitionServiceOptions = {},
  ) {
    this.refusedLog = new RateLimitedLog(system.logger, () => system.clock.now(), 5);
    this.allocatorHost =
      options.allocatorHost ??
      ((m) => {
        const oldest = oldestOf(m.members);
        return oldest && memberKey(oldest);
      });
    // a table is judged here, at its own membership: see `judge`
    registerAllocatorMessages(system.messageTypes);
    system.functionRef(PARTITIONS_PATH.split('/')[2]!, (message) => this.onMessage(message), 'system');
    // A table can overtake the membership update it was computed from (they are handled by
    // different actors): it waits until this node's view reaches that version, then is judged.
    cluster.subscribeMembership((m) => this.judgeHeld(m));
  }

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

  /** The member key of the node hosting the allocator in `membership`, as this node sees it. */
  allocatorHostIn(membership: Membership): string | undefined {
    return this.allocatorHost(membership);
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
    const view = this.cluster.state().membership;
    if (view && view.version >= m.membershipVersion) this.judge(m, view);
    else this.hold(m);
  }

  /** Never ahead of the membership that produced it: kept until our view reaches it. */
  private hold(m: TableMessage): void {
    const sender = memberKey(m.replyTo.address.node);
    // a sender's latest table replaces its earlier one (its tables arrive in the order it sent
    // them): a high version it held must not shadow the next real one
    if (!this.held.has(sender) && this.held.size >= MAX_HELD_TABLES) return;
    this.held.set(sender, m);
  }

  private judgeHeld(view: Membership): void {
    for (const [sender, m] of this.held) {
      if (!view.members.some((x) => memberKey(x) === sender)) this.held.delete(sender);
      else if (view.version >= m.membershipVersion) {
        this.held.delete(sender);
        this.judge(m, view);
      }
    }
  }

  /** Adopted only when `tableRefusal` finds nothing: from the allocator's host, naming members. */
  private judge(m: TableMessage, view: Membership): void {
    const sender = memberKey(m.replyTo.address.node);
    const host = this.allocatorHost(view);
    const reason = tableRefusal(m.table, sender, view, host);
    if (reason === undefined) {
      this.accept(m);
      return;
    }
    this.system.metrics.inc(REFUSED_TOTAL, REFUSED_HELP, { reason });
    const stranger =
      reason === 'unknown-owner' ? strangerIn(m.table, new Set(view.members.map(memberKey))) : undefined;
    this.refusedLog.warn(
      `table-refused:${reason}`,
      {
        event: 'partitions.table-refused',
        reason,
        sender,
        host,
        version: m.table.version,
        ...(stranger !== undefined ? { owner: stranger.slice(0, 300) } : {}),
      },
      `partition table v${m.table.version} from ${sender} refused: ${reason}`,
    );
  }

  private accept(m: TableMessage): void {
    this.adopt(m.table);
    // the version this node holds, if past the table's: an allocator whose lineage restarted
    // behind the cluster (every member that may host it a new incarnation) numbers past it
    const version = Math.max(m.table.version, this.current?.version ?? 0);
    const ack: TableAck = { type: 'partitions.ack', version, from: this.cluster.self.key };
    m.replyTo.send(ack);
  }
}
