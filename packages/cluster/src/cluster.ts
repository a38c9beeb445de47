import {
  type ActorRef,
  type ActorSystem,
  DoyenError,
  formatNodeAddress,
  type NodeAddress,
  nodeKey,
  type UniqueNodeAddress,
} from '@doyen/core';
import type { SnapshotFrom } from 'xstate';
import { type ClusterEvent, diffMemberships } from './cluster-events.js';
import { createDowningMachine } from './downing/downing-machine.js';
import { defaultStableAfterMs } from './downing/resolver.js';
import { createFailureDetectorMachine } from './failure-detector/failure-detector-machine.js';
import { Heartbeater } from './failure-detector/heartbeater.js';
import { joinAttemptFailure } from './join-attempts.js';
import { installMembershipAuthority } from './membership/membership-authority.js';
import { createMembershipMachine, type MembershipMachine } from './membership/membership-machine.js';
import { registerClusterMessages } from './messages.js';
import { type ClusterConfig, resolveClusterConfig } from './model/config.js';
import { type Member, nodeOf } from './model/member.js';
import { coordinatorOf, type Membership } from './model/membership.js';
import type { SelfInfo } from './model/self-info.js';
import {
  DOWNING_PATH,
  HEARTBEAT_PATH,
  HEARTBEAT_PULSE_PATH,
  SPLIT_BRAIN_CHECKER_PATH,
  SYSTEM_ACTOR_NAMES,
} from './model/system-actors.js';
import { NotEnoughMembersError, reachableUpCount } from './quorum-protection.js';
import { reachabilityEvents } from './reachability-events.js';
import { createSplitBrainCheckerMachine } from './split-brain-checker/split-brain-checker-machine.js';

export class JoinFailedError extends DoyenError {
  constructor(reason: string) {
    super(`could not join the cluster: ${reason}`, 'join-failed');
  }
}

/** Where this node is in its life as a member. */
export type NodeStatus = 'joining' | 'join-failed' | 'up' | 'leaving' | 'exiting' | 'removed' | 'down';

export interface ClusterState {
  readonly self: Member | undefined;
  readonly status: NodeStatus;
  readonly isCoordinator: boolean;
  readonly coordinator: Member | undefined;
  readonly membership: Membership | undefined;
}

export interface ClusterOptions {
  /** Called when a member leaves the membership (removed or downed): drop its connections. */
  readonly onMemberRemoved?: (node: UniqueNodeAddress) => void;
  /**
   * Called once when this node learns it was downed, with the addresses of every member it
   * knew: the edge exits, or restarts as a new incarnation that rejoins through them.
   */
  readonly onDowned?: (knownMembers: readonly NodeAddress[]) => void;
  /**
   * Called when the split-brain checker merges this node's sub-cluster into a larger one: the
   * edge restarts the node as a new incarnation joining through `seeds` (mayFormCluster false).
   */
  readonly onRejoin?: (seeds: readonly NodeAddress[], reason: 'merge') => void;
}

type MembershipSnapshot = SnapshotFrom<MembershipMachine>;

/**
 * A node's membership in the cluster: runs the membership and failure-detector machines under
 * `/system`, turns membership changes into cluster events (logged with their `event` name and
 * published to subscribers), and feeds death watch when members become unreachable or leave.
 */
export class Cluster {
  readonly config: ClusterConfig;
  readonly self: SelfInfo;
  private readonly membershipRef: ActorRef;
  private readonly listeners = new Set<(event: ClusterEvent) => void>();
  private readonly membershipListeners = new Set<(membership: Membership) => void>();
  private last: Membership | undefined;
  private lastSeq = 0;
  /** The join attempt last reported failed (each is logged once, with its seeds and their errors). */
  private reportedJoinAttempt = 0;
  private status: NodeStatus = 'joining';
  private upWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private goneWaiters: (() => void)[] = [];
  private failure: string | undefined;
  private readonly heartbeater: Heartbeater;

  private constructor(
    readonly system: ActorSystem,
    config: Partial<ClusterConfig> & Pick<ClusterConfig, 'seeds'>,
    private readonly options: ClusterOptions,
  ) {
    this.config = resolveClusterConfig(config);
    registerClusterMessages(system.messageTypes);
    // who may send what, as this view sees it: checked at the boundary for every message
    installMembershipAuthority(system.messageTypes, () => this.last);
    // each pull is answered with a whole membership: a peer may not make this node send them in a loop
    system.limitRemoteRate('membership.pull', this.config.pullsPerPeerPerSecond);
    const node = system.node;
    const address = formatNodeAddress(node);
    this.self = {
      address,
      uid: node.uid,
      name: this.config.name ?? address,
      roles: this.config.roles,
      key: nodeKey(node),
      node,
      ...(system.publicKey === undefined ? {} : { publicKey: system.publicKey }),
    };
    const deps = { system, config: this.config, self: this.self };
    // Heartbeats take the cheap path (a function ref and one timer); the machine hears changes only.
    const heartbeater = new Heartbeater({
      ...deps,
      onPeersChanged: (peers) => fdRef.send({ type: 'fd.peers', peers }),
    });
    this.heartbeater = heartbeater;
    system.functionRef(SYSTEM_ACTOR_NAMES.heartbeatPulse, (message) => heartbeater.receive(message));
    const fdRef = system.spawn(createFailureDetectorMachine({ system, heartbeater }), {
      name: SYSTEM_ACTOR_NAMES.heartbeat,
      parent: 'system',
    });
    system.spawn(createDowningMachine({ system, config: this.config }), {
      name: SYSTEM_ACTOR_NAMES.downing,
      parent: 'system',
    });
    system.spawn(
      createSplitBrainCheckerMachine({
        system,
        config: this.config,
        selfAddress: address,
        probeIntervalMs: this.config.splitBrainProbeIntervalMs,
        rejoin: (seeds, reason) => this.requestRejoin(seeds, reason),
      }),
      { name: SYSTEM_ACTOR_NAMES.splitBrainChecker, parent: 'system' },
    );
    this.membershipRef = system.spawn(createMembershipMachine(deps), {
      name: SYSTEM_ACTOR_NAMES.membership,
      parent: 'system',
    });
    system.subscribeSnapshots(this.membershipRef, (s) => this.onSnapshot(s as MembershipSnapshot));
    const initial = system.snapshotOf(this.membershipRef) as MembershipSnapshot | undefined;
    if (initial) this.onSnapshot(initial);
  }

  /** Starts joining through the configured seeds (the first seed may form the cluster). */
  static start(
    system: ActorSystem,
    config: Partial<ClusterConfig> & Pick<ClusterConfig, 'seeds'>,
    options: ClusterOptions = {},
  ): Cluster {
    return new Cluster(system, config, options);
  }

  state(): ClusterState {
    const m = this.last;
    const coordinator = m ? coordinatorOf(m) : undefined;
    const self = m?.members.find((x) => nodeKey(x) === this.self.key);
    return {
      self,
      status: this.status,
      isCoordinator: coordinator !== undefined && nodeKey(coordinator) === this.self.key,
      coordinator,
      membership: m,
    };
  }

  /**
   * Keys of the members this node takes for unreachable now: the coordinator's list and every
   * live observer's report (as `member.unreachable` / `member.reachable` tell it). A side cut off
   * from the coordinator knows them before any resolver decides.
   */
  unreachableHere(): readonly string[] {
    return [...this.published];
  }

  /** Member key -> keys of the members reporting it unreachable, as this node knows them. */
  unreachableObservers(): Readonly<Record<string, readonly string[]>> {
    return this.lastObservations ?? {};
  }

  /** Resolves once this node is a member; rejects with JoinFailedError when the join gives up. */
  whenUp(): Promise<void> {
    if (this.status === 'join-failed') return Promise.reject(new JoinFailedError(this.failure ?? 'unknown'));
    if (this.status !== 'joining') return Promise.resolve();
    return new Promise((resolve, reject) => this.upWaiters.push({ resolve, reject }));
  }

  /** Leaves gracefully (leaving → exiting → removed); resolves when this node is out. */
  leave(): Promise<void> {
    if (this.status === 'removed' || this.status === 'down' || this.status === 'join-failed')
      return Promise.resolve();
    // Not welcomed yet (say a downed node's next incarnation whose seeds are gone): there is no
    // membership to give up and nobody who would answer, so the leave phase does not wait out its
    // timeout. A join admitted but not yet answered ends as a crash would: its member is downed.
    if (this.status === 'joining') {
      this.system.logger.info(
        { event: 'node.left-before-joining' },
        'left before being welcomed: nothing to leave',
      );
      return Promise.resolve();
    }
    const gone = new Promise<void>((resolve) => this.goneWaiters.push(resolve));
    this.membershipRef.send({ type: 'cluster.leave' });
    return gone;
  }

  /** The margin singletons wait after a downing (sbr.downRemovalMarginMs, default stable-after). */
  downRemovalMarginMs(): number {
    const size = this.last?.members.length ?? 1;
    return this.config.sbr.downRemovalMarginMs ?? this.config.sbr.stableAfterMs ?? defaultStableAfterMs(size);
  }

  /** Up members this node can reach (its own view: the coordinator's unreachable list and reports). */
  reachableMemberCount(): number {
    const snapshot = this.system.snapshotOf(this.membershipRef) as MembershipSnapshot | undefined;
    const m = this.last;
    if (!m || !snapshot || (this.status !== 'up' && this.status !== 'leaving')) return 0;
    const unreachable = new Set([...m.unreachable, ...Object.keys(snapshot.context.observations)]);
    return reachableUpCount(
      m.members.map((x) => ({ key: nodeKey(x), status: x.status })),
      unreachable,
    );
  }

  /** Whether at least `minimum` (default `minimumClusterSize`) members are up and reachable. */
  hasQuorum(minimum = this.config.minimumClusterSize): boolean {
    return this.reachableMemberCount() >= minimum;
  }

  /** Throws `NotEnoughMembersError` unless `hasQuorum(minimum)`: guard user work with it. */
  requireQuorum(minimum = this.config.minimumClusterSize): void {
    const present = this.reachableMemberCount();
    if (present < minimum) throw new NotEnoughMembersError(minimum, present);
  }

  /** Asks the coordinator to down a member, by `host:port` or member key. */
  down(member: string): void {
    this.membershipRef.send({ type: 'cluster.down', member } as never);
  }

  /** Called with every membership this node adopts (and at once with the current one). */
  subscribeMembership(listener: (membership: Membership) => void): () => void {
    this.membershipListeners.add(listener);
    if (this.last) listener(this.last);
    return () => this.membershipListeners.delete(listener);
  }

  subscribe(listener: (event: ClusterEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Cluster events as an async iterator; `return()` (or breaking out of for-await) unsubscribes. */
  events(): AsyncIterableIterator<ClusterEvent> {
    const queue: ClusterEvent[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe((e) => {
      queue.push(e);
      wake?.();
    });
    const iterator: AsyncIterableIterator<ClusterEvent> = {
      next: async () => {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        return { value: queue.shift()!, done: false };
      },
      return: async () => {
        unsubscribe();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Stops the cluster machines (the node is going away). */
  stop(): void {
    this.system.stop(this.membershipRef);
    this.stopProtocolHelpers();
  }

  private rejoinRequested = false;

  private requestRejoin(seeds: readonly NodeAddress[], reason: 'merge'): void {
    if (this.rejoinRequested) return;
    this.rejoinRequested = true;
    this.stopProtocolHelpers();
    if (this.options.onRejoin) this.options.onRejoin(seeds, reason);
    else
      this.system.logger.error(
        { event: 'cluster.rejoin-unsupported', reason },
        'no onRejoin handler: cannot merge',
      );
  }

  /** A downed or removed node stops heartbeating and deciding; its membership actor stays for /cluster. */
  private stopProtocolHelpers(): void {
    this.heartbeater.stop();
    for (const path of [HEARTBEAT_PULSE_PATH, HEARTBEAT_PATH, DOWNING_PATH, SPLIT_BRAIN_CHECKER_PATH]) {
      const ref = this.system.lookup(path);
      if (ref) this.system.stop(ref);
    }
  }

  /** Addresses of all members this node has known (live and failed), itself excluded. */
  knownAddresses(): NodeAddress[] {
    const m = this.last;
    const seen = new Map<string, NodeAddress>();
    for (const x of [...(m?.members ?? []), ...(m?.failed ?? [])]) {
      if (x.address !== this.self.address) seen.set(x.address, nodeOf(x));
    }
    return [...seen.values()].map(({ host, port }) => ({ host, port }));
  }

  private reportFailedJoinAttempt(snapshot: MembershipSnapshot): void {
    const attempt = snapshot.context.attempt;
    if (!joinAttemptEnded(snapshot) || attempt <= this.reportedJoinAttempt) return;
    this.reportedJoinAttempt = attempt;
    const { fields, message } = joinAttemptFailure(
      this.config.seeds,
      this.system.node,
      attempt,
      this.config.maxJoinAttempts,
      (seed) => this.system.lastDialFailure(seed),
      snapshot.context.joinSeenBy,
    );
    this.system.logger.warn(fields, message);
  }

  private onSnapshot(snapshot: MembershipSnapshot): void {
    const status = statusOf(snapshot);
    this.reportFailedJoinAttempt(snapshot);
    const observations = snapshot.context.observations;
    for (const entry of snapshot.context.journal) {
      if (entry.seq <= this.lastSeq) continue;
      // reachability is told from this node's own view (below), not from the coordinator's list alone
      const events = diffMemberships(this.last, entry.membership).filter(
        (e) => e.type !== 'member.unreachable' && e.type !== 'member.reachable',
      );
      this.last = entry.membership;
      this.lastSeq = entry.seq;
      // the keys the coordinator admitted: from now on a connection claiming one must prove it
      this.system.peerKeys.record(identityKeysOf(entry.membership));
      for (const e of events) this.publish(e);
      this.publishReachability(entry.membership, observations);
      for (const l of this.membershipListeners) {
        try {
          l(entry.membership);
        } catch (error) {
          this.system.logger.error(
            { event: 'cluster.listener-failed', err: error },
            'membership listener threw',
          );
        }
      }
    }
    if (this.last && observations !== this.lastObservations)
      this.publishReachability(this.last, observations);
    if (status !== this.status) {
      this.status = status;
      this.failure = snapshot.context.failure;
      this.system.logger.info({ event: 'node.status', status }, `this node is ${status}`);
      if (status === 'join-failed') {
        for (const w of this.upWaiters.splice(0)) w.reject(new JoinFailedError(this.failure ?? 'unknown'));
      } else if (status !== 'joining') {
        for (const w of this.upWaiters.splice(0)) w.resolve();
      }
      if (status === 'removed' || status === 'down') {
        this.stopProtocolHelpers();
        for (const w of this.goneWaiters.splice(0)) w();
      }
      if (status === 'down') {
        this.system.logger.warn(
          { event: 'member.downed', member: { address: this.self.address, uid: this.self.uid }, self: true },
          'this node was downed: it no longer takes part in the cluster',
        );
        this.options.onDowned?.(this.knownAddresses());
      }
    }
  }

  private published = new Set<string>();
  private lastObservations: Readonly<Record<string, readonly string[]>> | undefined;

  /** member.unreachable / member.reachable as this node sees it (see reachability-events.ts). */
  private publishReachability(
    membership: Membership,
    observations: Readonly<Record<string, readonly string[]>>,
  ): void {
    this.lastObservations = observations;
    const { events, unreachable } = reachabilityEvents(
      this.published,
      membership,
      observations,
      this.self.key,
    );
    this.published = unreachable;
    for (const e of events) this.publish(e);
  }

  private publish(event: ClusterEvent): void {
    const member = 'member' in event ? event.member : event.coordinator;
    this.system.logger.info(
      {
        event: event.type,
        member: member && {
          address: member.address,
          uid: member.uid,
          name: member.name,
          age: member.age,
          status: member.status,
        },
        ...(event.type === 'coordinator.changed' ? { previous: event.previous?.address } : {}),
      },
      `${event.type} ${member ? member.address : '(none)'}`,
    );
    if (event.type === 'member.unreachable')
      this.system.nodeTerminated(nodeOf(event.member), 'node-unreachable');
    if (event.type === 'member.removed') {
      const node = nodeOf(event.member);
      this.system.nodeTerminated(node, 'node-removed');
      if (nodeKey(event.member) !== this.self.key) this.options.onMemberRemoved?.(node);
    }
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (error) {
        this.system.logger.error(
          { event: 'cluster.listener-failed', err: error },
          'cluster event listener threw',
        );
      }
    }
  }
}

/** Where a join attempt ends without a welcome: backing off before the next, or giving up. */
function joinAttemptEnded(s: MembershipSnapshot): boolean {
  return s.matches('backingOff') || s.matches('joinFailed');
}

function statusOf(s: MembershipSnapshot): NodeStatus {
  if (s.matches('joining') || s.matches('backingOff')) return 'joining';
  if (s.matches('joinFailed')) return 'join-failed';
  if (s.matches('up')) return 'up';
  if (s.matches('leaving')) return 'leaving';
  if (s.matches('exiting')) return 'exiting';
  if (s.matches('down')) return 'down';
  return 'removed';
}

function* identityKeysOf(m: Membership): Iterable<{ member: string; publicKey: string | undefined }> {
  for (const x of m.members) yield { member: nodeKey(x), publicKey: x.publicKey };
  for (const x of m.failed) yield { member: nodeKey(x), publicKey: x.publicKey };
}
