import type { ElectionPeer, PeersChanged } from './election.js';
import { also, type ElectionStep, type Following, same, type TimerOp } from './election-decisions.js';
import { type ElectionEffect, log, report, send, sendTo } from './election-effects.js';
import { highestRanked, peerAt, rankOf, senderOf, successorsOf } from './peers.js';
import {
  type RingAck,
  type RingCirculation,
  type RingHeartbeat,
  type RingMessage,
  type RingVariant,
  ringTypes,
} from './ring-messages.js';

/**
 * The ring election's decisions as pure functions of (context, event, the seeded source of
 * ids): each returns the next context, its effects as data (send, log, report) and its timers
 * (hop, round and joined timeouts; the control events that move the machine). ring-machine.ts
 * wires them to states; its action `run` does the I/O. A step may draw several ids (a
 * circulation's, each hop's token) and draws them in the order the protocol uses them.
 */

/** A circulation as the machine keeps it, whatever the variant puts on the wire. */
export interface Circulation {
  readonly kind: 'election' | 'elected';
  readonly initiator: string;
  readonly id: number;
  /** `ring`: who handled the election (or chose the leader); empty for `ring-max`. */
  readonly live: readonly string[];
  /** `ring-max` election: the highest-ranked address seen. */
  readonly max: string;
  /** elected: the leader. */
  readonly leader: string;
}

interface PendingHop {
  readonly body: Circulation;
  readonly to: string;
  /** Successors still to try, in ring order, if `to` does not ack. */
  readonly rest: readonly string[];
}

export interface RingContext extends Following {
  /** The election this node started, while it runs. */
  readonly own: number | null;
  /** The highest-ranked election taken part in since the last result: lower ones are dropped. */
  readonly joined: { readonly initiator: string; readonly id: number } | null;
  /** Circulations already handled (`kind:initiator:id`, newest last), so duplicates die. */
  readonly seen: readonly string[];
  /** Hops awaiting their ack, by token. */
  readonly pending: Readonly<Record<string, PendingHop>>;
  /** `ring`: the live set the current leader was chosen from. */
  readonly live: readonly string[];
}

export type RingControl =
  | { readonly type: 'ring.hop-timeout'; readonly token: number }
  | { readonly type: 'ring.round-timeout' }
  | { readonly type: 'ring.forget-joined' }
  | { readonly type: 'ring.look' }
  | { readonly type: 'ring.follow' }
  | { readonly type: 'ring.lead' };

export type RingEvent = RingMessage | PeersChanged | RingControl;

export type RingStep = ElectionStep<RingContext, RingControl>;

export interface RingPolicy {
  readonly self: ElectionPeer;
  readonly variant: RingVariant;
  readonly replyTimeoutMs: number;
  readonly leaderTimeoutMs: number;
}

/** The seeded source: the next random id (circulation ids, hop tokens). */
export type NextId = () => number;

const SEEN_LIMIT = 64;
const ROUND_TIMER = 'ring-round';
const JOINED_TIMER = 'ring-joined';
const hopTimer = (token: number) => `ring-hop-${token}`;

export function initialRingContext(peers: readonly ElectionPeer[]): RingContext {
  return { peers, leader: null, own: null, joined: null, seen: [], pending: {}, live: [] };
}

const collectsSet = (policy: RingPolicy) => policy.variant === 'ring';
const keyOf = (b: Circulation) => `${b.kind}:${b.initiator}:${b.id}`;

/** A full circle may skip every node once; allow that plus a leader timeout. */
const roundMs = (policy: RingPolicy, c: RingContext) =>
  policy.leaderTimeoutMs + 2 * (c.peers.length + 1) * policy.replyTimeoutMs;

const patch = (s: RingStep, changes: Partial<RingContext>): RingStep =>
  also(s, { context: { ...s.context, ...changes } });
const effect = (s: RingStep, ...effects: ElectionEffect[]): RingStep => also(s, { effects });
const timers = (s: RingStep, ...ops: TimerOp<RingControl>[]): RingStep => also(s, { timers: ops });

function toWire(policy: RingPolicy, b: Circulation, token: number): RingCirculation {
  const hop = { from: policy.self.address, initiator: b.initiator, id: b.id, token };
  if (b.kind === 'election') {
    return collectsSet(policy)
      ? { type: 'election.ring.election', ...hop, live: b.live }
      : { type: 'election.ring-max.election', ...hop, max: b.max };
  }
  return collectsSet(policy)
    ? { type: 'election.ring.elected', ...hop, leader: b.leader, live: b.live }
    : { type: 'election.ring-max.elected', ...hop, leader: b.leader };
}

function fromWire(policy: RingPolicy, m: RingCirculation): Circulation {
  return {
    kind: m.type === ringTypes(policy.variant).election ? 'election' : 'elected',
    initiator: m.initiator,
    id: m.id,
    live: 'live' in m ? m.live : [],
    max: 'max' in m ? m.max : '',
    leader: 'leader' in m ? m.leader : '',
  };
}

const remember = (s: RingStep, key: string): RingStep =>
  patch(s, { seen: [...s.context.seen.filter((k) => k !== key), key].slice(-SEEN_LIMIT) });

const armRound = (policy: RingPolicy, s: RingStep): RingStep =>
  timers(
    s,
    { op: 'cancel', id: ROUND_TIMER },
    {
      op: 'raise',
      event: { type: 'ring.round-timeout' },
      id: ROUND_TIMER,
      delay: roundMs(policy, s.context),
    },
  );

/**
 * Takes part in an election. The mark outlives the result (elections started before it are
 * still going round and must die) but not much longer: a later, legitimate election of a lower
 * initiator must get through.
 */
const join = (policy: RingPolicy, s: RingStep, initiator: string, id: number): RingStep => {
  const joined = patch(s, { joined: { initiator, id } });
  return timers(
    joined,
    { op: 'cancel', id: JOINED_TIMER },
    {
      op: 'raise',
      event: { type: 'ring.forget-joined' },
      id: JOINED_TIMER,
      delay: roundMs(policy, joined.context),
    },
  );
};

/** Successors in ring order, up to and including the initiator (who closes the circle). */
function successors(policy: RingPolicy, c: RingContext, initiator: string): string[] {
  const ring = successorsOf(c.peers, policy.self.address)
    .filter((p) => p.address !== policy.self.address)
    .map((p) => p.address);
  const at = ring.indexOf(initiator);
  return at < 0 ? ring : ring.slice(0, at + 1);
}

/** Sends one hop to the first of `candidates`, to be skipped if it does not ack in time; undefined if none. */
function hop(
  policy: RingPolicy,
  s: RingStep,
  body: Circulation,
  candidates: readonly string[],
  nextId: NextId,
): RingStep | undefined {
  const [to, ...rest] = candidates;
  if (to === undefined) return undefined;
  const token = nextId();
  const sent = patch(s, { pending: { ...s.context.pending, [token]: { body, to, rest } } });
  return timers(effect(sent, ...sendTo(sent.context.peers, to, toWire(policy, body, token))), {
    op: 'raise',
    event: { type: 'ring.hop-timeout', token },
    id: hopTimer(token),
    delay: policy.replyTimeoutMs,
  });
}

function forward(policy: RingPolicy, s: RingStep, body: Circulation, nextId: NextId): RingStep {
  const sent = hop(policy, s, body, successors(policy, s.context, body.initiator), nextId);
  if (sent) return sent;
  // nobody else to pass it to: we are alone on our side of the ring
  return body.kind === 'election' ? complete(policy, s, body, nextId) : s;
}

function adopt(policy: RingPolicy, s: RingStep, leader: string, live: readonly string[]): RingStep {
  return timers(
    patch(s, { leader, own: null, live }),
    { op: 'cancel', id: ROUND_TIMER },
    { op: 'raise', event: { type: leader === policy.self.address ? 'ring.lead' : 'ring.follow' } },
  );
}

/** The election went round: pick the highest live rank and circulate the result. */
function complete(policy: RingPolicy, s: RingStep, body: Circulation, nextId: NextId): RingStep {
  const peers = s.context.peers;
  const self = policy.self.address;
  const set = collectsSet(policy);
  const leader = set
    ? (highestRanked(peers.filter((p) => body.live.includes(p.address)))?.address ?? self)
    : peerAt(peers, body.max)
      ? body.max
      : self;
  const elected: Circulation = {
    kind: 'elected',
    initiator: self,
    id: nextId(),
    live: set ? body.live : [],
    max: '',
    leader,
  };
  const circled = set ? ` of ${body.live.length} live` : '';
  const logged = effect(
    s,
    log(
      'election.ring.elected',
      { initiator: body.initiator, leader, live: set ? body.live.length : null },
      `${policy.variant}: election of ${body.initiator} went round, ${leader} leads${circled}`,
    ),
  );
  return forward(
    policy,
    adopt(policy, remember(logged, keyOf(elected)), leader, elected.live),
    elected,
    nextId,
  );
}

/** Starts an election of our own (logged with `reason`). */
export function startElection(policy: RingPolicy, c: RingContext, reason: string, nextId: NextId): RingStep {
  return electionFrom(policy, same(c), reason, nextId);
}

function electionFrom(policy: RingPolicy, s: RingStep, reason: string, nextId: NextId): RingStep {
  const self = policy.self.address;
  const id = nextId();
  const joined = patch(join(policy, patch(s, { own: id }), self, id), { leader: null });
  const body: Circulation = {
    kind: 'election',
    initiator: self,
    id,
    live: collectsSet(policy) ? [self] : [],
    max: self,
    leader: '',
  };
  const started = timers(
    effect(
      remember(joined, keyOf(body)),
      log('election.ring.started', { reason, id }, `${policy.variant}: starting an election (${reason})`),
    ),
    { op: 'raise', event: { type: 'ring.look' } },
  );
  return forward(policy, armRound(policy, started), body, nextId);
}

function onElection(policy: RingPolicy, s: RingStep, body: Circulation, nextId: NextId): RingStep {
  const self = policy.self;
  const c = s.context;
  if (body.initiator === self.address) {
    // back home: ours completes unless a higher election superseded it
    return c.own === body.id && c.joined?.initiator === self.address && c.joined.id === body.id
      ? complete(policy, s, body, nextId)
      : s;
  }
  if (c.seen.includes(keyOf(body))) return s;
  const j = c.joined;
  if (
    j !== null &&
    j.initiator !== body.initiator &&
    rankOf(c.peers, j.initiator) > rankOf(c.peers, body.initiator)
  )
    return s;
  // only initiators wait for the result: a forwarder with a live leader has nothing to retry
  const joined = remember(join(policy, s, body.initiator, body.id), keyOf(body));
  return forward(
    policy,
    joined,
    {
      ...body,
      live: collectsSet(policy) ? [...body.live.filter((a) => a !== self.address), self.address] : [],
      max: rankOf(joined.context.peers, body.max) > self.rank ? body.max : self.address,
    },
    nextId,
  );
}

function onElected(policy: RingPolicy, s: RingStep, body: Circulation, nextId: NextId): RingStep {
  const c = s.context;
  if (body.initiator === policy.self.address || c.seen.includes(keyOf(body))) return s;
  if (!peerAt(c.peers, body.leader)) return s;
  const remembered = remember(s, keyOf(body));
  if (rankOf(c.peers, body.leader) < policy.self.rank) {
    // the round skipped us (we were slow or not yet up): we are live and rank higher, so the
    // result is wrong; a round of our own corrects everyone
    return electionFrom(policy, remembered, `skipped by the election of ${body.leader}`, nextId);
  }
  return forward(policy, adopt(policy, remembered, body.leader, body.live), body, nextId);
}

// ---- the events ------------------------------------------------------------------------------

/** A circulation (election or elected) from one of the current peers: ack it, then take part. */
export function onCirculation(policy: RingPolicy, c: RingContext, e: RingEvent, nextId: NextId): RingStep {
  const types = ringTypes(policy.variant);
  if (senderOf(c.peers, e) === undefined || (e.type !== types.election && e.type !== types.elected))
    return same(c);
  const m = e as RingCirculation;
  const ack: RingAck = { type: types.ack, from: policy.self.address, token: m.token };
  const acked = effect(same(c), ...sendTo(c.peers, m.from, ack));
  const body = fromWire(policy, m);
  return body.kind === 'election'
    ? onElection(policy, acked, body, nextId)
    : onElected(policy, acked, body, nextId);
}

/** The successor took the hop over: stop waiting for it. */
export function onAck(policy: RingPolicy, c: RingContext, e: RingEvent): RingStep {
  if (senderOf(c.peers, e) === undefined || e.type !== ringTypes(policy.variant).ack) return same(c);
  const { token, from } = e as RingAck;
  if (c.pending[token]?.to !== from) return same(c);
  const { [token]: _acked, ...pending } = c.pending;
  return timers(same({ ...c, pending }), { op: 'cancel', id: hopTimer(token) });
}

/** A successor did not ack in time: skip it. */
export function onHopTimeout(policy: RingPolicy, c: RingContext, e: RingEvent, nextId: NextId): RingStep {
  if (e.type !== 'ring.hop-timeout') return same(c);
  const p = c.pending[e.token];
  if (!p) return same(c);
  const { [e.token]: _gone, ...pending } = c.pending;
  const s = same({ ...c, pending });
  const body = collectsSet(policy) ? { ...p.body, live: p.body.live.filter((a) => a !== p.to) } : p.body;
  // the initiator died with its election almost round: finish it for it
  if (body.kind === 'election' && p.to === body.initiator) return complete(policy, s, body, nextId);
  const sent = hop(policy, s, body, p.rest, nextId);
  if (sent) return sent;
  return body.kind === 'election' ? complete(policy, s, body, nextId) : s;
}

export function onHeartbeat(policy: RingPolicy, c: RingContext, e: RingEvent, nextId: NextId): RingStep {
  const from = senderOf(c.peers, e)?.address;
  if (from === undefined) return same(c);
  const self = policy.self;
  if (c.leader !== null && c.leader === from && c.leader !== self.address) {
    return timers(same(c), { op: 'raise', event: { type: 'ring.follow' } });
  }
  if (c.leader === self.address && rankOf(c.peers, from) > self.rank) {
    // two leaders (a healed partition): re-run the ring, the highest live rank wins
    return startElection(policy, c, `leader ${from} outranks us`, nextId);
  }
  if (c.leader === null && rankOf(c.peers, from) > self.rank) {
    // looking (say, just restarted) and a higher leader is alive: the ring would pick it
    // anyway (or someone higher still, whose election will reach us)
    return adopt(policy, same(c), from, []);
  }
  return same(c);
}

export function forgetJoined(c: RingContext): RingStep {
  return same({ ...c, joined: null });
}

/** New peers; an election if the leader is no longer among them. */
export function onPeers(policy: RingPolicy, c: RingContext, e: RingEvent, nextId: NextId): RingStep {
  if (e.type !== 'election.peers') return same(c);
  const next = { ...c, peers: e.peers };
  const leader = c.leader;
  return leader !== null && !peerAt(e.peers, leader)
    ? startElection(policy, next, `leader ${leader} removed`, nextId)
    : same(next);
}

export function reportView(policy: RingPolicy, c: RingContext): RingStep {
  const role = c.leader === null ? 'looking' : c.leader === policy.self.address ? 'leading' : 'following';
  return effect(same(c), report(role, c.leader));
}

export function heartbeat(policy: RingPolicy, c: RingContext): RingStep {
  const beat: RingHeartbeat = { type: ringTypes(policy.variant).heartbeat, from: policy.self.address };
  return effect(
    same(c),
    ...c.peers.filter((p) => p.address !== policy.self.address).map((p) => send(p, beat)),
  );
}
