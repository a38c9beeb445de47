import { setup } from 'xstate';
import {
  ackLeader,
  announce,
  answerAlive,
  answerElected,
  askAlternative,
  type BullyContext,
  type BullyEvent,
  type BullyPolicy,
  type BullyStep,
  dropAlternative,
  failoverAccepted,
  follow,
  fromHigher,
  fromLower,
  hasResponder,
  heartbeat,
  heartbeatFromBetterLeader,
  initialBullyContext,
  noAlternative,
  noHigherPeer,
  noteAck,
  noteResponder,
  planFailover,
  reassert,
  selfIsNext,
  sendTakeover,
  startLeading,
  startRound,
  takeFailover,
} from './bully-decisions.js';
import type { ElectionDeps } from './election.js';
import { reportFollowing, reportLooking, takePeers } from './election-decisions.js';
import { followingGuards, runElectionEffect, stepOf } from './election-machine.js';

export type { BullyContext } from './bully-decisions.js';

/**
 * The modified bully election (KORDAFSHARI05) with next-in-line failover (GHOLIPOUR09):
 * nextInLine -> failingOver | electing -> awaitingElected -> following | leading.
 * - A follower whose leader went silent for leaderTimeoutMs asks the highest alternative of the
 *   leader's failover list to take over (or takes over itself when it is that alternative); only
 *   when no alternative answers does it run the full round: Election to every higher peer,
 *   Alive back, then Takeover to the highest responder or, if none answered, lead.
 * - Leaders never step down on silence (no quorum): under a partition each side ends up with its
 *   own leader. Leaders heartbeat every peer, so after a heal the higher one's heartbeats make the
 *   lower one yield, and a leader hearing a lower one re-asserts with Elected.
 * Decisions are the pure functions of bully-decisions.ts; the action `run` executes their effects.
 */
export function createBullyMachine(deps: ElectionDeps) {
  const { self, options } = deps;
  const { timing } = options;
  const policy: BullyPolicy = {
    self,
    failoverListSize: options.failoverListSize,
    missRounds: Math.ceil(timing.leaderTimeoutMs / timing.heartbeatIntervalMs),
  };

  const machineSetup = setup({
    types: { context: {} as BullyContext, events: {} as BullyEvent },
    delays: {
      reply: timing.replyTimeoutMs,
      // The takeover target leads as soon as it reads Takeover; allow the round trip and a margin.
      elected: 3 * timing.replyTimeoutMs,
      leaderTimeout: timing.leaderTimeoutMs,
      heartbeat: timing.heartbeatIntervalMs,
    },
    guards: {
      ...followingGuards,
      fromLower: ({ context, event }) => fromLower(policy, context, event),
      fromHigher: ({ context, event }) => fromHigher(policy, context, event),
      heartbeatFromBetterLeader: ({ context, event }) => heartbeatFromBetterLeader(policy, context, event),
      failoverAccepted: ({ context, event }) => failoverAccepted(context, event),
      hasResponder: ({ context }) => hasResponder(context),
      noHigherPeer: ({ context }) => noHigherPeer(policy, context),
      noAlternative: ({ context }) => noAlternative(context),
      selfIsNext: ({ context }) => selfIsNext(policy, context),
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: 'bully' }),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (decide: (context: BullyContext, event: BullyEvent) => BullyStep) =>
    machineSetup.enqueueActions(stepOf(decide));
  const setPeers = apply(takePeers);
  const withPolicy = (decide: (p: BullyPolicy, c: BullyContext, e: BullyEvent) => BullyStep) =>
    apply((c, e) => decide(policy, c, e));

  return machineSetup.createMachine({
    id: 'bully',
    context: initialBullyContext(options.peers),
    initial: 'electing',
    on: {
      'election.peers': { actions: setPeers },
      'election.bully.election': { guard: 'fromLower', actions: withPolicy(answerAlive) },
      // We are the highest responder someone heard: lead (a live higher leader would re-assert).
      'election.bully.takeover': { guard: 'fromLower', target: '.leading' },
      'election.bully.failover': { guard: 'failoverAccepted', target: '.leading' },
      // The latest announcement of a higher peer wins; lower ones are ignored unless we lead.
      'election.bully.elected': { guard: 'fromHigher', target: '.following', actions: withPolicy(follow) },
      'election.bully.heartbeat': [
        {
          guard: 'fromLeader',
          target: '.following',
          actions: [apply(takeFailover), withPolicy(ackLeader)],
        },
        { guard: 'heartbeatFromBetterLeader', target: '.following', actions: withPolicy(follow) },
      ],
    },
    states: {
      /** The leader went silent: pick the failover alternative to try, or the full round. */
      nextInLine: {
        always: [
          { guard: 'noAlternative', target: 'electing' },
          { guard: 'selfIsNext', target: 'leading' },
          { target: 'failingOver' },
        ],
      },
      failingOver: {
        entry: [apply(reportLooking), withPolicy(askAlternative)],
        after: { reply: { target: 'nextInLine', actions: apply(dropAlternative) } },
      },
      electing: {
        entry: [apply(reportLooking), withPolicy(startRound)],
        always: { guard: 'noHigherPeer', target: 'leading' },
        on: {
          'election.bully.alive': { actions: withPolicy(noteResponder) },
          // Someone higher answered us: it, not we, should take over.
          'election.bully.takeover': { guard: 'hasResponder' },
        },
        after: {
          reply: [
            { guard: 'hasResponder', target: 'awaitingElected', actions: withPolicy(sendTakeover) },
            { target: 'leading' },
          ],
        },
      },
      awaitingElected: {
        // Someone higher answered; if its Elected never comes, start over.
        on: { 'election.bully.takeover': {} },
        after: { elected: 'electing' },
      },
      following: {
        entry: apply(reportFollowing),
        on: {
          'election.peers': {
            guard: 'leaderRemoved',
            target: 'nextInLine',
            actions: [setPeers, withPolicy(planFailover)],
          },
        },
        after: { leaderTimeout: { target: 'nextInLine', actions: withPolicy(planFailover) } },
      },
      leading: {
        entry: [withPolicy(startLeading), withPolicy(announce)],
        on: {
          'election.bully.takeover': { guard: 'fromLower', actions: withPolicy(answerElected) },
          'election.bully.failover': { guard: 'fromLower', actions: withPolicy(answerElected) },
          'election.bully.elected': { guard: 'fromLower', actions: withPolicy(reassert) },
          'election.bully.heartbeat': { guard: 'fromLower', actions: withPolicy(reassert) },
          'election.bully.heartbeat-ack': { actions: apply(noteAck) },
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
