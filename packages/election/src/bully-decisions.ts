import type {
  BullyAlive,
  BullyElected,
  BullyElection,
  BullyFailover,
  BullyHeartbeat,
  BullyHeartbeatAck,
  BullyMessage,
  BullyTakeover,
} from './bully-messages.js';
import type { ElectionPeer, PeersChanged } from './election.js';
import { type ElectionStep, type Following, same } from './election-decisions.js';
import { type ElectionEffect, log, report, send, sendTo } from './election-effects.js';
import { byRankDescending, othersThan, peerAt, rankOf, senderOf } from './peers.js';

/**
 * The bully election's decisions as pure functions of (context, event): the predicates its
 * guards ask and each step's next context with its effects as data. bully-machine.ts wires them
 * to states and delays; its action `run` sends, logs and reports.
 */

export interface BullyContext extends Following {
  /** The followed leader's next-in-line list, as last heard. */
  readonly failover: readonly string[];
  /** Failover: the leader being replaced and the alternatives still to try, highest first. */
  readonly failed: string | null;
  readonly alternatives: readonly string[];
  /** Full round: the highest-ranked peer that answered Alive. */
  readonly responder: string | null;
  /** Leading: heartbeat round of each peer's last ack, and the current round. */
  readonly acks: Readonly<Record<string, number>>;
  readonly round: number;
}

export type BullyEvent = BullyMessage | PeersChanged;

export type BullyStep = ElectionStep<BullyContext>;

export interface BullyPolicy {
  readonly self: ElectionPeer;
  readonly failoverListSize: number;
  /** Heartbeat rounds a peer may miss and still count as alive for the failover list. */
  readonly missRounds: number;
}

export function initialBullyContext(peers: readonly ElectionPeer[]): BullyContext {
  return {
    peers,
    leader: null,
    failover: [],
    failed: null,
    alternatives: [],
    responder: null,
    acks: {},
    round: 0,
  };
}

const others = (policy: BullyPolicy, c: BullyContext) => othersThan(policy.self, c.peers);
const higher = (policy: BullyPolicy, c: BullyContext) => c.peers.filter((p) => p.rank > policy.self.rank);
const effects = (context: BullyContext, effects: ElectionEffect[]): BullyStep => ({
  context,
  effects,
  timers: [],
});

function failoverList(policy: BullyPolicy, c: BullyContext): string[] {
  return byRankDescending(others(policy, c))
    .filter((p) => (c.acks[p.address] ?? Number.NEGATIVE_INFINITY) >= c.round - policy.missRounds)
    .slice(0, policy.failoverListSize)
    .map((p) => p.address);
}

function elected(policy: BullyPolicy, c: BullyContext): BullyElected {
  return { type: 'election.bully.elected', from: policy.self.address, failover: failoverList(policy, c) };
}

// ---- what the context and the event say ------------------------------------------------------

export function fromLower(policy: BullyPolicy, c: BullyContext, e: BullyEvent): boolean {
  const p = senderOf(c.peers, e);
  return p !== undefined && p.rank < policy.self.rank;
}

export function fromHigher(policy: BullyPolicy, c: BullyContext, e: BullyEvent): boolean {
  const p = senderOf(c.peers, e);
  return p !== undefined && p.rank > policy.self.rank;
}

/** A heartbeat from a higher leader than the one we follow (or we follow none). */
export function heartbeatFromBetterLeader(policy: BullyPolicy, c: BullyContext, e: BullyEvent): boolean {
  const p = senderOf(c.peers, e);
  return p !== undefined && p.rank > policy.self.rank && p.rank > rankOf(c.peers, c.leader);
}

/** Take over for `failed` unless we follow someone else (then the asker's view is stale). */
export function failoverAccepted(c: BullyContext, e: BullyEvent): boolean {
  return (
    senderOf(c.peers, e) !== undefined &&
    e.type === 'election.bully.failover' &&
    (c.leader === null || c.leader === e.failed)
  );
}

export function hasResponder(c: BullyContext): boolean {
  return c.responder !== null;
}

export function noHigherPeer(policy: BullyPolicy, c: BullyContext): boolean {
  return higher(policy, c).length === 0;
}

export function noAlternative(c: BullyContext): boolean {
  return c.alternatives.length === 0;
}

export function selfIsNext(policy: BullyPolicy, c: BullyContext): boolean {
  return c.alternatives[0] === policy.self.address;
}

// ---- steps -----------------------------------------------------------------------------------

/** Follow the sender of Elected / a heartbeat; ack so it counts us alive. */
export function follow(policy: BullyPolicy, c: BullyContext, e: BullyEvent): BullyStep {
  if (e.type !== 'election.bully.elected' && e.type !== 'election.bully.heartbeat') return same(c);
  const ack: BullyHeartbeatAck = { type: 'election.bully.heartbeat-ack', from: policy.self.address };
  return effects(
    { ...c, leader: e.from, failover: e.failover.filter((a) => peerAt(c.peers, a)) },
    sendTo(c.peers, e.from, ack),
  );
}

/** The alternatives to try, highest first: the failed leader's list, none ranked below us. */
export function planFailover(policy: BullyPolicy, c: BullyContext): BullyStep {
  const failed = c.leader;
  const alternatives = byRankDescending(
    c.failover
      .filter((a) => a !== failed)
      .map((a) => peerAt(c.peers, a))
      .filter((p): p is ElectionPeer => p !== undefined && p.rank >= policy.self.rank),
  ).map((p) => p.address);
  return effects({ ...c, failed, alternatives, leader: null }, [
    log(
      'election.bully.leader-lost',
      { failed, alternatives },
      alternatives.length > 0
        ? `bully: leader ${failed ?? 'none'} lost; failing over to ${alternatives[0]}`
        : `bully: leader ${failed ?? 'none'} lost; starting an election`,
    ),
  ]);
}

export function dropAlternative(c: BullyContext): BullyStep {
  return same({ ...c, alternatives: c.alternatives.slice(1) });
}

export function askAlternative(policy: BullyPolicy, c: BullyContext): BullyStep {
  const ask: BullyFailover = { type: 'election.bully.failover', from: policy.self.address, failed: c.failed };
  return effects(c, sendTo(c.peers, c.alternatives[0] ?? null, ask));
}

/** The full round: Election to every higher peer. */
export function startRound(policy: BullyPolicy, c: BullyContext): BullyStep {
  const ask: BullyElection = { type: 'election.bully.election', from: policy.self.address };
  const targets = higher(policy, c);
  return effects({ ...c, responder: null }, [
    ...targets.map((p) => send(p, ask)),
    ...(targets.length > 0
      ? [
          log(
            'election.bully.started',
            { asked: targets.length },
            `bully: election started (${targets.length} higher)`,
          ),
        ]
      : []),
  ]);
}

export function noteResponder(policy: BullyPolicy, c: BullyContext, e: BullyEvent): BullyStep {
  const p = senderOf(c.peers, e);
  if (!p || p.rank <= policy.self.rank || p.rank <= rankOf(c.peers, c.responder)) return same(c);
  return same({ ...c, responder: p.address });
}

export function sendTakeover(policy: BullyPolicy, c: BullyContext): BullyStep {
  const takeover: BullyTakeover = { type: 'election.bully.takeover', from: policy.self.address };
  return effects(c, sendTo(c.peers, c.responder, takeover));
}

export function answerAlive(policy: BullyPolicy, c: BullyContext, e: BullyEvent): BullyStep {
  const to = senderOf(c.peers, e);
  const alive: BullyAlive = {
    type: 'election.bully.alive',
    from: policy.self.address,
    rank: policy.self.rank,
    leader: c.leader,
  };
  return effects(c, to ? [send(to, alive)] : []);
}

export function startLeading(policy: BullyPolicy, c: BullyContext): BullyStep {
  // Optimistic: everyone counts as alive until it misses `missRounds` heartbeats.
  const acks: Record<string, number> = {};
  for (const p of others(policy, c)) acks[p.address] = 0;
  return same({
    ...c,
    leader: policy.self.address,
    acks,
    round: 0,
    failover: [],
    alternatives: [],
    failed: null,
  });
}

export function announce(policy: BullyPolicy, c: BullyContext): BullyStep {
  const message = elected(policy, c);
  return effects(c, [
    ...others(policy, c).map((p) => send(p, message)),
    report('leading', policy.self.address),
    log('election.bully.won', { failover: message.failover }, 'bully: elected leader'),
  ]);
}

/** Leading and told by a lower peer (Takeover, Failover): say who leads. */
export function answerElected(policy: BullyPolicy, c: BullyContext, e: BullyEvent): BullyStep {
  const to = senderOf(c.peers, e);
  return effects(c, to ? [send(to, elected(policy, c))] : []);
}

/** Leading and a lower peer claims to lead: tell everyone again. */
export function reassert(policy: BullyPolicy, c: BullyContext): BullyStep {
  const message = elected(policy, c);
  return effects(
    c,
    others(policy, c).map((p) => send(p, message)),
  );
}

export function heartbeat(policy: BullyPolicy, c: BullyContext): BullyStep {
  const round = c.round + 1;
  const beat: BullyHeartbeat = {
    type: 'election.bully.heartbeat',
    from: policy.self.address,
    failover: failoverList(policy, { ...c, round }),
  };
  return effects(
    { ...c, round },
    others(policy, c).map((p) => send(p, beat)),
  );
}

export function noteAck(c: BullyContext, e: BullyEvent): BullyStep {
  const p = senderOf(c.peers, e);
  return p ? same({ ...c, acks: { ...c.acks, [p.address]: c.round } }) : same(c);
}

export function ackLeader(policy: BullyPolicy, c: BullyContext): BullyStep {
  const ack: BullyHeartbeatAck = { type: 'election.bully.heartbeat-ack', from: policy.self.address };
  return effects(c, sendTo(c.peers, c.leader, ack));
}

export function takeFailover(c: BullyContext, e: BullyEvent): BullyStep {
  return e.type === 'election.bully.heartbeat' || e.type === 'election.bully.elected'
    ? same({ ...c, failover: e.failover.filter((a) => peerAt(c.peers, a)) })
    : same(c);
}
