import type { Cluster, Member, Membership } from '@doyen/cluster';
import { type ActorSystem, InvalidConfigError, type LocalActorRef, type Message, nodeKey } from '@doyen/core';
import { intendedHost, type Placement, scopeOfRole } from './host-lease/host-lease-decisions.js';
import { createHostLeaseMachine, HOST_LEASE_PATH } from './host-lease/host-lease-machine.js';
import { registerHostLeaseMessages } from './host-lease/host-lease-messages.js';
import type { SingletonLeaseView, SingletonPlacement } from './placement.js';

/** The host lease's timing (see host-lease-decisions.ts for what each assumption guarantees). */
export interface HostLeaseSettings {
  /** How long a majority's grant keeps a host running (default 1000 ms). */
  readonly leaseMs?: number;
  /** The longest a process may stall (GC, SIGSTOP, a busy loop) with the guarantee kept (default 500 ms). */
  readonly pauseBoundMs?: number;
  /** How much faster or slower one clock may run than another over a lease (default 0.01). */
  readonly maxClockDrift?: number;
}

export const DEFAULT_HOST_LEASE: Required<HostLeaseSettings> = {
  leaseMs: 1000,
  pauseBoundMs: 500,
  maxClockDrift: 0.01,
};

/** Refuses settings under which the lease cannot work (a renewal must fit several times in a lease). */
export function checkHostLeaseSettings(settings: HostLeaseSettings): Required<HostLeaseSettings> {
  const s = { ...DEFAULT_HOST_LEASE, ...settings };
  if (!(Number.isFinite(s.leaseMs) && s.leaseMs >= 100))
    throw new InvalidConfigError('hostLease.leaseMs must be a number of ms ≥ 100');
  if (!(Number.isFinite(s.pauseBoundMs) && s.pauseBoundMs >= 0))
    throw new InvalidConfigError('hostLease.pauseBoundMs must be a number of ms ≥ 0');
  if (!(Number.isFinite(s.maxClockDrift) && s.maxClockDrift >= 0 && s.maxClockDrift < 0.5))
    throw new InvalidConfigError('hostLease.maxClockDrift must be a fraction in [0, 0.5)');
  return s;
}

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
  private readonly actor: LocalActorRef;
  private readonly unsubscribe: () => void;

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    settings: HostLeaseSettings = {},
  ) {
    this.settings = checkHostLeaseSettings(settings);
    registerHostLeaseMessages(system.messageTypes);
    const { leaseMs, pauseBoundMs, maxClockDrift } = this.settings;
    this.actor = system.spawn(
      createHostLeaseMachine({
        system,
        policy: {
          selfKey: nodeKey(system.node),
          leaseMs,
          pauseBoundMs,
          maxClockDrift,
          downedCountsForMs: cluster.downRemovalMarginMs(),
          renewEveryMs: leaseMs / 4,
          minRetryMs: Math.min(20, leaseMs / 20),
        },
        onPlacement: (placement) => {
          this.placement = placement;
          for (const listener of [...this.listeners]) listener();
        },
      }),
      { name: HOST_LEASE_PATH.split('/')[2]!, parent: 'system' },
    );
    const tell = (m: Membership) =>
      this.actor.send({ type: 'host-lease.membership', membership: this.viewed(m) } as Message);
    const unsubscribeMembership = cluster.subscribeMembership(tell);
    const unsubscribeEvents = cluster.subscribe((event) => {
      const m = cluster.state().membership;
      if ((event.type === 'member.unreachable' || event.type === 'member.reachable') && m) tell(m);
    });
    this.unsubscribe = () => {
      unsubscribeMembership();
      unsubscribeEvents();
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
    this.actor.send({ type: 'host-lease.scope', scope: scopeOfRole(role) } as Message);
  }

  hosting(role: string | undefined, running: number): void {
    this.actor.send({ type: 'host-lease.hosting', scope: scopeOfRole(role), running } as Message);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.unsubscribe();
  }
}
