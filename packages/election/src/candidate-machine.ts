import type { Message } from '@doyen/core';
import { assign, setup } from 'xstate';
import type {
  CandidateAlive,
  CandidateElected,
  CandidateHeartbeat,
  CandidateMessage,
  CandidateProbe,
} from './candidate-messages.js';
import type { ElectionDeps, ElectionPeer, PeersChanged } from './election.js';
import { byRankDescending, highestRanked, peerAt } from './peers.js';

export interface CandidateContext {
  readonly peers: readonly ElectionPeer[];
  /** Whom this node follows (itself while leading); null while looking. */
  readonly leader: string | null;
  /** Peers that answered this round's probes. */
  readonly answered: readonly string[];
  /** Someone else is probing: wait a reply timeout longer before starting our own round. */
  readonly deferred: boolean;
  /** No candidate answered: this round probes the ordinary peers ranked above us. */
  readonly fallback: boolean;
}

type CandidateEvent = CandidateMessage | PeersChanged;

/**
 * The candidate/ordinary optimisation of the bully election (MURSHED12):
 * waiting (tie-break δ) -> probing -> deciding -> following | leading.
 * - The top `candidates` ranks are candidates. A node without a leader waits
 *   δ = (maxRank - ownRank) * tieBreakStepMs, so the highest-ranked survivor usually probes
 *   first and alone; unless someone announced meanwhile, it probes the candidates, picks the
 *   highest that answered (itself if it is one) and announces it to everyone. Messages per
 *   election: the probes and answers grow with the candidates, only the announcement with N.
 * - No candidate alive: a second round probes the ordinary peers ranked above us and picks the
 *   highest responder, or ourselves.
 * - No quorum: each partition side elects its own leader; leaders heartbeat every peer, and a
 *   heartbeat from a higher leader than the one followed wins, so after a heal the highest leads.
 */
export function createCandidateMachine(deps: ElectionDeps) {
  const { self, options, system } = deps;
  const { timing } = options;
  const log = (event: string, fields: Record<string, unknown>, msg: string) =>
    system.logger.info({ event, algorithm: 'candidate', ...fields }, msg);
  const send = (to: ElectionPeer, message: CandidateMessage) => deps.send(to, message as unknown as Message);
  const rankOf = (c: CandidateContext, address: string | null) =>
    address === null ? -1 : (peerAt(c.peers, address)?.rank ?? -1);
  const others = (c: CandidateContext) => c.peers.filter((p) => p.address !== self.address);
  const candidates = (c: CandidateContext) => byRankDescending(c.peers).slice(0, options.candidates);
  const isCandidate = (c: CandidateContext) => candidates(c).some((p) => p.address === self.address);
  /** Whom this round probes: the other candidates, or in the fallback round the higher ordinary peers. */
  const probed = (c: CandidateContext) => {
    const cands = candidates(c);
    return c.fallback
      ? c.peers.filter((p) => p.rank > self.rank && !cands.includes(p))
      : cands.filter((p) => p.address !== self.address);
  };
  /** The highest live one this round: answered, or ourselves when eligible. */
  const pick = (c: CandidateContext) => {
    const live = c.answered.map((a) => peerAt(c.peers, a)).filter((p): p is ElectionPeer => p !== undefined);
    if (c.fallback || isCandidate(c)) live.push(self);
    return highestRanked(live);
  };
  const report = (role: 'looking' | 'following' | 'leading', leader: string | null) =>
    deps.report({ role, leader: leader ?? undefined, term: 0, acting: role === 'leading' });
  /** Sender of a network message, if it is one of the current peers (others are ignored). */
  const sender = (c: CandidateContext, e: CandidateEvent) =>
    e.type === 'election.peers' ? undefined : peerAt(c.peers, e.from);

  return setup({
    types: { context: {} as CandidateContext, events: {} as CandidateEvent },
    delays: {
      tieBreak: ({ context }) => {
        const maxRank = Math.max(...context.peers.map((p) => p.rank));
        const delta = (maxRank - self.rank) * timing.tieBreakStepMs;
        return context.deferred ? delta + timing.replyTimeoutMs : delta;
      },
      reply: timing.replyTimeoutMs,
      leaderTimeout: timing.leaderTimeoutMs,
      heartbeat: timing.heartbeatIntervalMs,
    },
    guards: {
      fromPeer: ({ context, event }) => sender(context, event) !== undefined,
      fromLeader: ({ context, event }) =>
        sender(context, event) !== undefined &&
        event.type !== 'election.peers' &&
        event.from === context.leader,
      /** A heartbeat from a higher leader than the one we follow (or we follow none). */
      fromBetterLeader: ({ context, event }) =>
        (sender(context, event)?.rank ?? -1) > rankOf(context, context.leader),
      announcesSelf: ({ context, event }) =>
        sender(context, event) !== undefined &&
        event.type === 'election.candidate.elected' &&
        event.leader === self.address,
      announcesPeer: ({ context, event }) =>
        sender(context, event) !== undefined &&
        event.type === 'election.candidate.elected' &&
        peerAt(context.peers, event.leader) !== undefined,
      announcesLower: ({ context, event }) =>
        event.type === 'election.candidate.elected' && rankOf(context, event.leader) < self.rank,
      allAnswered: ({ context }) => probed(context).every((p) => context.answered.includes(p.address)),
      pickIsSelf: ({ context }) => pick(context) === self,
      hasPick: ({ context }) => pick(context) !== undefined,
      leaderRemoved: ({ context, event }) =>
        event.type === 'election.peers' &&
        context.leader !== null &&
        !event.peers.some((p) => p.address === context.leader),
    },
    actions: {
      setPeers: assign(({ event }) => (event.type === 'election.peers' ? { peers: event.peers } : {})),
      reportLooking: () => report('looking', null),
      reportFollowing: ({ context }) => report('following', context.leader),
      clearLeader: assign({ leader: null }),
      settle: assign({ deferred: false, fallback: false }),
      defer: assign({ deferred: true }),
      answerAlive: ({ context, event }) => {
        const to = sender(context, event);
        const alive: CandidateAlive = { type: 'election.candidate.alive', from: self.address };
        if (to) send(to, alive);
      },
      probe: assign(({ context }) => {
        const targets = probed(context);
        const probe: CandidateProbe = { type: 'election.candidate.probe', from: self.address };
        for (const p of targets) send(p, probe);
        if (!context.fallback) {
          log(
            'election.candidate.started',
            { probed: targets.length },
            `candidate: election started (${targets.length} candidates asked)`,
          );
        }
        return { answered: [], deferred: false };
      }),
      noteAnswer: assign(({ context, event }) => {
        const p = sender(context, event);
        return p && !context.answered.includes(p.address)
          ? { answered: [...context.answered, p.address] }
          : {};
      }),
      startFallback: assign(({ context }) => {
        log(
          'election.candidate.fallback',
          { higher: probed({ ...context, fallback: true }).length },
          'candidate: no candidate alive; falling back to the highest-ranked live peer',
        );
        return { fallback: true };
      }),
      /** Tells every other peer whom this round chose, and follows it. */
      announce: assign(({ context }) => {
        const chosen = pick(context)!;
        const message: CandidateElected = {
          type: 'election.candidate.elected',
          from: self.address,
          leader: chosen.address,
        };
        for (const p of others(context)) send(p, message);
        log(
          'election.candidate.announced',
          { leader: chosen.address, fallback: context.fallback },
          `candidate: announced ${chosen.address}`,
        );
        return { leader: chosen.address };
      }),
      followSender: assign(({ event }) =>
        event.type === 'election.candidate.heartbeat' ? { leader: event.from } : {},
      ),
      followAnnounced: assign(({ event }) =>
        event.type === 'election.candidate.elected' ? { leader: event.leader } : {},
      ),
      becomeLeader: assign({ leader: self.address }),
      reportLeading: () => {
        report('leading', self.address);
        log('election.candidate.won', {}, 'candidate: leading');
      },
      heartbeat: ({ context }) => {
        const beat: CandidateHeartbeat = { type: 'election.candidate.heartbeat', from: self.address };
        for (const p of others(context)) send(p, beat);
      },
    },
  }).createMachine({
    id: 'candidate',
    context: { peers: options.peers, leader: null, answered: [], deferred: false, fallback: false },
    initial: 'waiting',
    on: {
      'election.peers': { actions: 'setPeers' },
      'election.candidate.probe': { guard: 'fromPeer', actions: 'answerAlive' },
      // The latest announcement wins (a leader ignores lower ones: its heartbeats correct them).
      'election.candidate.elected': [
        { guard: 'announcesSelf', target: '.leading' },
        { guard: 'announcesPeer', target: '.following', actions: 'followAnnounced' },
      ],
      'election.candidate.heartbeat': [
        { guard: 'fromLeader', target: '.following' },
        { guard: 'fromBetterLeader', target: '.following', actions: 'followSender' },
      ],
    },
    states: {
      /** Tie-breaking delay: higher ranks start sooner; an announcement or heartbeat ends it. */
      waiting: {
        entry: ['clearLeader', 'reportLooking'],
        on: {
          'election.candidate.probe': {
            guard: 'fromPeer',
            target: 'waiting',
            reenter: true,
            actions: ['answerAlive', 'defer'],
          },
        },
        after: { tieBreak: 'probing' },
      },
      probing: {
        entry: 'probe',
        always: { guard: 'allAnswered', target: 'deciding' },
        on: { 'election.candidate.alive': { actions: 'noteAnswer' } },
        after: { reply: 'deciding' },
      },
      deciding: {
        always: [
          { guard: 'pickIsSelf', target: 'leading', actions: 'announce' },
          { guard: 'hasPick', target: 'following', actions: 'announce' },
          { target: 'probing', actions: 'startFallback' },
        ],
      },
      following: {
        entry: ['settle', 'reportFollowing'],
        on: {
          'election.peers': { guard: 'leaderRemoved', target: 'waiting', actions: 'setPeers' },
        },
        after: { leaderTimeout: 'waiting' },
      },
      leading: {
        entry: ['settle', 'becomeLeader', 'reportLeading'],
        on: {
          // Already leading: nothing to do; a lower announcement is corrected by our heartbeats.
          'election.candidate.elected': [{ guard: 'announcesSelf' }, { guard: 'announcesLower' }],
        },
        initial: 'beating',
        states: {
          beating: { after: { heartbeat: { target: 'beating', reenter: true, actions: 'heartbeat' } } },
        },
      },
    },
  });
}
