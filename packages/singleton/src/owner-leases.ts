import type { Cluster } from '@doyen/cluster';
import { type ActorSystem, nodeKey } from '@doyen/core';
import type { OwnLease, Placement } from './host-lease/host-lease-decisions.js';
import { type HostLeaseNode, hostLeaseNodeOf } from './host-lease/host-lease-node.js';
import type { HostLeaseSettings } from './host-lease/host-lease-settings.js';

/**
 * One node's OWNER LEASE and its fences of other members' (the one fencing rule for singletons
 * and partitions, issue 29): the scope `owner:<this node's key>` on the host lease's voters and
 * decisions (host-lease-decisions.ts), granted to this node alone. A node runs entities only
 * while `holdsOwn()`; a node taking over partitions of a member that is unreachable, downed or
 * removed waits for `isFenced(key)`: a majority of voters refused that member its owner scope
 * for good after their promises to it ran out, and the pause bound passed since, so it stopped
 * acting before. Works in every coordinator mode: the voters are the members, on the node's one
 * host-lease actor (shared with the leased singleton placement; the same timing settings).
 */
export class OwnerLeases {
  readonly selfKey: string;
  private readonly lease: HostLeaseNode;
  private placement: Placement;
  private own: OwnLease;
  private fenced: ReadonlySet<string>;
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: () => void;
  /** What listeners were last told: they are called when any of it changes. */
  private told = { held: false, fenced: 0, ownerFenced: false };

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    settings: HostLeaseSettings = {},
  ) {
    this.selfKey = nodeKey(system.node);
    this.lease = hostLeaseNodeOf(system, cluster, settings);
    this.placement = this.lease.placement();
    this.own = this.lease.ownLease();
    this.fenced = new Set(this.placement.fenced ?? []);
    // the placement reports the mandate's changes (at readyAt, at the lease end), the own-lease
    // effect every renewal: either may change what holdsOwn() says
    const unsubscribePlacement = this.lease.subscribe((placement) => {
      this.placement = placement;
      // monotonic: a fence once complete stays, whatever the reports say later
      const grown = (placement.fenced ?? []).filter((k) => !this.fenced.has(k));
      if (grown.length > 0) this.fenced = new Set([...this.fenced, ...grown]);
      this.changed();
    });
    const unsubscribeOwn = this.lease.subscribeOwn((own) => {
      this.own = own;
      this.changed();
    });
    this.unsubscribe = () => {
      unsubscribePlacement();
      unsubscribeOwn();
      this.lease.release();
    };
  }

  /** Bid for (true) or give up (false: every entity here stopped) this node's own owner scope. */
  want(active: boolean): void {
    this.lease.send({ type: 'host-lease.want-own', active });
  }

  /**
   * Whether this node holds its own owner lease NOW, by its clock: the holder rule of the host
   * lease (a majority granted a round sent less than `leaseMs` ago; after an unclean acquisition,
   * the pause bound passed), and no voter refused it as fenced.
   */
  holdsOwn(): boolean {
    const { heldUntil, readyAt } = this.own;
    if (this.placement.ownerFenced === true || heldUntil === null || readyAt === null) return false;
    const now = this.system.clock.now();
    return now >= readyAt && now < heldUntil;
  }

  /** A voter refused this node its owner scope as fenced: it never holds it again (this incarnation). */
  ownerFenced(): boolean {
    return this.placement.ownerFenced === true;
  }

  /**
   * Ask the voters to fence member `key`'s owner scope. Refused (logged `host-lease.fence-refused`,
   * counted) unless `key` is unreachable in this node's view, downed or removed; a pending fence
   * is dropped if `key` becomes reachable again (ask again when it is gone again).
   */
  fence(key: string): void {
    if (this.fenced.has(key)) return;
    this.lease.send({ type: 'host-lease.fence', key });
  }

  /** `key`'s owner lease ended everywhere and any pause of it is over; monotonic. */
  isFenced(key: string): boolean {
    return this.fenced.has(key);
  }

  /** Called on any change of `holdsOwn()`, `ownerFenced()` or of the fences completed. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Re-reads `holdsOwn()` by the clock now and tells the listeners if it changed. A reader that
   * found the lease lapsed before the lease-end report came (a pause: Node runs I/O before the
   * overdue timers) calls it, so that the listeners hear the loss now, and a renewal after it is
   * told as a gain (the report's comparison would otherwise see no change).
   */
  refresh(): void {
    this.changed();
  }

  stop(): void {
    this.unsubscribe();
  }

  private changed(): void {
    const now = { held: this.holdsOwn(), fenced: this.fenced.size, ownerFenced: this.ownerFenced() };
    const { told } = this;
    if (now.held === told.held && now.fenced === told.fenced && now.ownerFenced === told.ownerFenced) return;
    this.told = now;
    for (const listener of [...this.listeners]) listener();
  }
}
