import type { Cluster, Member, Membership } from '@doyen/cluster';
import { type ActorSystem, nodeKey } from '@doyen/core';
import { intendedHost, type Placement, scopeOfRole } from './host-lease/host-lease-decisions.js';
import { type HostLeaseNode, hostLeaseNodeOf } from './host-lease/host-lease-node.js';
import type { HostLeaseSettings } from './host-lease/host-lease-settings.js';
import type { SingletonLeaseView, SingletonPlacement } from './placement.js';

export {
  checkHostLeaseSettings,
  DEFAULT_HOST_LEASE,
  type HostLeaseSettings,
} from './host-lease/host-lease-settings.js';

/**
 * The emergent leader's placement, fenced by a majority host lease: singletons belong to the
 * oldest up member nobody reports unreachable, which runs them only while a majority of members
 * grants it the lease (host-lease-decisions.ts). A host cut off from the majority fences itself
 * within a lease; its successor starts once a majority's promises to it ended (plus the pause
 * bound when the old host did not release), without waiting for the old host to be downed.
 * Other nodes send to the member their own voter is bound to, so a host that some member cannot
 * reach keeps serving everyone else.
 */
export class LeasedOldestPlacement implements SingletonPlacement {
  readonly kind = 'leased-oldest';
  readonly exclusive = true;
  readonly leased = true;
  readonly settings: Required<HostLeaseSettings>;
  private placement: Placement = { mandates: {}, holders: {}, blockers: {} };
  private readonly listeners = new Set<() => void>();
  /** The node's one host-lease actor, shared with the owner leases (owner-leases.ts). */
  private readonly lease: HostLeaseNode;
  private readonly unsubscribe: () => void;

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    settings: HostLeaseSettings = {},
  ) {
    this.lease = hostLeaseNodeOf(system, cluster, settings);
    this.settings = this.lease.settings;
    this.placement = this.lease.placement();
    const unsubscribePlacement = this.lease.subscribe((placement) => {
      this.placement = placement;
      for (const listener of [...this.listeners]) listener();
    });
    this.unsubscribe = () => {
      unsubscribePlacement();
      this.lease.release();
    };
  }

  /** A membership with this node's own view of who is unreachable (before any resolver decides). */
  private viewed(membership: Membership): Membership {
    return { ...membership, unreachable: this.cluster.unreachableHere() };
  }

  hostOf(membership: Membership, role: string | undefined): Member | undefined {
    const scope = scopeOfRole(role);
    const intended = intendedHost(this.viewed(membership), scope);
    const self = nodeKey(this.system.node);
    const holder = this.placement.holders[scope];
    const byKey = (key: string | undefined) => membership.members.find((m) => nodeKey(m) === key);
    // ourselves when we should host; else whom our voter is bound to (a member, not us: a host
    // handing over still holds the lease), or the member that should host
    if (intended === self || holder === self) return byKey(intended);
    return byKey(holder) ?? byKey(intended);
  }

  leaseOf(role: string | undefined): SingletonLeaseView {
    const scope = scopeOfRole(role);
    return {
      held: this.placement.mandates[scope] === true,
      votedFor: this.placement.holders[scope] ?? null,
      blockedBy: this.placement.blockers[scope] ?? null,
    };
  }

  mayRun(role: string | undefined): boolean {
    return this.placement.mandates[scopeOfRole(role)] === true;
  }

  /** The member that holds the lease this node bids for in vain (to be asked to hand over). */
  blockerOf(role: string | undefined): string | undefined {
    return this.placement.blockers[scopeOfRole(role)];
  }

  addRole(role: string | undefined): void {
    this.lease.send({ type: 'host-lease.scope', scope: scopeOfRole(role) });
  }

  hosting(role: string | undefined, running: number): void {
    this.lease.send({ type: 'host-lease.hosting', scope: scopeOfRole(role), running });
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.unsubscribe();
  }
}
