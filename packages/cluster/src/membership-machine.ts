import type { ActorRef, ActorSystem, Message, UniqueNodeAddress } from '@doyen/core';
import { assign, enqueueActions, setup } from 'xstate';
import type { ClusterConfig } from './config.js';
import { DOWNING_PATH, sbrViewMessage } from './downing/downing-machine.js';
import { isLive } from './member.js';
import type { Membership } from './membership.js';
import {
  admittedBy,
  completeCollector,
  downSelf,
  type Env,
  evaluate,
  executeDowning,
  formNewCluster,
  initialContext,
  isCoordinator,
  isFirstSeed,
  joinAttempt,
  joinBackoffMs,
  leaderActions,
  MEMBERSHIP_PATH,
  type MembershipContext,
  onAck,
  onDownedNotice,
  onDownRequest,
  onJoin,
  onLeave,
  onOwnReachability,
  onPull,
  onReachabilityReport,
  onRedirect,
  onUpdate,
  onVersionSeen,
  pullFromCoordinator,
  requestLeave,
  type SelfInfo,
  type Step,
  selfMember,
  welcomed,
  welcomedByUpdate,
} from './membership-protocol.js';
import type {
  Ack,
  DownedNotice,
  DownRequest,
  Join,
  Leave,
  Pull,
  ReachabilityReport,
  Redirect,
  Update,
  Welcome,
} from './messages.js';
import { SPLIT_BRAIN_CHECKER_PATH, sbcView } from './split-brain-checker.js';

/** Local (not networked) events: from this node's failure detector and its API. */
export type MembershipLocalEvent =
  | { readonly type: 'fd.reachability'; readonly subject: string; readonly reachable: boolean }
  | { readonly type: 'fd.version-seen'; readonly peer: UniqueNodeAddress; readonly version: number }
  | { readonly type: 'cluster.leave' }
  | { readonly type: 'cluster.down'; readonly member: string }
  | { readonly type: 'membership.collector-timeout'; readonly id: number }
  | {
      readonly type: 'sbr.execute';
      readonly down: readonly string[];
      readonly unreachable: readonly string[];
    };

export type MembershipEvent =
  | Join
  | Welcome
  | Redirect
  | Update
  | Ack
  | Pull
  | Leave
  | DownRequest
  | DownedNotice
  | ReachabilityReport
  | MembershipLocalEvent;

export interface MembershipDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly self: SelfInfo;
}

/**
 * The membership machine (the seed's MembershipService): joining with retries, then up as the
 * coordinator or a member, then leaving → exiting → removed, or down. Decisions are the pure
 * functions of membership-protocol.ts; this file wires them to states, delays and effects.
 */
export function createMembershipMachine(deps: MembershipDeps) {
  const { system, config, self } = deps;
  const selfRef = system.remoteRef(self.node, MEMBERSHIP_PATH) as ActorRef;
  const env: Env = { self, config, selfRef };

  /** Applies a step: new context, messages out, collector timeouts scheduled on the actor clock. */
  // Typed loosely for xstate: each use narrows the event itself; the step functions are fully typed.
  const apply = (step: (ctx: MembershipContext, event: MembershipEvent) => Step): any =>
    enqueueActions(
      ({ context, event, enqueue }: { context: MembershipContext; event: MembershipEvent; enqueue: any }) => {
        const result = step(context, event);
        if (result.context !== context) enqueue.assign(() => result.context);
        if (result.out.length > 0) enqueue(() => deliver(result.out));
        const changed =
          result.context.membership !== context.membership ||
          result.context.observations !== context.observations;
        if (changed && result.context.membership) {
          const view = sbrViewMessage(self.key, result.context);
          const checkerView = sbcView(self.key, result.context);
          enqueue(() => {
            system.lookup(DOWNING_PATH)?.send(view);
            system.lookup(SPLIT_BRAIN_CHECKER_PATH)?.send(checkerView);
          });
        }
        for (const id of result.timeouts) {
          enqueue.raise({ type: 'membership.collector-timeout', id }, { delay: config.ackTimeoutMs });
        }
      },
    );

  function deliver(out: Step['out']): void {
    for (const { to, message } of out) {
      switch (to.kind) {
        case 'ref':
          to.ref.send(message, selfRef);
          break;
        case 'member':
          system.remoteRef(to.node, MEMBERSHIP_PATH).send(message, selfRef);
          break;
        case 'seed':
          system.anyIncarnationRef(to.address, MEMBERSHIP_PATH).send(message, selfRef);
          break;
        case 'local':
          system.lookup(to.path)?.send(message as Message);
          break;
      }
    }
  }

  const selfStatus = (ctx: MembershipContext) => selfMember(env, ctx)?.status;

  /** While joining or backing off: a welcome, or an update that names us, lets us in. */
  const letIn = {
    'membership.welcome': {
      target: 'up',
      guard: ({ event }: { event: MembershipEvent }) =>
        admittedBy(env, (event as Welcome).membership, (event as Welcome).from),
      actions: apply((c, e) => welcomed(env, c, (e as Welcome).membership)),
    },
    'membership.redirect': { actions: apply((c, e) => onRedirect(env, c, e as Redirect)) },
    'membership.update': {
      target: 'up',
      guard: 'updateNamesSelf',
      actions: apply((c, e) => welcomedByUpdate(env, c, e as Update)),
    },
  } as const;

  /**
   * A leaving node is still a member: it keeps observing, and a split-brain decision (or the
   * news that it was downed) must still take it out, or it would outlive a partition as a
   * second side with its singletons running.
   */
  const stillDeciding = {
    'sbr.execute': {
      actions: apply((c, e) => {
        const x = e as { down: readonly string[]; unreachable: readonly string[] };
        return executeDowning(env, c, x.down, x.unreachable);
      }),
    },
    'membership.downed-notice': { actions: apply((c, e) => onDownedNotice(env, c, (e as DownedNotice).by)) },
    'sbr.down-self': { actions: apply((c) => downSelf(env, c)) },
    'membership.reachability': {
      actions: apply((c, e) => onReachabilityReport(env, c, e as ReachabilityReport)),
    },
    'fd.reachability': {
      actions: apply((c, e) => {
        const r = e as { subject: string; reachable: boolean };
        return onOwnReachability(env, c, r.subject, r.reachable);
      }),
    },
  } as const;

  return setup({
    types: {
      context: {} as MembershipContext,
      events: {} as MembershipEvent,
    },
    delays: {
      joinTimeout: config.joinTimeoutMs,
      joinBackoff: ({ context }) => joinBackoffMs(config, context.attempt),
      pullInterval: config.pullIntervalMs,
      leaderActionsInterval: config.leaderActionsIntervalMs,
      // leaves are not forwarded: a leaver whose coordinator changed asks the new one on a retry
      leaveRetry: Math.max(100, Math.min(250, config.leaveTimeoutMs / 10)),
      leaveTimeout: config.leaveTimeoutMs,
    },
    guards: {
      mayFormCluster: () => config.mayFormCluster && isFirstSeed(env),
      isOnlySeed: () => config.mayFormCluster && isFirstSeed(env) && config.seeds.length === 1,
      hasAttemptsLeft: ({ context }) => context.attempt < config.maxJoinAttempts,
      updateNamesSelf: ({ event }) =>
        event.type === 'membership.update' && admittedBy(env, event.membership, event.replyTo.address.node),
      isCoordinator: ({ context }) => isCoordinator(env, context),
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
  }).createMachine({
    id: 'membership',
    context: initialContext,
    initial: 'joining',
    on: {
      'membership.pull': { actions: apply((c, e) => onPull(env, c, e as Pull)) },
    },
    states: {
      joining: {
        entry: apply((c) => joinAttempt(env, c)),
        // the only seed is this node: nobody to ask, form at once
        always: [{ guard: 'isOnlySeed', target: 'up', actions: apply((c) => formNewCluster(env, c)) }],
        on: {
          ...letIn,
        },
        after: {
          joinTimeout: [
            { guard: 'mayFormCluster', target: 'up', actions: apply((c) => formNewCluster(env, c)) },
            { guard: 'hasAttemptsLeft', target: 'backingOff' },
            {
              target: 'joinFailed',
              actions: assign({
                failure: ({ context }) =>
                  `no seed answered after ${context.attempt} attempts (seeds: ${config.seeds
                    .map((s) => `${s.host}:${s.port}`)
                    .join(', ')})`,
              }),
            },
          ],
        },
      },
      backingOff: {
        on: {
          ...letIn,
        },
        after: { joinBackoff: 'joining' },
      },
      joinFailed: {},
      up: {
        initial: 'member',
        always: [{ guard: 'selfDowned', target: 'down' }],
        on: {
          'membership.join': { actions: apply((c, e) => onJoin(env, c, e as Join)) },
          'membership.update': { actions: apply((c, e) => onUpdate(env, c, e as Update)) },
          'membership.ack': { actions: apply((c, e) => onAck(env, c, e as Ack)) },
          'membership.collector-timeout': {
            actions: apply((c, e) => completeCollector(env, c, (e as { id: number }).id)),
          },
          'membership.leave': { actions: apply((c, e) => onLeave(env, c, e as Leave)) },
          'membership.down': {
            actions: apply((c, e) => onDownRequest(env, c, (e as DownRequest).member, (e as DownRequest).by)),
          },
          'membership.downed-notice': {
            actions: apply((c, e) => onDownedNotice(env, c, (e as DownedNotice).by)),
          },
          'cluster.down': {
            actions: apply((c, e) => onDownRequest(env, c, (e as { member: string }).member)),
          },
          'membership.reachability': {
            actions: apply((c, e) => onReachabilityReport(env, c, e as ReachabilityReport)),
          },
          'fd.reachability': {
            actions: apply((c, e) => {
              const r = e as { subject: string; reachable: boolean };
              return onOwnReachability(env, c, r.subject, r.reachable);
            }),
          },
          'fd.version-seen': {
            actions: apply((c, e) => {
              const v = e as { peer: UniqueNodeAddress; version: number };
              return onVersionSeen(env, c, v.peer, v.version);
            }),
          },
          'cluster.leave': { target: 'leaving', actions: apply((c) => requestLeave(env, c)) },
          'sbr.execute': {
            actions: apply((c, e) => {
              const x = e as { down: readonly string[]; unreachable: readonly string[] };
              return executeDowning(env, c, x.down, x.unreachable);
            }),
          },
          'sbr.down-self': { actions: apply((c) => downSelf(env, c)) },
        },
        states: {
          member: {
            always: [
              { guard: 'selfLeaving', target: '#membership.leaving' },
              { guard: 'isCoordinator', target: 'coordinator' },
            ],
            after: {
              pullInterval: {
                target: 'member',
                reenter: true,
                actions: apply((c) => pullFromCoordinator(env, c)),
              },
            },
          },
          coordinator: {
            entry: apply((c) => evaluate(env, c)),
            always: [
              { guard: 'selfLeaving', target: '#membership.leaving' },
              { guard: ({ context }) => !isCoordinator(env, context), target: 'member' },
            ],
            after: {
              leaderActionsInterval: {
                target: 'coordinator',
                reenter: true,
                actions: apply((c) => leaderActions(env, c)),
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
          'membership.update': { actions: apply((c, e) => onUpdate(env, c, e as Update)) },
          'membership.join': { actions: apply((c, e) => onJoin(env, c, e as Join)) },
          'membership.ack': { actions: apply((c, e) => onAck(env, c, e as Ack)) },
          'membership.leave': { actions: apply((c, e) => onLeave(env, c, e as Leave)) },
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
        on: {
          ...stillDeciding,
          'membership.update': { actions: apply((c, e) => onUpdate(env, c, e as Update)) },
        },
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
