import type { ActorSystem, Message } from '@doyen/core';
import { assign, fromPromise, setup } from 'xstate';
import type { ClusterConfig } from '../config.js';
import { isLive, keyOf } from '../member.js';
import type { MembershipContext } from '../membership-protocol.js';
import {
  defaultStableAfterMs,
  isMinoritySide,
  partitionView,
  resolve,
  resolveWithLease,
  type SbrInput,
  type SbrResolution,
} from './resolver.js';
import type { SbrMember } from './sbr-view.js';
import type { StrategyConfig } from './strategies.js';

export const DOWNING_PATH = '/system/downing';

/** Membership -> downing: what this node currently knows (sent after every change). */
export interface SbrViewMessage {
  readonly type: 'sbr.view';
  readonly selfKey: string;
  readonly version: number;
  readonly members: readonly SbrMember[];
  readonly observations: Readonly<Record<string, readonly string[]>>;
}

export function sbrViewMessage(selfKey: string, ctx: MembershipContext): SbrViewMessage & Message {
  const m = ctx.membership!;
  return {
    type: 'sbr.view',
    selfKey,
    version: m.version,
    members: m.members
      .filter((x) => isLive(x.status))
      .map((x) => ({ key: keyOf(x), address: x.address, age: x.age, status: x.status, roles: x.roles })),
    observations: ctx.observations,
  };
}

export interface DowningContext {
  readonly view: SbrViewMessage | undefined;
  /** Unreachable + indirectly connected + members: a change restarts the stable-after wait. */
  readonly signature: string;
  readonly lastDecision: SbrResolution | undefined;
  readonly warnedClusterSize: number;
}

export interface DowningDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  /** Peers this node's failure detector monitors and currently reaches. */
  readonly ownReachable: () => ReadonlySet<string>;
}

function inputOf(view: SbrViewMessage, ownReachable: ReadonlySet<string>): SbrInput {
  return { members: view.members, observations: view.observations, selfKey: view.selfKey, ownReachable };
}

function signatureOf(view: SbrViewMessage | undefined, ownReachable: ReadonlySet<string>): string {
  if (!view) return '';
  const { indirect, unreachable } = partitionView(inputOf(view, ownReachable));
  return [
    [...unreachable].sort().join(','),
    [...indirect].sort().join(','),
    // member keys, not statuses: a leaving member must not postpone its side's decision
    // (joining members cannot become up while anyone is unreachable anyway)
    view.members
      .map((m) => m.key)
      .sort()
      .join(','),
  ].join('|');
}

function troubled(view: SbrViewMessage | undefined, ownReachable: ReadonlySet<string>): boolean {
  if (!view) return false;
  const { indirect, unreachable } = partitionView(inputOf(view, ownReachable));
  return unreachable.size > 0 || indirect.size > 0;
}

/**
 * The split-brain resolver of one node (Akka SBR, seeds/003): stable → unstable (waiting for
 * stable-after without changes) → deciding → decided. Only the decider of a side acts: its
 * lowest-age reachable member, the coordinator of that side. Under `auto` and `manual` the
 * machine stays inactive. Decisions are the pure functions of resolver.ts.
 */
export function createDowningMachine(deps: DowningDeps) {
  const { system, config } = deps;
  const sbr = config.sbr;
  const strategy: StrategyConfig | undefined =
    config.downing === 'keep-majority'
      ? { strategy: 'keep-majority', ...(sbr.role ? { role: sbr.role } : {}) }
      : config.downing === 'static-quorum'
        ? {
            strategy: 'static-quorum',
            quorumSize: sbr.quorumSize ?? 1,
            ...(sbr.role ? { role: sbr.role } : {}),
          }
        : config.downing === 'keep-oldest'
          ? { strategy: 'keep-oldest', downIfAlone: sbr.downIfAlone, ...(sbr.role ? { role: sbr.role } : {}) }
          : config.downing === 'down-all'
            ? { strategy: 'down-all' }
            : undefined;
  const active = strategy !== undefined || config.downing === 'lease-majority';
  const stableAfter = (ctx: DowningContext) =>
    sbr.stableAfterMs ?? defaultStableAfterMs(ctx.view?.members.length ?? 1);
  const unstableLimit = (ctx: DowningContext) => {
    const extra = sbr.downAllWhenUnstableMs;
    if (extra === 'off') return 365 * 24 * 3600 * 1000;
    // Akka's default is 3/4 of stable-after (15 s after its 20 s). Ours is 2×: with stable-after
    // at 1.5 s, 3/4 of it would shut a cluster down for two unrelated failures seconds apart.
    return stableAfter(ctx) + (extra ?? stableAfter(ctx) * 2);
  };

  const isDecider = (ctx: DowningContext): boolean => {
    const view = ctx.view;
    if (!view) return false;
    const ownReachable = deps.ownReachable();
    const { unreachable } = partitionView(inputOf(view, ownReachable));
    const subjects = new Set(
      Object.keys(view.observations).filter((k) => (view.observations[k]?.length ?? 0) > 0),
    );
    // Candidates are the members this node can count on hearing from: itself, those nobody
    // reports unreachable, and those its own detector reaches. Indirectly connected members
    // that still talk to this side may decide (often the coordinator is one): one writer per
    // side. A member that is only "indirect" because a dead node once reported it cannot.
    const here = view.members.filter(
      (m) =>
        !unreachable.has(m.key) &&
        (m.key === view.selfKey || !subjects.has(m.key) || ownReachable.has(m.key)),
    );
    const candidates = here.some((m) => m.status === 'up') ? here.filter((m) => m.status === 'up') : here;
    const lowest = [...candidates].sort((a, b) => a.age - b.age)[0];
    return lowest?.key === view.selfKey;
  };

  const execute = (resolution: SbrResolution, ctx: DowningContext) => {
    system.logger.warn(
      {
        event: 'sbr.decision',
        strategy: config.downing,
        decision: resolution.decision,
        down: resolution.down,
        reason: resolution.reason,
        unreachable: resolution.unreachable,
        indirectlyConnected: resolution.indirectlyConnected,
        members: ctx.view?.members.map((m) => m.key),
        version: ctx.view?.version,
      },
      `split-brain resolver: ${resolution.decision} (${resolution.reason})`,
    );
    system.metrics.inc('doyen_sbr_decisions_total', 'Split-brain resolver decisions', {
      decision: resolution.decision,
    });
    system
      .lookup('/system/membership')
      ?.send({ type: 'sbr.execute', down: resolution.down, unreachable: resolution.unreachable } as Message);
  };

  return setup({
    types: { context: {} as DowningContext, events: {} as SbrViewMessage },
    actions: {
      takeView: assign(({ event }) => ({ view: event, signature: signatureOf(event, deps.ownReachable()) })),
      warnIfTooLarge: assign(({ context }) => {
        if (config.downing !== 'static-quorum' || !context.view) return {};
        const size = context.view.members.length;
        const limit = 2 * (sbr.quorumSize ?? 1) - 1;
        if (size > limit && size !== context.warnedClusterSize) {
          system.logger.warn(
            { event: 'sbr.quorum-exceeded', size, quorumSize: sbr.quorumSize },
            `cluster of ${size} exceeds 2·quorum − 1 = ${limit}: a split now downs everything`,
          );
          return { warnedClusterSize: size };
        }
        return {};
      }),
    },
    delays: {
      stableAfter: ({ context }) => stableAfter(context),
      unstableLimit: ({ context }) => unstableLimit(context),
      retryAfterDecision: ({ context }) => stableAfter(context) * 2,
      leaseDelay: ({ context }) =>
        context.view && isMinoritySide(inputOf(context.view, deps.ownReachable()), sbr.role)
          ? sbr.acquireLeaseDelayForMinorityMs
          : 0,
    },
    guards: {
      active: () => active,
      troubled: ({ event }) => troubled(event, deps.ownReachable()),
      changed: ({ context, event }) => signatureOf(event, deps.ownReachable()) !== context.signature,
      isDecider: ({ context }) => isDecider(context),
      usesLease: () => config.downing === 'lease-majority',
      downAllWhenUnstable: () => sbr.downAllWhenUnstableMs !== 'off',
    },
    actors: {
      acquireLease: fromPromise<boolean, { owner: string }>(async ({ input }) =>
        sbr.lease!.acquire(input.owner),
      ),
    },
  }).createMachine({
    id: 'downing',
    context: { view: undefined, signature: '', lastDecision: undefined, warnedClusterSize: 0 },
    initial: 'checking',
    on: {
      'sbr.view': { actions: 'takeView' },
    },
    states: {
      checking: {
        always: [{ guard: 'active', target: 'stable' }, { target: 'inactive' }],
      },
      inactive: {},
      stable: {
        on: {
          'sbr.view': [
            { guard: 'troubled', target: 'unstable', actions: ['takeView', 'warnIfTooLarge'] },
            { actions: ['takeView', 'warnIfTooLarge'] },
          ],
        },
      },
      unstable: {
        initial: 'waiting',
        after: {
          unstableLimit: [
            {
              // no decider guard: if the side cannot agree on one, every member downs all (safe)
              guard: () => sbr.downAllWhenUnstableMs !== 'off',
              target: 'decided',
              actions: ({ context }) => {
                const view = context.view!;
                execute(
                  {
                    decision: 'down-all',
                    down: view.members.map((m) => m.key),
                    unreachable: [...partitionView(inputOf(view, deps.ownReachable())).unreachable],
                    indirectlyConnected: [],
                    reason: 'still unstable after stable-after + down-all-when-unstable',
                  },
                  context,
                );
              },
            },
          ],
        },
        states: {
          // Only this child restarts on a change: the parent's unstableLimit keeps counting.
          waiting: {
            on: {
              'sbr.view': [
                {
                  guard: ({ event }) => !troubled(event, deps.ownReachable()),
                  target: '#downing.stable',
                  actions: 'takeView',
                },
                { guard: 'changed', target: 'waiting', reenter: true, actions: 'takeView' },
                { actions: 'takeView' },
              ],
            },
            after: { stableAfter: '#downing.deciding' },
          },
        },
      },
      deciding: {
        always: [
          { guard: ({ context }) => !isDecider(context), target: 'unstable' },
          { guard: 'usesLease', target: 'leaseWait' },
          {
            target: 'decided',
            actions: assign(({ context }) => {
              const resolution = resolve(strategy!, inputOf(context.view!, deps.ownReachable()));
              execute(resolution, context);
              return { lastDecision: resolution };
            }),
          },
        ],
      },
      leaseWait: {
        after: { leaseDelay: 'acquiring' },
      },
      acquiring: {
        invoke: {
          src: 'acquireLease',
          input: ({ context }) => ({ owner: context.view!.selfKey }),
          onDone: {
            target: 'decided',
            actions: assign(({ context, event }) => {
              const resolution = resolveWithLease(inputOf(context.view!, deps.ownReachable()), event.output);
              execute(resolution, context);
              return { lastDecision: resolution };
            }),
          },
          onError: {
            target: 'decided',
            actions: assign(({ context }) => {
              const resolution = resolveWithLease(inputOf(context.view!, deps.ownReachable()), false);
              execute(resolution, context);
              return { lastDecision: resolution };
            }),
          },
        },
      },
      decided: {
        on: {
          'sbr.view': [
            {
              guard: ({ event }) => !troubled(event, deps.ownReachable()),
              target: 'stable',
              actions: 'takeView',
            },
            { guard: 'changed', target: 'unstable', actions: 'takeView' },
            { actions: 'takeView' },
          ],
        },
        after: { retryAfterDecision: 'unstable' },
      },
    },
  });
}
