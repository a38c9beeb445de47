import {
  type ActorRef,
  type ActorSystem,
  enqueueDecision,
  type Message,
  type UniqueNodeAddress,
} from '@doyen/core';
import { setup } from 'xstate';
import type { ClusterConfig } from '../model/config.js';
import { isLive } from '../model/member.js';
import type { Membership } from '../model/membership.js';
import type { SelfInfo } from '../model/self-info.js';
import { DOWNING_PATH, MEMBERSHIP_PATH, SPLIT_BRAIN_CHECKER_PATH } from '../model/system-actors.js';
import {
  admittedBy,
  catchUp,
  completeCollector,
  downSelf,
  type Env,
  evaluateChanges,
  evaluationStale,
  executeDowning,
  formNewCluster,
  hasLeaderWork,
  initialContext,
  isCoordinator,
  isFirstSeed,
  joinAttempt,
  joinBackoffMs,
  joinFailureReason,
  leaderActions,
  type MembershipContext,
  type MembershipEffect,
  type MembershipStep,
  mayFormCluster,
  mayReformCluster,
  onAck,
  onDownedNotice,
  onDownRequest,
  onJoin,
  onJoinSeen,
  onLeave,
  onOwnReachability,
  onPull,
  onReachabilityReport,
  onRedirect,
  onUpdate,
  onVersionSeen,
  reformCluster,
  requestLeave,
  selfMember,
  welcomed,
  welcomedByUpdate,
  withViews,
} from './membership-decisions.js';
import type { MembershipMessage, ReachabilityChange } from './membership-messages.js';

/** Local (not networked) events: from this node's failure detector and its API. */
export type MembershipLocalEvent =
  | { readonly type: 'fd.reachability'; readonly changes: readonly ReachabilityChange[] }
  | { readonly type: 'fd.version-seen'; readonly peer: UniqueNodeAddress; readonly version: number }
  | { readonly type: 'cluster.leave' }
  | { readonly type: 'cluster.down'; readonly member: string }
  | { readonly type: 'membership.collector-timeout'; readonly id: number }
  | {
      readonly type: 'sbr.execute';
      readonly down: readonly string[];
      readonly unreachable: readonly string[];
    }
  | { readonly type: 'sbr.down-self'; readonly side: readonly string[] };

/** Every event of the membership machine: its messages from the network, and the local ones. */
export type MembershipEvent = MembershipMessage | MembershipLocalEvent;

export interface MembershipDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly self: SelfInfo;
}

type EventOf<T extends MembershipEvent['type']> = Extract<MembershipEvent, { readonly type: T }>;

/**
 * The membership machine (the seed's MembershipService): joining with retries, then up as the
 * coordinator or a member, then leaving → exiting → removed, or down. Decisions are the pure
 * functions of membership-decisions.ts, each listed once in `steps` below; this file wires them
 * to states and delays, and its one action `run` carries out the effects a step returned.
 */
export function createMembershipMachine(deps: MembershipDeps) {
  const { system, config, self } = deps;
  const selfRef = system.remoteRef(self.node, MEMBERSHIP_PATH) as ActorRef;
  const env: Env = { self, config, selfRef };

  const execute = (effect: MembershipEffect): void => {
    switch (effect.kind) {
      case 'send': {
        const { to, message } = effect;
        switch (to.kind) {
          case 'ref':
            to.ref.send(message, selfRef);
            return;
          case 'member':
            system.remoteRef(to.node, MEMBERSHIP_PATH).send(message, selfRef);
            return;
          case 'seed':
            system.anyIncarnationRef(to.address, MEMBERSHIP_PATH).send(message, selfRef);
            return;
          case 'local':
            system.lookup(to.path)?.send(message);
            return;
        }
        return;
      }
      case 'publish':
        system.lookup(DOWNING_PATH)?.send(effect.downing as unknown as Message);
        system.lookup(SPLIT_BRAIN_CHECKER_PATH)?.send(effect.checker as unknown as Message);
        return;
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };

  const selfStatus = (ctx: MembershipContext) => selfMember(env, ctx)?.status;

  const machineSetup = setup({
    types: {
      context: {} as MembershipContext,
      events: {} as MembershipEvent,
    },
    actions: {
      run: (_, effect: MembershipEffect) => execute(effect),
    },
    delays: {
      joinTimeout: config.joinTimeoutMs,
      joinBackoff: ({ context }) => joinBackoffMs(config, context.attempt),
      pullInterval: config.pullIntervalMs,
      leaderActionsInterval: config.leaderActionsIntervalMs,
      // leaves are not forwarded: a leaver whose coordinator changed asks the new one on a retry
      leaveRetry: Math.max(100, Math.min(250, config.leaveTimeoutMs / 10)),
      leaveTimeout: config.leaveTimeoutMs,
      ackTimeout: config.ackTimeoutMs,
    },
    guards: {
      mayFormCluster: ({ context }) => mayFormCluster(env, context),
      mayReformCluster: ({ context }) => mayReformCluster(env, context),
      isOnlySeed: () => config.mayFormCluster && isFirstSeed(env) && config.seeds.length === 1,
      hasAttemptsLeft: ({ context }) => context.attempt < config.maxJoinAttempts,
      welcomeAdmits: ({ event }) =>
        event.type === 'membership.welcome' && admittedBy(env, event.membership, event.from),
      updateNamesSelf: ({ event }) =>
        event.type === 'membership.update' && admittedBy(env, event.membership, event.replyTo.address.node),
      isCoordinator: ({ context }) => isCoordinator(env, context),
      evaluationStale: ({ context }) => evaluationStale(context),
      hasLeaderWork: ({ context }) => hasLeaderWork(env, context),
      noLeaderWork: ({ context }) => !hasLeaderWork(env, context),
      notCoordinator: ({ context }) => !isCoordinator(env, context),
      selfGoneAfterLeaving: ({ context }) => {
        const s = selfStatus(context);
        return s === undefined || s === 'removed';
      },
      selfDowned: ({ context }) => {
        const s = selfStatus(context);
        return s === undefined || !isLive(s);
      },
      selfExiting: ({ context }) => selfStatus(context) === 'exiting',
      selfLeaving: ({ context }) => selfStatus(context) === 'leaving',
      nobodyUp: ({ context }) => !context.membership?.members.some((m) => m.status === 'up'),
    },
  });

  /**
   * Applies a decision with the views it publishes: its context assigned, its effects to `run`
   * (through the shared `enqueueDecision`), then its collector timeouts as delayed events.
   */
  const apply = (step: (ctx: MembershipContext, event: MembershipEvent) => MembershipStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) => {
      const result = withViews(env, context, step(context, event));
      enqueueDecision(enqueue, context, result);
      for (const id of result.timeouts) {
        enqueue.raise({ type: 'membership.collector-timeout', id }, { delay: 'ackTimeout' });
      }
    });

  /** The step each event runs, wherever it is handled (listed once). */
  const steps: {
    [T in MembershipEvent['type']]?: (ctx: MembershipContext, event: EventOf<T>) => MembershipStep;
  } = {
    'membership.pull': (c, e) => onPull(env, c, e),
    'membership.join': (c, e) => onJoin(env, c, e),
    'membership.update': (c, e) => onUpdate(env, c, e),
    'membership.ack': (c, e) => onAck(env, c, e),
    'membership.collector-timeout': (c, e) => completeCollector(env, c, e.id),
    'membership.leave': (c, e) => onLeave(env, c, e),
    'membership.down': (c, e) => onDownRequest(env, c, e.member, e.by),
    'membership.downed-notice': (c, e) => onDownedNotice(env, c, e.by),
    'membership.redirect': (c, e) => onRedirect(env, c, e),
    'membership.join-seen': (c, e) => onJoinSeen(env, c, e),
    'membership.reachability': (c, e) => onReachabilityReport(env, c, e),
    'cluster.down': (c, e) => onDownRequest(env, c, e.member),
    'fd.reachability': (c, e) => onOwnReachability(env, c, e.changes),
    'fd.version-seen': (c, e) => onVersionSeen(env, c, e.peer, e.version),
    'sbr.execute': (c, e) => executeDowning(env, c, e.down, e.unreachable),
    'sbr.down-self': (c, e) => downSelf(env, c, e.side),
  };
  /** The action running `step` on events of `type` (xstate routes only those to it: the one narrowing). */
  const on = <T extends MembershipEvent['type']>(
    _type: T,
    step: (ctx: MembershipContext, event: EventOf<T>) => MembershipStep,
  ) => apply((c, e) => step(c, e as EventOf<T>));
  const run = <T extends MembershipEvent['type']>(type: T) => on(type, steps[type]!);
  /** `on` entries that run their steps and stay in the state. */
  const handle = <T extends MembershipEvent['type']>(...types: T[]) =>
    Object.fromEntries(types.map((t) => [t, { actions: run(t) }])) as {
      [K in T]: { actions: ReturnType<typeof run> };
    };

  /**
   * While joining or backing off: a welcome, or an update that names us, lets us in; a member's
   * join-seen says a live cluster exists (then this node keeps joining and never forms one).
   */
  const letIn = {
    // a join from a seed or last-known member looking for a cluster: evidence for `mayReformCluster`
    ...handle('membership.join-seen', 'membership.join'),
    'membership.welcome': {
      target: 'up',
      guard: 'welcomeAdmits',
      actions: on('membership.welcome', (c, e) => welcomed(env, c, e.membership)),
    },
    ...handle('membership.redirect'),
    'membership.update': {
      target: 'up',
      guard: 'updateNamesSelf',
      actions: on('membership.update', (c, e) => welcomedByUpdate(env, c, e)),
    },
  } as const;

  /**
   * A leaving node is still a member: it keeps observing, and a split-brain decision (or the
   * news that it was downed) must still take it out, or it would outlive a partition as a
   * second side with its singletons running.
   */
  const stillDeciding = handle(
    'sbr.execute',
    'sbr.down-self',
    'membership.downed-notice',
    'membership.reachability',
    'fd.reachability',
    'membership.update',
  );

  const formNew = apply((c) => formNewCluster(env, c));
  const reformNew = apply((c) => reformCluster(env, c));

  return machineSetup.createMachine({
    id: 'membership',
    context: initialContext,
    initial: 'joining',
    on: handle('membership.pull'),
    states: {
      joining: {
        entry: apply((c) => joinAttempt(env, c)),
        // the only seed is this node: nobody to ask, form at once
        always: [{ guard: 'isOnlySeed', target: 'up', actions: formNew }],
        on: letIn,
        after: {
          joinTimeout: [
            { guard: 'mayFormCluster', target: 'up', actions: formNew },
            // after a total downing: the other seeds and a majority of the last members asked to join, nobody answered
            { guard: 'mayReformCluster', target: 'up', actions: reformNew },
            { guard: 'hasAttemptsLeft', target: 'backingOff' },
            {
              // Also after a member saw the join: failing loudly (the process exits, its
              // supervisor restarts it) bounds what a stale or forged join-seen can cost, and a
              // new incarnation may form if the cluster it heard has gone meanwhile.
              target: 'joinFailed',
              actions: machineSetup.assign({ failure: ({ context }) => joinFailureReason(env, context) }),
            },
          ],
        },
      },
      backingOff: {
        on: letIn,
        after: { joinBackoff: 'joining' },
      },
      joinFailed: {},
      up: {
        initial: 'member',
        always: [{ guard: 'selfDowned', target: 'down' }],
        on: {
          ...stillDeciding,
          ...handle(
            'membership.join',
            'membership.ack',
            'membership.collector-timeout',
            'membership.leave',
            'membership.down',
            'cluster.down',
            'fd.version-seen',
          ),
          'cluster.leave': { target: 'leaving', actions: apply((c) => requestLeave(env, c)) },
        },
        states: {
          member: {
            always: [
              { guard: 'selfLeaving', target: '#membership.leaving' },
              { guard: 'isCoordinator', target: 'coordinator' },
            ],
            // Only a backstop (pullIntervalMs, 5 s by default): every heartbeat carries its
            // sender's membership version, so a member that missed an update hears of it within
            // a heartbeat from any ring neighbour and pulls at once (fd.version-seen). This pull
            // covers only what that cannot: a node none of whose neighbours is ahead of it. While
            // anyone is unreachable it also re-asserts this node's own view of them (catchUp): a
            // lost reachability report would otherwise stand at the coordinator for good.
            after: {
              pullInterval: {
                target: 'member',
                reenter: true,
                actions: apply((c) => catchUp(env, c)),
              },
            },
          },
          // No timer runs while there is nothing to do: an idle, converged cluster costs the
          // coordinator no transitions. Evaluation follows every change of the membership or
          // the observations (right after the step that made it), and the leader actions run
          // one interval apart only while some member is leaving, exiting or stuck joining.
          coordinator: {
            entry: apply((c) => evaluateChanges(env, c)),
            always: [
              { guard: 'selfLeaving', target: '#membership.leaving' },
              { guard: 'notCoordinator', target: 'member' },
              { guard: 'evaluationStale', actions: apply((c) => evaluateChanges(env, c)) },
            ],
            initial: 'idle',
            states: {
              idle: {
                always: [{ guard: 'hasLeaderWork', target: 'acting' }],
              },
              acting: {
                always: [{ guard: 'noLeaderWork', target: 'idle' }],
                after: {
                  leaderActionsInterval: {
                    target: 'acting',
                    reenter: true,
                    actions: apply((c) => leaderActions(env, c)),
                  },
                },
              },
            },
          },
        },
      },
      leaving: {
        always: [
          { guard: 'selfGoneAfterLeaving', target: 'removed' },
          { guard: 'selfExiting', target: 'exiting' },
          // everyone is leaving at once (a whole cluster shut down): nobody is left to drive it
          { guard: 'nobodyUp', target: 'removed' },
        ],
        on: {
          ...stillDeciding,
          ...handle('membership.join', 'membership.ack', 'membership.leave'),
        },
        // the retry loop lives in a child state: re-entering it must not restart leaveTimeout
        initial: 'asking',
        states: {
          asking: {
            after: {
              leaveRetry: { target: 'asking', reenter: true, actions: apply((c) => requestLeave(env, c)) },
            },
          },
        },
        after: { leaveTimeout: 'removed' },
      },
      exiting: {
        always: [{ guard: 'selfGoneAfterLeaving', target: 'removed' }],
        on: stillDeciding,
        after: { leaveTimeout: 'removed' },
      },
      removed: { type: 'final' },
      down: {},
    },
  });
}

export type MembershipMachine = ReturnType<typeof createMembershipMachine>;

/** What a snapshot of the machine says about this node, for the edge and the HTTP endpoint. */
export function membershipOf(snapshot: { context: MembershipContext } | undefined): Membership | undefined {
  return snapshot?.context.membership;
}
