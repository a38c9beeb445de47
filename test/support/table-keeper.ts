// An in-process stand-in for the partition keeper, for the sharding runtime's tests: partitions
// are activated by the table alone (no owner lease, no tokens: NOT safe across processes) and
// handed off between regions of the same test process by direct calls, in the keeper's order
// (senders buffer, the old owner drains, the cargo goes to the new owner, it activates, senders
// flush). It drives the runtime through the same KeeperHost calls the real keeper makes.
import type { PartitionService, PartitionTable } from '../../packages/partitions/src/index.js';
import type { KeeperHost, KeeperInbox } from '../../packages/sharding/src/index.js';

interface Keeper {
  readonly host: KeeperHost;
  readonly selfKey: string;
  table: PartitionTable | undefined;
  readonly active: Set<number>;
  /** Cargo that arrived before this node adopted the table making it the owner. */
  readonly pending: Map<number, ReturnType<KeeperHost['takeCargo']>>;
}

/** The keepers of one test's nodes: what each node knows about the others' partitions. */
export class TableKeepers {
  private readonly keepers = new Map<string, Keeper>();
  /** Partitions being drained somewhere: the new owner waits for their cargo. */
  private readonly moving = new Set<number>();

  /** `Sharding`'s `startKeeper` for the node `selfKey` whose tables come from `partitions`. */
  starter(selfKey: string, partitions: PartitionService): (host: KeeperHost) => KeeperInbox {
    return (host) => {
      const keeper: Keeper = { host, selfKey, table: undefined, active: new Set(), pending: new Map() };
      this.keepers.set(selfKey, keeper);
      const onTable = (t: PartitionTable) => this.adopt(keeper, t);
      const unsubscribe = partitions.subscribe(onTable);
      const first = partitions.table();
      if (first) queueMicrotask(() => this.adopt(keeper, first));
      return {
        regionDrained: (p) => this.drained(keeper, p),
        received: () => {},
        isActive: (p) => keeper.active.has(p),
        activePartitions: () => [...keeper.active].sort((a, b) => a - b),
        stop: () => {
          unsubscribe();
          this.keepers.delete(selfKey);
        },
      };
    };
  }

  private adopt(k: Keeper, table: PartitionTable): void {
    if (k.table && table.version <= k.table.version) return;
    const previous = k.table;
    k.table = table;
    table.owners.forEach((owner, p) => {
      const before = previous?.owners[p];
      if (k.active.has(p) && owner !== k.selfKey) {
        k.active.delete(p);
        this.moving.add(p);
        k.host.startBuffering(p);
        k.host.drain(p);
        return;
      }
      // held here as its owner-to-be, and p moved on before it activated: send them on
      if (before === k.selfKey && owner !== k.selfKey) k.host.reroute(p);
      // a sender holds p's messages until the new owner activates it (unless it already has)
      const activeAtOwner = this.keepers.get(owner)?.active.has(p) ?? false;
      if (before !== undefined && before !== owner && owner !== k.selfKey && !activeAtOwner)
        k.host.startBuffering(p);
      if (owner !== k.selfKey || k.active.has(p)) return;
      const cargo = k.pending.get(p);
      if (cargo) {
        k.pending.delete(p);
        this.activate(k, p, cargo);
      } else if (!this.moving.has(p) && ![...this.keepers.values()].some((o) => o.active.has(p)))
        this.activate(k, p, { snapshots: [], forwarded: [] });
    });
  }

  private drained(from: Keeper, p: number): void {
    const cargo = from.host.takeCargo(p);
    const ownerKey = from.table?.owners[p];
    const owner = ownerKey ? this.keepers.get(ownerKey) : undefined;
    if (!owner) return;
    if (
      owner.table &&
      owner.table.version >= (from.table?.version ?? 0) &&
      owner.table.owners[p] === ownerKey
    )
      this.activate(owner, p, cargo);
    else owner.pending.set(p, cargo);
  }

  private activate(k: Keeper, p: number, cargo: ReturnType<KeeperHost['takeCargo']>): void {
    this.moving.delete(p);
    k.active.add(p);
    k.host.activate(p, k.table?.version ?? 0, cargo);
    for (const other of this.keepers.values()) if (other !== k) other.host.flush(p, k.selfKey);
  }
}
