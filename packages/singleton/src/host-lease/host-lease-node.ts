import type { Cluster, Membership } from '@doyen/cluster';
import { type ActorSystem, InvalidConfigError, type Message, nodeKey } from '@doyen/core';
import type { HostLeaseEvent, OwnLease, Placement } from './host-lease-decisions.js';
import { createHostLeaseMachine, HOST_LEASE_PATH } from './host-lease-machine.js';
import { registerHostLeaseMessages } from './host-lease-messages.js';
import { checkHostLeaseSettings, type HostLeaseSettings } from './host-lease-settings.js';

/**
 * One node's host-lease actor, shared: the singletons' leased placement and the owner leases
 * (owner-leases.ts) bid and vote through the same voters, the same decisions and the same timing
 * assumptions, whichever is constructed first spawning it. One actor per actor system.
 */
export interface HostLeaseNode {
  readonly settings: Required<HostLeaseSettings>;
  /** What the decisions last reported. */
  placement(): Placement;
  /** This node's own owner lease as last reported (its bounds on this node's clock). */
  ownLease(): OwnLease;
  send(event: HostLeaseEvent): void;
  /** Called when the placement changes. */
  subscribe(listener: (placement: Placement) => void): () => void;
  /** Called when the own owner lease's bounds change (each renewal while held). */
  subscribeOwn(listener: (own: OwnLease) => void): () => void;
  /** One user is done; the last one stops the membership subscriptions. */
  release(): void;
}

interface SharedNode extends HostLeaseNode {
  /** A new user: the first one (again) subscribes to the membership. */
  acquire(): void;
}

const nodes = new WeakMap<ActorSystem, SharedNode>();

/** The system's host-lease actor, spawned on first use with `settings` (later users must agree). */
export function hostLeaseNodeOf(
  system: ActorSystem,
  cluster: Cluster,
  settings: HostLeaseSettings = {},
): HostLeaseNode {
  const checked = checkHostLeaseSettings(settings);
  const existing = nodes.get(system);
  if (existing) {
    const s = existing.settings;
    if (
      s.leaseMs !== checked.leaseMs ||
      s.pauseBoundMs !== checked.pauseBoundMs ||
      s.maxClockDrift !== checked.maxClockDrift
    )
      throw new InvalidConfigError(
        'host lease settings differ between the singletons and the owner leases: one node has one host lease (pass the same hostLease settings)',
      );
    existing.acquire();
    return existing;
  }
  const node = spawnHostLease(system, cluster, checked);
  nodes.set(system, node);
  node.acquire();
  return node;
}

function spawnHostLease(
  system: ActorSystem,
  cluster: Cluster,
  settings: Required<HostLeaseSettings>,
): SharedNode {
  registerHostLeaseMessages(system.messageTypes);
  const { leaseMs, pauseBoundMs, maxClockDrift } = settings;
  let placement: Placement = { mandates: {}, holders: {}, blockers: {} };
  let own: OwnLease = { heldUntil: null, readyAt: null };
  const listeners = new Set<(placement: Placement) => void>();
  const ownListeners = new Set<(own: OwnLease) => void>();
  const actor = system.spawn(
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
      onPlacement: (next) => {
        placement = next;
        for (const listener of [...listeners]) listener(next);
      },
      onOwnLease: (next) => {
        own = next;
        for (const listener of [...ownListeners]) listener(next);
      },
    }),
    { name: HOST_LEASE_PATH.split('/')[2]!, parent: 'system' },
  );
  const send = (event: HostLeaseEvent) => actor.send(event as HostLeaseEvent & Message);
  // this node's own view of who is unreachable (before any resolver decides)
  const tell = (m: Membership) =>
    send({ type: 'host-lease.membership', membership: { ...m, unreachable: cluster.unreachableHere() } });
  let users = 0;
  let unsubscribe = () => {};
  const node: SharedNode = {
    settings,
    placement: () => placement,
    ownLease: () => own,
    send,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    subscribeOwn(listener) {
      ownListeners.add(listener);
      return () => ownListeners.delete(listener);
    },
    acquire() {
      if (users++ > 0) return;
      const unsubscribeMembership = cluster.subscribeMembership(tell);
      const unsubscribeEvents = cluster.subscribe((event) => {
        const m = cluster.state().membership;
        if ((event.type === 'member.unreachable' || event.type === 'member.reachable') && m) tell(m);
      });
      unsubscribe = () => {
        unsubscribeMembership();
        unsubscribeEvents();
      };
    },
    release() {
      if (users === 0 || --users > 0) return;
      unsubscribe();
    },
  };
  return node;
}
