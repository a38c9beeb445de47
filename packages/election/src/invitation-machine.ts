import { setup } from 'xstate';
import type { ElectionDeps } from './election.js';
import { runElectionEffect, stepOf } from './election-machine.js';
import {
  heartbeat,
  type InvitationContext,
  type InvitationEvent,
  type InvitationPolicy,
  type InvitationStep,
  initialInvitationContext,
  inviteSomeone,
  joinTimedOut,
  leaderSilent,
  onMessage,
  onPeers,
  reportView,
} from './invitation-decisions.js';

export type { InvitationContext } from './invitation-decisions.js';

/**
 * The invitation election (GARCIA-MOLINA82): leading | following. Every node starts as the leader
 * of a group of itself; groups merge until each side of the network is one group.
 * - Group leaders invite a random peer outside their group every inviteIntervalMs (jittered). An
 *   invited leader compares (size, rank) with the inviter's: the larger group's leader (tie:
 *   higher rank) leads the merge. If the invited one wins it invites back; if it loses it sends
 *   Join with its members, and on Welcome tells only its own members the new leader. An invited
 *   member answers Redirect with its leader, and the inviter invites that leader directly.
 * - Leaders heartbeat their members with the member list and drop members that stop acking (or
 *   ack naming another leader); a member whose leader went silent for leaderTimeoutMs (or no
 *   longer lists it) leads a group of itself again and goes back to inviting.
 * - No quorum: under a partition each side merges into its own group with its own leader; after
 *   the heal the larger group absorbs the smaller.
 * Decisions are the pure functions of invitation-decisions.ts (randomness from the node's seeded
 * source); the action `run` executes their effects.
 */
export function createInvitationMachine(deps: ElectionDeps) {
  const { self, options, system } = deps;
  const { timing } = options;
  const policy: InvitationPolicy = {
    self: self.address,
    replyTimeoutMs: timing.replyTimeoutMs,
    missLimit: Math.ceil(timing.leaderTimeoutMs / timing.heartbeatIntervalMs),
  };
  const random = () => system.random();

  const machineSetup = setup({
    types: { context: {} as InvitationContext, events: {} as InvitationEvent },
    delays: {
      heartbeat: timing.heartbeatIntervalMs,
      leaderTimeout: timing.leaderTimeoutMs,
      // a little seeded jitter, so freshly alone leaders do not all invite at once
      invite: () => timing.inviteIntervalMs * (0.75 + 0.5 * system.random()),
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: 'invitation', node: self.address }),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`, then its timers. */
  const apply = (decide: (context: InvitationContext, event: InvitationEvent) => InvitationStep) =>
    machineSetup.enqueueActions(stepOf(decide));
  const message = apply((c, e) => onMessage(policy, c, e, random));
  const report = apply((c) => reportView(policy, c));

  return machineSetup.createMachine({
    id: 'invitation',
    context: initialInvitationContext(policy, options.peers),
    initial: 'leading',
    on: {
      'election.invitation.invite': { actions: message },
      'election.invitation.redirect': { actions: message },
      'election.invitation.join': { actions: message },
      'election.invitation.welcome': { actions: message },
      'election.invitation.new-leader': { actions: message },
      'election.invitation.heartbeat': { actions: message },
      'election.invitation.heartbeat-ack': { actions: message },
      'invitation.join-timeout': { actions: apply(joinTimedOut) },
      'election.peers': { actions: apply((c, e) => onPeers(policy, c, e)) },
      // descendant targets are re-entered (restarting their timers) while the root is not
      'invitation.lead': '.leading',
      'invitation.follow': '.following',
    },
    states: {
      leading: {
        entry: report,
        type: 'parallel',
        states: {
          beating: {
            initial: 'waiting',
            states: {
              waiting: {
                after: {
                  heartbeat: {
                    target: 'waiting',
                    reenter: true,
                    actions: apply((c) => heartbeat(policy, c)),
                  },
                },
              },
            },
          },
          inviting: {
            initial: 'waiting',
            states: {
              waiting: {
                after: {
                  invite: {
                    target: 'waiting',
                    reenter: true,
                    actions: apply((c) => inviteSomeone(policy, c, random)),
                  },
                },
              },
            },
          },
        },
      },
      following: {
        entry: report,
        after: { leaderTimeout: { actions: apply((c) => leaderSilent(policy, c)) } },
      },
    },
  });
}
