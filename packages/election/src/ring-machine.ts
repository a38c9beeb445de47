import { setup } from 'xstate';
import type { ElectionDeps } from './election.js';
import { runElectionEffect, stepOf } from './election-machine.js';
import {
  forgetJoined,
  heartbeat,
  initialRingContext,
  onAck,
  onCirculation,
  onHeartbeat,
  onHopTimeout,
  onPeers,
  type RingContext,
  type RingEvent,
  type RingPolicy,
  type RingStep,
  reportView,
  startElection,
} from './ring-decisions.js';
import { type RingVariant, ringTypes } from './ring-messages.js';

export type { Circulation, RingContext } from './ring-decisions.js';

/**
 * The ring election (CHANG79), one machine for both variants: looking | following | leading.
 * - On leader silence (or at start) a node sends Election to its successor in rank order; every
 *   receiver acks, adds itself (`ring`: to the live set; `ring-max`: to the running max) and
 *   passes it on, skipping successors that do not ack within replyTimeoutMs. Back at the
 *   initiator (or, if the initiator died, at the node that found it silent) the highest live rank
 *   becomes leader and a second circulation, Elected, tells everyone.
 * - Concurrent elections: a node that took part in an election of a higher-ranked initiator
 *   drops (after acking) those of lower ones, so only the highest initiator's round completes.
 *   An initiator that sees no result within the round timeout starts again. An alive node that
 *   finds a lower-ranked leader elected (the round skipped it) starts its own election, and a
 *   looking node that hears a higher-ranked leader's heartbeat follows it (what a round would pick).
 * - Leaders heartbeat every peer; a leader hearing a higher-ranked leader (after a heal) starts
 *   an election, which unites the ring under the highest live rank. Under a partition each side
 *   skips the other's nodes and elects its own leader.
 * Decisions are the pure functions of ring-decisions.ts (ids drawn from the node's seeded
 * source); the action `run` executes their effects.
 */
export function createRingMachine(deps: ElectionDeps, variant: RingVariant) {
  const { self, options, system } = deps;
  const { timing } = options;
  const types = ringTypes(variant);
  const policy: RingPolicy = {
    self,
    variant,
    replyTimeoutMs: timing.replyTimeoutMs,
    leaderTimeoutMs: timing.leaderTimeoutMs,
  };
  const nextId = () => Math.floor(system.random() * 2 ** 31);

  const machineSetup = setup({
    types: { context: {} as RingContext, events: {} as RingEvent },
    delays: {
      heartbeat: timing.heartbeatIntervalMs,
      leaderTimeout: timing.leaderTimeoutMs,
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: variant }),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`, then its timers. */
  const apply = (decide: (context: RingContext, event: RingEvent) => RingStep) =>
    machineSetup.enqueueActions(stepOf(decide));
  const report = apply((c) => reportView(policy, c));
  const beat = apply((c) => heartbeat(policy, c));
  const circulate = apply((c, e) => onCirculation(policy, c, e, nextId));

  return machineSetup.createMachine({
    id: variant,
    context: initialRingContext(options.peers),
    entry: apply((c) => startElection(policy, c, 'start', nextId)),
    initial: 'looking',
    on: {
      [types.election]: { actions: circulate },
      [types.elected]: { actions: circulate },
      [types.ack]: { actions: apply((c, e) => onAck(policy, c, e)) },
      [types.heartbeat]: { actions: apply((c, e) => onHeartbeat(policy, c, e, nextId)) },
      'ring.hop-timeout': { actions: apply((c, e) => onHopTimeout(policy, c, e, nextId)) },
      'ring.round-timeout': { actions: apply((c) => startElection(policy, c, 'no result', nextId)) },
      'ring.forget-joined': { actions: apply(forgetJoined) },
      'election.peers': { actions: apply((c, e) => onPeers(policy, c, e, nextId)) },
      'ring.look': '.looking',
      // a descendant target is re-entered (restarting its timers) while the root is not
      'ring.follow': '.following',
      'ring.lead': '.leading',
    },
    states: {
      looking: { entry: report },
      following: {
        entry: report,
        after: {
          leaderTimeout: {
            actions: apply((c) => startElection(policy, c, `leader ${c.leader} silent`, nextId)),
          },
        },
      },
      leading: {
        entry: [report, beat],
        initial: 'beating',
        states: {
          beating: { after: { heartbeat: { target: 'beating', reenter: true, actions: beat } } },
        },
      },
    },
  });
}
