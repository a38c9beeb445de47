import {
  type ActorRef,
  type ActorSystem,
  HEARTBEAT_BUCKETS_SECONDS,
  type Message,
  nodeKey,
} from '@doyen/core';
import type { ClusterConfig } from '../model/config.js';
import { nodeOf } from '../model/member.js';
import { liveMembers, type Membership } from '../model/membership.js';
import type { SelfInfo } from '../model/self-info.js';
import { HEARTBEAT_PULSE_PATH, MEMBERSHIP_PATH } from '../model/system-actors.js';
import type { HeartbeatPing, HeartbeatPong } from './heartbeat-messages.js';
import { heartbeatPeers, successionPartner } from './heartbeat-ring.js';
import type { PhiAccrualFailureDetector } from './phi-accrual.js';
import { FailureDetectorRegistry } from './registry.js';

/**
 * What this node's detector thinks of a peer it monitors. `unheard`: monitored, nothing heard from
 * it since, not yet judged. It is no evidence of reachability: a member that became a target
 * because the ring walked past members gone unreachable (a partition) may be over there too, and
 * counting it reachable would make it look indirectly connected until it is judged.
 */
export type PeerStatus = 'unheard' | 'reachable' | 'suspect' | 'unreachable';

/** Where heartbeats are sent and answered (a plain function ref, no mailbox, no machine). */
export { HEARTBEAT_PULSE_PATH } from '../model/system-actors.js';

export interface HeartbeaterDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly self: SelfInfo;
  /** Called only when a peer's status changed or the monitored set changed: the whole table. */
  readonly onPeersChanged: (peers: Readonly<Record<string, PeerStatus>>) => void;
}

/**
 * The per-heartbeat work of the failure detector, on the cheapest path: one timer on the actor
 * clock sends every target its ping and judges every peer once per interval; pings and pongs are
 * handled synchronously as they arrive. A peer that is also a target answers nothing: its own
 * pings are its heartbeats. All-to-all and the symmetric ring (heartbeat-ring.ts) make every
 * target such a peer, so a node sends one frame per target per interval; replies are owed only
 * while views differ. Nothing goes through a state machine, and nobody hears of it, unless
 * something changed (a peer's status, the monitored set). An idle cluster then costs a timer and
 * one small frame per target per interval.
 */
export class Heartbeater {
  private readonly system: ActorSystem;
  private readonly config: ClusterConfig;
  private readonly self: SelfInfo;
  private readonly registry: FailureDetectorRegistry;
  private readonly phiThreshold: number;
  private readonly onPeersChanged: HeartbeaterDeps['onPeersChanged'];
  private version = 0;
  /** The membership the targets were last chosen from. */
  private membership: Membership | undefined;
  private memberKeys = new Set<string>();
  private failedKeys = new Set<string>();
  private peers: Record<string, PeerStatus> = {};
  /** Refs to each target's pulse, built once per target rather than once per heartbeat. */
  private targets = new Map<string, ActorRef>();
  private readonly replyRefs = new Map<string, ActorRef>();
  private timer: unknown;
  private dueAt = 0;
  /** The previous tick skipped its judgement (it came late): the next one judges whatever happens. */
  private skipped = false;
  private stopped = false;
  /** When each peer last answered (for the inter-arrival histogram). */
  private readonly lastHeard = new Map<string, number>();
  /** Targets that were new members when they became targets (see firstHeartbeatGraceMs). */
  private readonly newcomers = new Set<string>();
  /** Who pinged us, since the last membership, without being monitored (see pingedEarly). */
  private readonly earlyPings = new Set<string>();
  /** Peers held unreachable since a refused dial, and when (see holdUnreachable). */
  private readonly refusedAt = new Map<string, number>();

  constructor(deps: HeartbeaterDeps) {
    this.system = deps.system;
    this.config = deps.config;
    this.self = deps.self;
    this.onPeersChanged = deps.onPeersChanged;
    this.registry = new FailureDetectorRegistry(deps.config.failureDetector);
    this.phiThreshold =
      deps.config.failureDetector.kind === 'phi-accrual'
        ? (deps.config.failureDetector.threshold ?? 8)
        : Number.POSITIVE_INFINITY;
  }

  /** The current table (for tests and inspection). */
  peerStatuses(): Readonly<Record<string, PeerStatus>> {
    return this.peers;
  }

  /**
   * A new membership: recompute the ring targets (without restarting the timer: a burst of
   * versions, a wave of joins, must not stop heartbeats), start heartbeating on the first.
   */
  takeMembership(membership: Membership): void {
    if (this.stopped) return;
    // the version first: new targets are pinged at once, with it
    this.version = membership.version;
    this.chooseTargets(membership);
    this.membership = membership;
    this.earlyPings.clear();
    this.memberKeys = new Set(liveMembers(membership).map(nodeKey));
    this.failedKeys = new Set(membership.failed.map(nodeKey));
    for (const key of this.replyRefs.keys()) if (!this.memberKeys.has(key)) this.replyRefs.delete(key);
    if (this.timer === undefined) this.schedule();
  }

  /**
   * The ring targets for `membership` and this node's own judgements. The walk skips members this
   * node found unreachable and goes on to the next, so it runs again whenever a judgement crosses
   * the unreachable line, not only on a new membership: a side cut off from the coordinator gets
   * no new membership, and its observers must still walk on to the members behind the ones they
   * lost (else a member of the other side none of them monitored stays "reachable" for them, they
   * count it on their side, wait for it as their decider, and never decide). Members judged
   * unreachable stay targets, so they are heard when they come back. True when the monitored set
   * changed (the table was reported).
   */
  private chooseTargets(membership: Membership): boolean {
    const members = liveMembers(membership).map((m) => ({ ...m, key: nodeKey(m) }));
    const unreachable = new Set(
      Object.entries(this.peers)
        .filter(([, s]) => s === 'unreachable')
        .map(([k]) => k),
    );
    const others = members.filter((m) => m.key !== this.self.key);
    const { targets } = heartbeatPeers({ address: this.self.address, uid: this.self.uid }, others, {
      unreachable,
      config: this.config.heartbeatRing,
    });
    const chosen = new Set(targets.map(nodeKey));
    const partner = successionPartner(this.self, members);
    const paired = partner && !chosen.has(partner.key) ? [partner] : [];
    if (partner) chosen.add(partner.key);
    const kept = others.filter((m) => unreachable.has(m.key) && !chosen.has(m.key));
    const now = this.system.clock.now();
    const peers: Record<string, PeerStatus> = {};
    const refs = new Map<string, ActorRef>();
    for (const t of [...targets, ...paired, ...kept]) {
      const key = nodeKey(t);
      // A new target starts with a heartbeat "now": if none ever arrives it still gets detected.
      if (!(key in this.peers)) {
        this.registry.heartbeat(key, now);
        if (this.earlyPings.has(key)) this.lastHeard.set(key, now);
        // new to the cluster (not a member we knew, moving into our ring): judged after a grace
        else if (!this.memberKeys.has(key)) this.newcomers.add(key);
      }
      peers[key] = this.peers[key] ?? (this.lastHeard.has(key) ? 'reachable' : 'unheard');
      refs.set(key, this.targets.get(key) ?? this.system.remoteRef(nodeOf(t), HEARTBEAT_PULSE_PATH));
    }
    for (const key of Object.keys(this.peers))
      if (!(key in peers)) {
        this.registry.remove(key);
        this.lastHeard.delete(key);
        this.newcomers.delete(key);
        this.refusedAt.delete(key);
      }
    const changed = !sameKeys(this.peers, peers);
    const previous = this.peers;
    this.peers = peers;
    this.targets = refs;
    if (changed) this.onPeersChanged(peers);
    // New targets get a ping now rather than at the next tick: a newcomer is heard as soon as it
    // is in, and its first-heartbeat grace (firstHeartbeatGraceMs) ends at once.
    const fresh = [...refs].filter(([key]) => !(key in previous)).map(([, ref]) => ref);
    if (fresh.length > 0) this.ping(fresh);
    return changed;
  }

  /**
   * The failure detector machine judged these peers unreachable on a refused dial
   * (connectionRefused): they stay unreachable whatever phi says until heard from again, at least
   * an interval later (an earlier heartbeat may have been in flight before the process died).
   * The ring walks on past them, as after a verdict of its own.
   */
  holdUnreachable(keys: readonly string[]): void {
    if (this.stopped) return;
    const now = this.system.clock.now();
    let next: Record<string, PeerStatus> | undefined;
    for (const key of keys) {
      if (!(key in this.peers)) continue;
      this.refusedAt.set(key, now);
      if (this.peers[key] === 'unreachable') continue;
      next ??= { ...this.peers };
      next[key] = 'unreachable';
    }
    if (!next) return;
    this.peers = next;
    if (this.membership && this.chooseTargets(this.membership)) return;
    this.onPeersChanged(next);
  }

  /** Handles `heartbeat.ping` and `heartbeat.pong` as they arrive (synchronously, no mailbox). */
  receive(message: Message): void {
    if (this.stopped) return;
    if (message.type === 'heartbeat.ping') this.answer(message as HeartbeatPing);
    else if (message.type === 'heartbeat.pong') this.heard(message as HeartbeatPong);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.system.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.dueAt = this.system.clock.now() + this.config.heartbeatIntervalMs;
    this.timer = this.system.clock.setTimeout(() => this.tick(), this.config.heartbeatIntervalMs);
  }

  /**
   * One interval: a ping to every target (one message object for all), then one judgement of
   * each. A tick that comes more than an interval late follows a stalled event loop (GC, a
   * loaded host): timers run before socket reads, so the pongs that arrived meanwhile are still
   * unread. It only pings; the next tick judges, once they are in.
   */
  private tick(): void {
    this.timer = undefined;
    if (this.stopped || this.system.isTerminated) return;
    this.ping(this.targets.values());
    const now = this.system.clock.now();
    const late = now - this.dueAt > this.config.heartbeatIntervalMs;
    this.schedule();
    if (late && !this.skipped) {
      this.skipped = true;
      return;
    }
    this.skipped = false;
    let next: Record<string, PeerStatus> | undefined;
    let crossed = false;
    for (const [key, before] of Object.entries(this.peers)) {
      const after = this.statusOf(key, now);
      if (after === before) continue;
      if ((after === 'unreachable') !== (before === 'unreachable')) {
        this.logVerdict(key, after, now);
        crossed = true;
      }
      next ??= { ...this.peers };
      next[key] = after;
    }
    if (!next) return;
    this.peers = next;
    // the walk depends on who is unreachable: walk again (see chooseTargets); one report either way
    if (crossed && this.membership && this.chooseTargets(this.membership)) return;
    this.onPeersChanged(next);
  }

  /** One ping message object for all of `refs`. */
  private ping(refs: Iterable<ActorRef>): void {
    const ping: HeartbeatPing = { type: 'heartbeat.ping', from: this.self.node, version: this.version };
    for (const ref of refs) ref.send(ping);
  }

  private statusOf(key: string, now: number): PeerStatus {
    if (this.refusedAt.has(key)) return 'unreachable';
    // a newcomer not heard from yet: judged as of the grace ago (its "heartbeat" is when
    // monitoring began)
    const grace = this.newcomers.has(key) && !this.lastHeard.has(key);
    const at = grace ? now - this.config.firstHeartbeatGraceMs : now;
    if (!this.registry.isAvailable(key, at)) return 'unreachable';
    if (!this.lastHeard.has(key)) return 'unheard';
    const detector = this.registry.get(key) as PhiAccrualFailureDetector | undefined;
    if (detector && typeof detector.phi === 'function' && detector.phi(at) > this.phiThreshold / 2)
      return 'suspect';
    return 'reachable';
  }

  /** This node's own detector changed its mind about a peer: a cluster fact, with its evidence. */
  private logVerdict(key: string, status: PeerStatus, now: number): void {
    const heard = this.lastHeard.has(key);
    const last = this.registry.get(key)?.lastHeartbeatMs;
    this.system.logger.info(
      {
        event: status === 'unreachable' ? 'fd.peer-unreachable' : 'fd.peer-reachable',
        peer: key,
        ...(status === 'unreachable' ? { cause: this.config.failureDetector.kind } : {}),
        // silence before the verdict; for a peer never heard, since monitoring began
        silentMs: last === undefined ? undefined : Math.round(now - last),
        heard,
      },
      `${key} ${status === 'unreachable' ? 'unreachable' : 'reachable again'} (own failure detector)`,
    );
  }

  private answer(ping: HeartbeatPing): void {
    const from = nodeKey(ping.from);
    // Still joining (no membership yet): the coordinator monitors us from the moment it adds us,
    // and a welcome can take seconds to be handled on a loaded host. Answering (only the wire's
    // authenticated peers can ping) keeps a slow joiner from looking dead before it is even in
    // (Akka's heartbeat receiver answers everyone, too).
    if (!this.memberKeys.has(from) && this.memberKeys.size > 0) {
      // Not one of ours. If we downed it, say so (Akka's quarantine): it may still believe it
      // is a member and run singletons; silence alone would leave it guessing for seconds.
      if (this.failedKeys.has(from)) {
        this.system
          .remoteRef(ping.from, MEMBERSHIP_PATH)
          .send({ type: 'membership.downed-notice', by: this.self.key } as Message);
        return;
      }
      // A newcomer whose admission has not reached us yet (or we lag behind the coordinator): it
      // monitors us already, and silence makes it judge us unreachable and tell everyone, which
      // on a loaded start of 50 kept joiners from moving up for minutes. Answered, as Akka's
      // heartbeat receiver answers everyone (only the wire's authenticated peers can ping).
      this.pingedEarly(from);
      this.pong(ping);
      return;
    }
    if (!(from in this.peers)) this.pingedEarly(from);
    if (ping.version !== this.version && this.version > 0) this.versionSeen(ping);
    if (this.targets.has(from)) {
      // We ping it every interval as it pings us (all-to-all, or ring neighbours): each side's
      // pings are the other's heartbeats, so no answer is owed. Half the frames.
      this.arrived(from);
      return;
    }
    this.pong(ping);
  }

  private pong(ping: HeartbeatPing): void {
    const from = nodeKey(ping.from);
    let reply = this.replyRefs.get(from);
    if (!reply) {
      reply = this.system.remoteRef(ping.from, HEARTBEAT_PULSE_PATH);
      // not kept for a pinger we do not know yet (takeMembership prunes only on a new membership)
      if (this.memberKeys.has(from) || this.memberKeys.size === 0) this.replyRefs.set(from, reply);
    }
    const pong: HeartbeatPong = { type: 'heartbeat.pong', from: this.self.node, version: this.version };
    reply.send(pong);
  }

  /**
   * A ping from a node we do not monitor (yet): a newcomer whose welcome overtook our update, or
   * a member pinging a newcomer (us) before our own welcome arrived. Once it is a target, it
   * counts as heard: its first-heartbeat grace does not apply.
   */
  private pingedEarly(from: string): void {
    if (this.earlyPings.size < MAX_EARLY_PINGS) this.earlyPings.add(from);
  }

  private heard(pong: HeartbeatPong): void {
    this.arrived(nodeKey(pong.from));
    if (pong.version > this.version && this.version > 0) this.versionSeen(pong);
  }

  /** A heartbeat (a pong, or a ping from a peer we ping too) from `key`: its detector hears it. */
  private arrived(key: string): void {
    if (key in this.peers) {
      const now = this.system.clock.now();
      const last = this.lastHeard.get(key);
      if (last !== undefined)
        this.system.metrics.observe(
          'doyen_heartbeat_interarrival_seconds',
          'Time between two heartbeats from the same member',
          (now - last) / 1000,
          {},
          HEARTBEAT_BUCKETS_SECONDS,
        );
      this.lastHeard.set(key, now);
      this.registry.heartbeat(key, now);
      const refused = this.refusedAt.get(key);
      if (refused !== undefined && now - refused >= this.config.heartbeatIntervalMs)
        this.refusedAt.delete(key);
    }
  }

  /** A peer's heartbeat shows another membership version: the membership catches up (or helps). */
  private versionSeen(message: HeartbeatPing | HeartbeatPong): void {
    this.system
      .lookup(MEMBERSHIP_PATH)
      ?.send({ type: 'fd.version-seen', peer: message.from, version: message.version } as Message);
  }
}

/** Bounds the early pings remembered between two memberships (only authenticated peers ping). */
const MAX_EARLY_PINGS = 1024;

function sameKeys(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => k in b);
}
