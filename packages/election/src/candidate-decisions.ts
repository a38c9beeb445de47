import type {
  CandidateAlive,
  CandidateElected,
  CandidateHeartbeat,
  CandidateMessage,
  CandidateProbe,
} from './candidate-messages.js';
import type { ElectionPeer, PeersChanged } from './election.js';
import { type ElectionStep, type Following, same } from './election-decisions.js';
import { type ElectionEffect, log, report, send } from './election-effects.js';
import { byRankDescending, highestRanked, othersThan, peerAt, rankOf, senderOf } from './peers.js';

/**
 * The candidate/ordinary election's decisions as pure functions of (context, event): the
 * predicates its guards ask, its tie-breaking delay, and each step's next context with its
 * effects as data. candidate-machine.ts wires them to states; its action `run` does the I/O.
 */

export interface CandidateContext extends Following {
  /** Peers that answered this round's probes. */
  readonly answered: readonly string[];
  /** Someone else is probing: wait a reply timeout longer before starting our own round. */
  readonly deferred: boolean;
  /** No candidate answered: this round probes the ordinary peers ranked above us. */
  readonly fallback: boolean;
}

export type CandidateEvent = CandidateMessage | PeersChanged;

export type CandidateStep = ElectionStep<CandidateContext>;

export interface CandidatePolicy {
  readonly self: ElectionPeer;
  /** The highest-ranked this many peers are candidates. */
  readonly candidates: number;
  readonly tieBreakStepMs: number;
  readonly replyTimeoutMs: number;
}

export function initialCandidateContext(peers: readonly ElectionPeer[]): CandidateContext {
  return { peers, leader: null, answered: [], deferred: false, fallback: false };
}

const others = (policy: CandidatePolicy, c: CandidateContext) => othersThan(policy.self, c.peers);
const candidates = (policy: CandidatePolicy, c: CandidateContext) =>
  byRankDescending(c.peers).slice(0, policy.candidates);
const isCandidate = (policy: CandidatePolicy, c: CandidateContext) =>
  candidates(policy, c).some((p) => p.address === policy.self.address);
const effects = (context: CandidateContext, effects: ElectionEffect[]): CandidateStep => ({
  context,
  effects,
  timers: [],
});

/** Whom this round probes: the other candidates, or in the fallback round the higher ordinary peers. */
function probed(policy: CandidatePolicy, c: CandidateContext): ElectionPeer[] {
  const cands = candidates(policy, c);
  return c.fallback
    ? c.peers.filter((p) => p.rank > policy.self.rank && !cands.includes(p))
    : cands.filter((p) => p.address !== policy.self.address);
}

/** The highest live one this round: answered, or ourselves when eligible. */
function pick(policy: CandidatePolicy, c: CandidateContext): ElectionPeer | undefined {
  const live = c.answered.map((a) => peerAt(c.peers, a)).filter((p): p is ElectionPeer => p !== undefined);
  if (c.fallback || isCandidate(policy, c)) live.push(policy.self);
  return highestRanked(live);
}

/** δ = (maxRank - ownRank) * tieBreakStepMs, a reply timeout longer when someone else probes. */
export function tieBreakMs(policy: CandidatePolicy, c: CandidateContext): number {
  const maxRank = Math.max(...c.peers.map((p) => p.rank));
  const delta = (maxRank - policy.self.rank) * policy.tieBreakStepMs;
  return c.deferred ? delta + policy.replyTimeoutMs : delta;
}

// ---- what the context and the event say ------------------------------------------------------

export function fromPeer(c: CandidateContext, e: CandidateEvent): boolean {
  return senderOf(c.peers, e) !== undefined;
}

/** A heartbeat from a higher leader than the one we follow (or we follow none). */
export function fromBetterLeader(c: CandidateContext, e: CandidateEvent): boolean {
  return (senderOf(c.peers, e)?.rank ?? -1) > rankOf(c.peers, c.leader);
}

export function announcesSelf(policy: CandidatePolicy, c: CandidateContext, e: CandidateEvent): boolean {
  return (
    senderOf(c.peers, e) !== undefined &&
    e.type === 'election.candidate.elected' &&
    e.leader === policy.self.address
  );
}

export function announcesPeer(c: CandidateContext, e: CandidateEvent): boolean {
  return (
    senderOf(c.peers, e) !== undefined &&
    e.type === 'election.candidate.elected' &&
    peerAt(c.peers, e.leader) !== undefined
  );
}

export function announcesLower(policy: CandidatePolicy, c: CandidateContext, e: CandidateEvent): boolean {
  return e.type === 'election.candidate.elected' && rankOf(c.peers, e.leader) < policy.self.rank;
}

export function allAnswered(policy: CandidatePolicy, c: CandidateContext): boolean {
  return probed(policy, c).every((p) => c.answered.includes(p.address));
}

export function pickIsSelf(policy: CandidatePolicy, c: CandidateContext): boolean {
  return pick(policy, c) === policy.self;
}

export function hasPick(policy: CandidatePolicy, c: CandidateContext): boolean {
  return pick(policy, c) !== undefined;
}

// ---- steps -----------------------------------------------------------------------------------

export function clearLeader(c: CandidateContext): CandidateStep {
  return same({ ...c, leader: null });
}

export function settle(c: CandidateContext): CandidateStep {
  return same({ ...c, deferred: false, fallback: false });
}

export function defer(c: CandidateContext): CandidateStep {
  return same({ ...c, deferred: true });
}

export function answerAlive(policy: CandidatePolicy, c: CandidateContext, e: CandidateEvent): CandidateStep {
  const to = senderOf(c.peers, e);
  const alive: CandidateAlive = { type: 'election.candidate.alive', from: policy.self.address };
  return effects(c, to ? [send(to, alive)] : []);
}

/** Probes this round's peers (logged unless it is the fallback round). */
export function probe(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  const targets = probed(policy, c);
  const message: CandidateProbe = { type: 'election.candidate.probe', from: policy.self.address };
  return effects({ ...c, answered: [], deferred: false }, [
    ...targets.map((p) => send(p, message)),
    ...(c.fallback
      ? []
      : [
          log(
            'election.candidate.started',
            { probed: targets.length },
            `candidate: election started (${targets.length} candidates asked)`,
          ),
        ]),
  ]);
}

export function noteAnswer(c: CandidateContext, e: CandidateEvent): CandidateStep {
  const p = senderOf(c.peers, e);
  return p && !c.answered.includes(p.address)
    ? same({ ...c, answered: [...c.answered, p.address] })
    : same(c);
}

export function startFallback(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  return effects({ ...c, fallback: true }, [
    log(
      'election.candidate.fallback',
      { higher: probed(policy, { ...c, fallback: true }).length },
      'candidate: no candidate alive; falling back to the highest-ranked live peer',
    ),
  ]);
}

/** Tells every other peer whom this round chose, and follows it. */
export function announce(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  const chosen = pick(policy, c)!;
  const message: CandidateElected = {
    type: 'election.candidate.elected',
    from: policy.self.address,
    leader: chosen.address,
  };
  return effects({ ...c, leader: chosen.address }, [
    ...others(policy, c).map((p) => send(p, message)),
    log(
      'election.candidate.announced',
      { leader: chosen.address, fallback: c.fallback },
      `candidate: announced ${chosen.address}`,
    ),
  ]);
}

export function followSender(c: CandidateContext, e: CandidateEvent): CandidateStep {
  return e.type === 'election.candidate.heartbeat' ? same({ ...c, leader: e.from }) : same(c);
}

export function followAnnounced(c: CandidateContext, e: CandidateEvent): CandidateStep {
  return e.type === 'election.candidate.elected' ? same({ ...c, leader: e.leader }) : same(c);
}

export function becomeLeader(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  return same({ ...c, leader: policy.self.address });
}

export function reportLeading(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  return effects(c, [
    report('leading', policy.self.address),
    log('election.candidate.won', {}, 'candidate: leading'),
  ]);
}

export function heartbeat(policy: CandidatePolicy, c: CandidateContext): CandidateStep {
  const beat: CandidateHeartbeat = { type: 'election.candidate.heartbeat', from: policy.self.address };
  return effects(
    c,
    others(policy, c).map((p) => send(p, beat)),
  );
}
