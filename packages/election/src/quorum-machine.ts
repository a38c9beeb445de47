import { enqueueDecision, type Message } from '@doyen/core';
import { assign, setup } from 'xstate';
import type { ElectionDeps, PeersChanged } from './election.js';
import { peerAt } from './peers.js';
import {
  becomeLeader,
  evaluateLease,
  heartbeat,
  leaveLeadership,
  onMessage,
  type QuorumContext,
  type QuorumControl,
  type QuorumEffect,
  type QuorumPolicy,
  type QuorumStep,
  type Readings,
  type Role,
  report,
  startPreVote,
  startVote,
} from './quorum-decisions.js';
import type { QuorumMessage } from './quorum-messages.js';
import { MemoryVoteStore } from './vote-store.js';

/** The leader acts only while a majority acknowledged a heartbeat it sent within this share of the minimum election timeout. */
export const LEASE_SHARE = 0.8;

export type { QuorumContext } from './quorum-decisions.js';

export type QuorumEvent = QuorumMessage | PeersChanged | QuorumControl;

const LEASE_TIMER = 'quorum.lease';

/**
 * The seed's "Leader and Followers" with a generation clock, as a Raft-style election:
 * following → (randomised election timeout) → candidate.preVoting → candidate.voting → leading.
 * - A vote is persisted (generation + votedFor) before the reply leaves, so a restarted node
 *   never votes twice in one generation; only a candidate at least as up to date (lastIndex) wins.
 * - A follower that heard from its leader within the minimum election timeout refuses other
 *   candidates (stickiness); the leader acts only while a majority acknowledged a heartbeat it
 *   sent within 0.8 × that timeout. So a new leader can only win after the old one stopped acting.
 * - Pre-votes keep a cut-off minority from inflating the generation and unseating the
 *   majority's leader on heal.
 */
export function createQuorumMachine(deps: ElectionDeps) {
  const { system, self, options } = deps;
  const { timing } = options;
  const store = options.voteStore ?? new MemoryVoteStore();
  const policy: QuorumPolicy = {
    self: self.address,
    electionTimeoutMinMs: timing.electionTimeoutMinMs,
    electionTimeoutMaxMs: timing.electionTimeoutMaxMs,
    leaseMs: timing.electionTimeoutMinMs * LEASE_SHARE,
  };
  const now = () => system.clock.now();
  // Loaded once per incarnation: a corrupt store fails `Election.start`, not some later turn.
  const stored = store.load();

  const execute = (c: QuorumContext, effect: QuorumEffect): void => {
    switch (effect.kind) {
      case 'send': {
        const peer = peerAt(c.peers, effect.to);
        if (peer) deps.send(peer, effect.message as Message);
        return;
      }
      case 'broadcast':
        for (const p of c.peers) if (p.address !== self.address) deps.send(p, effect.message as Message);
        return;
      case 'persist':
        store.save({ generation: effect.generation, votedFor: effect.votedFor ?? undefined });
        return;
      case 'log':
        system.logger.info({ event: effect.event, ...effect.fields }, effect.msg);
        return;
      case 'report':
        deps.report(effect.view);
        return;
    }
  };

  const machineSetup = setup({
    types: { context: {} as QuorumContext, events: {} as QuorumEvent },
    delays: {
      electionTimeout: () =>
        timing.electionTimeoutMinMs +
        system.random() * (timing.electionTimeoutMaxMs - timing.electionTimeoutMinMs),
      heartbeatInterval: timing.heartbeatIntervalMs,
    },
    actions: {
      // sends resolve their peer in the current peer list (peers change only through takePeers)
      run: ({ context }, effect: QuorumEffect) => execute(context, effect),
      takePeers: assign({ peers: ({ event }) => (event as PeersChanged).peers }),
    },
  });

  /** Assigns a step's context; its effects go to `run`, its control events and lease timer to xstate. */
  const apply = (decide: (c: QuorumContext, event: QuorumEvent, readings: Readings) => QuorumStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) => {
      const result = decide(context, event, { now: now(), lastIndex: options.lastIndex() });
      enqueueDecision(enqueue, context, result);
      if (result.leaseTimer !== undefined) {
        enqueue.cancel(LEASE_TIMER);
        if (result.leaseTimer !== 'cancel')
          enqueue.raise({ type: 'quorum.lease-check' }, { id: LEASE_TIMER, delay: result.leaseTimer });
      }
      for (const control of result.raise) enqueue.raise(control);
    });
  /** Every protocol message, wherever it arrives; `role` says what the state allows. */
  const handle = (role: Role) => apply((c, e, r) => onMessage(policy, role, c, e as QuorumMessage, r));
  const reportFollower = apply((c) => report(policy, c, false));
  const sendHeartbeats = apply((c, _, r) => heartbeat(policy, c, r));
  const checkLease = apply((c, _, r) => evaluateLease(policy, c, r));

  return machineSetup.createMachine({
    id: 'quorum',
    context: {
      peers: options.peers,
      generation: stored.generation,
      votedFor: stored.votedFor ?? null,
      leader: null,
      // A restarted incarnation may have acked a leader just before it crashed, and that leader
      // may still count the ack: stay loyal to it (unknown) for the minimum election timeout.
      heardAt: now(),
      votes: [],
      acks: {},
      acting: false,
      leaseEnd: null,
      notActingSince: null,
    },
    initial: 'following',
    on: { 'election.peers': { actions: 'takePeers' } },
    states: {
      following: {
        entry: reportFollower,
        after: { electionTimeout: 'candidate' },
        on: {
          'election.quorum.*': { actions: handle('follower') },
          'quorum.follow': { target: 'following', reenter: true },
        },
      },
      candidate: {
        entry: [machineSetup.assign({ leader: null }), reportFollower],
        on: { 'quorum.follow': 'following' },
        initial: 'preVoting',
        states: {
          preVoting: {
            entry: apply((c, _, r) => startPreVote(policy, c, r)),
            after: { electionTimeout: { target: 'preVoting', reenter: true } },
            on: {
              'election.quorum.*': { actions: handle('pre-voting') },
              'quorum.pre-voted': 'voting',
            },
          },
          voting: {
            entry: apply((c, _, r) => startVote(policy, c, r)),
            after: { electionTimeout: 'preVoting' },
            on: {
              'election.quorum.*': { actions: handle('voting') },
              'quorum.won': '#quorum.leading',
            },
          },
        },
      },
      leading: {
        entry: [apply((c, _, r) => becomeLeader(policy, c, r)), apply((c) => report(policy, c, true))],
        exit: apply(leaveLeadership),
        on: {
          'election.quorum.*': { actions: handle('leader') },
          // a newcomer's ack is needed for the new majority at once: do not wait for the next beat
          'election.peers': { actions: ['takePeers', sendHeartbeats, checkLease] },
          'quorum.lease-check': { actions: checkLease },
          'quorum.follow': 'following',
          'quorum.step-down': 'following',
        },
        initial: 'beating',
        states: {
          beating: {
            entry: [sendHeartbeats, checkLease],
            after: { heartbeatInterval: { target: 'beating', reenter: true } },
          },
        },
      },
    },
  });
}
