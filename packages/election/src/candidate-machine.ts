import { setup } from 'xstate';
import {
  allAnswered,
  announce,
  announcesLower,
  announcesPeer,
  announcesSelf,
  answerAlive,
  becomeLeader,
  type CandidateContext,
  type CandidateEvent,
  type CandidatePolicy,
  type CandidateStep,
  clearLeader,
  defer,
  followAnnounced,
  followSender,
  fromBetterLeader,
  fromPeer,
  hasPick,
  heartbeat,
  initialCandidateContext,
  noteAnswer,
  pickIsSelf,
  probe,
  reportLeading,
  settle,
  startFallback,
  tieBreakMs,
} from './candidate-decisions.js';
import type { ElectionDeps } from './election.js';
import { reportFollowing, reportLooking, takePeers } from './election-decisions.js';
import { followingGuards, runElectionEffect, stepOf } from './election-machine.js';

export type { CandidateContext } from './candidate-decisions.js';

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
 * Decisions are the pure functions of candidate-decisions.ts; the action `run` executes their effects.
 */
export function createCandidateMachine(deps: ElectionDeps) {
  const { self, options } = deps;
  const { timing } = options;
  const policy: CandidatePolicy = {
    self,
    candidates: options.candidates,
    tieBreakStepMs: timing.tieBreakStepMs,
    replyTimeoutMs: timing.replyTimeoutMs,
  };

  const machineSetup = setup({
    types: { context: {} as CandidateContext, events: {} as CandidateEvent },
    delays: {
      tieBreak: ({ context }) => tieBreakMs(policy, context),
      reply: timing.replyTimeoutMs,
      leaderTimeout: timing.leaderTimeoutMs,
      heartbeat: timing.heartbeatIntervalMs,
    },
    guards: {
      ...followingGuards,
      fromPeer: ({ context, event }) => fromPeer(context, event),
      fromBetterLeader: ({ context, event }) => fromBetterLeader(context, event),
      announcesSelf: ({ context, event }) => announcesSelf(policy, context, event),
      announcesPeer: ({ context, event }) => announcesPeer(context, event),
      announcesLower: ({ context, event }) => announcesLower(policy, context, event),
      allAnswered: ({ context }) => allAnswered(policy, context),
      pickIsSelf: ({ context }) => pickIsSelf(policy, context),
      hasPick: ({ context }) => hasPick(policy, context),
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: 'candidate' }),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (decide: (context: CandidateContext, event: CandidateEvent) => CandidateStep) =>
    machineSetup.enqueueActions(stepOf(decide));
  const withPolicy = (
    decide: (p: CandidatePolicy, c: CandidateContext, e: CandidateEvent) => CandidateStep,
  ) => apply((c, e) => decide(policy, c, e));
  const setPeers = apply(takePeers);
  const answer = withPolicy(answerAlive);

  return machineSetup.createMachine({
    id: 'candidate',
    context: initialCandidateContext(options.peers),
    initial: 'waiting',
    on: {
      'election.peers': { actions: setPeers },
      'election.candidate.probe': { guard: 'fromPeer', actions: answer },
      // The latest announcement wins (a leader ignores lower ones: its heartbeats correct them).
      'election.candidate.elected': [
        { guard: 'announcesSelf', target: '.leading' },
        { guard: 'announcesPeer', target: '.following', actions: apply(followAnnounced) },
      ],
      'election.candidate.heartbeat': [
        { guard: 'fromLeader', target: '.following' },
        { guard: 'fromBetterLeader', target: '.following', actions: apply(followSender) },
      ],
    },
    states: {
      /** Tie-breaking delay: higher ranks start sooner; an announcement or heartbeat ends it. */
      waiting: {
        entry: [apply(clearLeader), apply(reportLooking)],
        on: {
          'election.candidate.probe': {
            guard: 'fromPeer',
            target: 'waiting',
            reenter: true,
            actions: [answer, apply(defer)],
          },
        },
        after: { tieBreak: 'probing' },
      },
      probing: {
        entry: withPolicy(probe),
        always: { guard: 'allAnswered', target: 'deciding' },
        on: { 'election.candidate.alive': { actions: apply(noteAnswer) } },
        after: { reply: 'deciding' },
      },
      deciding: {
        always: [
          { guard: 'pickIsSelf', target: 'leading', actions: withPolicy(announce) },
          { guard: 'hasPick', target: 'following', actions: withPolicy(announce) },
          { target: 'probing', actions: withPolicy(startFallback) },
        ],
      },
      following: {
        entry: [apply(settle), apply(reportFollowing)],
        on: {
          'election.peers': { guard: 'leaderRemoved', target: 'waiting', actions: setPeers },
        },
        after: { leaderTimeout: 'waiting' },
      },
      leading: {
        entry: [apply(settle), withPolicy(becomeLeader), withPolicy(reportLeading)],
        on: {
          // Already leading: nothing to do; a lower announcement is corrected by our heartbeats.
          'election.candidate.elected': [{ guard: 'announcesSelf' }, { guard: 'announcesLower' }],
        },
        initial: 'beating',
        states: {
          beating: {
            after: { heartbeat: { target: 'beating', reenter: true, actions: withPolicy(heartbeat) } },
          },
        },
      },
    },
  });
}
