import { type ActorSystem, enqueueDecision, type Message } from '@doyen/core';
import { fromPromise, setup } from 'xstate';
import type { ClusterConfig } from '../config.js';
import { detectionTimeMs } from '../failure-detector/detector.js';
import {
  type DowningContext,
  type DowningEffect,
  type DowningEvent,
  type DowningPolicy,
  type DowningStep,
  decideForSide,
  decideWithLease,
  downAllWhenUnstable,
  downingPolicy,
  forgetAbsent,
  initialDowningContext,
  inputOf,
  isDecider,
  isTroubled,
  losingStill,
  membershipChanges,
  observe,
  reachabilityChanges,
  recant,
  remembersNew,
  selfDowning,
  troubledAfter,
} from './downing-decisions.js';
import { defaultDownAllWhenUnstableMs, defaultStableAfterMs, isMinoritySide } from './resolver.js';
import type { StrategyConfig } from './strategies.js';

export {
  type DowningContext,
  type DowningEffect,
  type DowningEvent,
  type OwnReachabilityMessage,
  type SbrViewMessage,
  sbrViewMessage,
} from './downing-decisions.js';

export const DOWNING_PATH = '/system/downing';
const MEMBERSHIP_PATH = '/system/membership';
const FORGET_ID = 'forget-absent';

/** The machine's own delayed event: the members downed lately may be forgotten. */
interface ForgetAbsent {
  readonly type: 'sbr.forget-absent';
}

/** The event guards judge: they sit only on `sbr.view` and `sbr.own-reachability` transitions. */
const seen = (event: DowningEvent | ForgetAbsent): DowningEvent => event as DowningEvent;

export interface DowningDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
}

/** The strategy a downing mode runs (undefined: lease-majority, or the resolver is inactive). */
export function strategyOf(config: ClusterConfig): StrategyConfig | undefined {
  const sbr = config.sbr;
  const role = sbr.role ? { role: sbr.role } : {};
  switch (config.downing) {
    case 'keep-majority':
      return { strategy: 'keep-majority', ...role };
    case 'static-quorum':
      return { strategy: 'static-quorum', quorumSize: sbr.quorumSize ?? 1, ...role };
    case 'keep-oldest':
      return { strategy: 'keep-oldest', downIfAlone: sbr.downIfAlone, ...role };
    case 'down-all':
      return { strategy: 'down-all' };
    default:
      return undefined;
  }
}

/**
 * The split-brain resolver of one node (Akka SBR, seeds/003): stable → unstable (waiting for
 * stable-after without changes, then deciding) → decided. Inputs are events only: the
 * membership's `sbr.view` and the failure detector's `sbr.own-reachability`; decisions are the
 * pure functions of downing-decisions.ts, whose effects (log, metric, `sbr.execute`) the named
 * action `run` carries out. Under `auto` and `manual` the machine stays inactive.
 *
 * Stability means reachability (as in Akka): the down-all-when-unstable limit counts from the
 * first reachability change after a fully reachable cluster, and only reachability changes keep
 * a decision from being reached; a cluster fully reachable for a moment, and a member becoming
 * up, reset both the stable-after wait and the limit. Joins, leaves and removals are no
 * instability and reset nothing.
 */
export function createDowningMachine(deps: DowningDeps) {
  const { system, config } = deps;
  const sbr = config.sbr;
  const strategy = strategyOf(config);
  const policy: DowningPolicy = downingPolicy(
    strategy,
    config.downing === 'lease-majority',
    config.downing === 'static-quorum' ? (sbr.quorumSize ?? 1) : undefined,
  );
  const active = strategy !== undefined || policy.usesLease;
  const stableAfter = (ctx: DowningContext) =>
    sbr.stableAfterMs ?? defaultStableAfterMs(ctx.view?.members.length ?? 1);
  const unstableLimit = (ctx: DowningContext) => {
    const extra = sbr.downAllWhenUnstableMs;
    if (extra === 'off') return 365 * 24 * 3600 * 1000;
    return stableAfter(ctx) + (extra ?? defaultDownAllWhenUnstableMs(stableAfter(ctx)));
  };

  const execute = (effect: DowningEffect): void => {
    switch (effect.kind) {
      case 'log-decision': {
        const r = effect.resolution;
        system.logger.warn(
          {
            event: 'sbr.decision',
            strategy: config.downing,
            by: effect.by,
            decision: r.decision,
            down: r.down,
            reason: r.reason,
            unreachable: r.unreachable,
            indirectlyConnected: r.indirectlyConnected,
            members: effect.members,
            version: effect.version,
          },
          `split-brain resolver: ${r.decision} (${r.reason})${effect.by === 'self' ? ', this member downs itself' : ''}`,
        );
        system.metrics.inc('doyen_sbr_decisions_total', 'Split-brain resolver decisions', {
          decision: r.decision,
          by: effect.by,
        });
        return;
      }
      case 'execute':
        system
          .lookup(MEMBERSHIP_PATH)
          ?.send({ type: 'sbr.execute', down: effect.down, unreachable: effect.unreachable } as Message);
        return;
      case 'down-self':
        system.lookup(MEMBERSHIP_PATH)?.send({ type: 'sbr.down-self', side: effect.side } as Message);
        return;
      case 'warn-quorum-exceeded':
        system.logger.warn(
          { event: 'sbr.quorum-exceeded', size: effect.size, quorumSize: effect.quorumSize },
          `cluster of ${effect.size} exceeds 2·quorum − 1 = ${2 * effect.quorumSize - 1}: a split now downs everything`,
        );
        return;
    }
  };

  /**
   * How long members downed lately are remembered: a member counted here that had already gone
   * silent before they left the view is found unreachable within this (see recant).
   */
  const rememberMs = detectionTimeMs(config.failureDetector, config.heartbeatIntervalMs);

  const machineSetup = setup({
    types: { context: {} as DowningContext, events: {} as DowningEvent | ForgetAbsent },
    actions: {
      run: (_, effect: DowningEffect) => execute(effect),
    },
    delays: {
      stableAfter: ({ context }) => stableAfter(context),
      unstableLimit: ({ context }) => unstableLimit(context),
      retryAfterDecision: ({ context }) => stableAfter(context) * 2,
      calmFor: ({ context }) => Math.min(1000, stableAfter(context) / 2),
      leaseDelay: ({ context }) => {
        const input = inputOf(context);
        return input && isMinoritySide(input, sbr.role) ? sbr.acquireLeaseDelayForMinorityMs : 0;
      },
    },
    guards: {
      active: () => active,
      troubledAfter: ({ context, event }) => troubledAfter(context, seen(event)),
      recants: ({ context, event }) => recant(policy, context, seen(event)) !== undefined,
      calmAfter: ({ context, event }) => !troubledAfter(context, seen(event)),
      membershipChanges: ({ context, event }) => membershipChanges(context, seen(event)),
      reachabilityChanges: ({ context, event }) => reachabilityChanges(context, seen(event)),
      losingStill: ({ context, event }) => losingStill(policy, context, seen(event)),
      anyChange: ({ context, event }) =>
        membershipChanges(context, seen(event)) || reachabilityChanges(context, seen(event)),
      isDecider: ({ context }) => isDecider(context),
      usesLease: () => policy.usesLease,
      downsOwnSide: ({ context }) => selfDowning(strategy, context) !== undefined,
      stillTroubled: ({ context }) => isTroubled(context),
      downAllWhenUnstable: () => sbr.downAllWhenUnstableMs !== 'off',
    },
    actors: {
      acquireLease: fromPromise<boolean, { owner: string }>(async ({ input }) =>
        sbr.lease!.acquire(input.owner),
      ),
    },
  });

  /**
   * Applies a decision: its context assigned, its effects to `run`. When it remembers someone new
   * as absent, the forgetting (a delayed event on the actor clock) starts over.
   */
  const apply = (step: (context: DowningContext, event: DowningEvent) => DowningStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) => {
      const next = step(context, event as DowningEvent);
      enqueueDecision(enqueue, context, next);
      if (remembersNew(context, next.context)) {
        enqueue.cancel(FORGET_ID);
        enqueue.raise({ type: 'sbr.forget-absent' }, { id: FORGET_ID, delay: rememberMs });
      }
    });
  const take = apply((c, e) => observe(policy, c, e));
  const recanting = apply((c, e) => recant(policy, c, e)!);
  /** First on every event while active: a member counted here crossed over (see recant). */
  const recants = { guard: 'recants', target: '#downing.decided', actions: recanting } as const;
  const leaseAnswer = apply((c, e) =>
    decideWithLease(c, (e as unknown as { output: boolean }).output === true),
  );

  /**
   * While unstable (in `waiting` or `healed`; never by re-entering `unstable`, which would restart
   * the down-all-when-unstable limit): everyone reachable again → `healed`, and stable once that
   * lasts; a member becoming up is no instability: both timers start over; a reachability
   * change restarts the stable-after wait only, unless it cannot change a losing verdict
   * (losingStill).
   */
  const whileUnstable = {
    'sbr.view': [
      recants,
      { guard: 'calmAfter', target: '#downing.unstable.healed', actions: take },
      { guard: 'membershipChanges', target: '#downing.unstable', reenter: true, actions: take },
      { guard: 'losingStill', actions: take },
      { guard: 'reachabilityChanges', target: '#downing.unstable.waiting', reenter: true, actions: take },
      { actions: take },
    ],
    'sbr.own-reachability': [
      recants,
      { guard: 'calmAfter', target: '#downing.unstable.healed', actions: take },
      { guard: 'losingStill', actions: take },
      { guard: 'reachabilityChanges', target: '#downing.unstable.waiting', reenter: true, actions: take },
      { actions: take },
    ],
  } as const;

  return machineSetup.createMachine({
    id: 'downing',
    context: initialDowningContext,
    initial: 'checking',
    on: {
      'sbr.view': { actions: take },
      'sbr.own-reachability': { actions: take },
      'sbr.forget-absent': { actions: apply((c) => forgetAbsent(c)) },
    },
    states: {
      checking: {
        always: [{ guard: 'active', target: 'stable' }, { target: 'inactive' }],
      },
      inactive: {},
      stable: {
        on: {
          'sbr.view': [
            recants,
            { guard: 'troubledAfter', target: 'unstable', actions: take },
            { actions: take },
          ],
          'sbr.own-reachability': [
            recants,
            { guard: 'troubledAfter', target: 'unstable', actions: take },
            { actions: take },
          ],
        },
      },
      unstable: {
        initial: 'waiting',
        after: {
          unstableLimit: [
            {
              // no decider guard: if the side cannot agree on one, every member downs all (safe)
              guard: ({ context }) => sbr.downAllWhenUnstableMs !== 'off' && isTroubled(context),
              target: 'decided',
              actions: apply((c) => downAllWhenUnstable(c)),
            },
          ],
        },
        states: {
          waiting: {
            on: whileUnstable,
            after: { stableAfter: 'deciding' },
          },
          deciding: {
            always: [
              { guard: 'isDecider', target: '#downing.deciderActs' },
              {
                guard: 'downsOwnSide',
                target: '#downing.decided',
                actions: apply((c) => selfDowning(strategy, c)!),
              },
              // not the decider, and this side survives: wait for the decider's news. Stable for
              // stable-after is the end of an instability: the down-all limit starts over too.
              { target: '#downing.unstable', reenter: true },
            ],
          },
          // Everyone reachable again. A heal and the next failure can be milliseconds apart (one
          // link heals as another breaks): only a calm that lasts ends the instability.
          healed: {
            on: whileUnstable,
            after: { calmFor: '#downing.stable' },
          },
        },
      },
      deciderActs: {
        always: [
          { guard: 'usesLease', target: 'leaseWait' },
          { target: 'decided', actions: apply((c) => decideForSide(strategy!, c)) },
        ],
      },
      leaseWait: {
        after: { leaseDelay: 'acquiring' },
      },
      acquiring: {
        invoke: {
          src: 'acquireLease',
          input: ({ context }) => ({ owner: context.view!.selfKey }),
          // the lease's answer (xstate types invoke results apart from the machine's events)
          onDone: { target: 'decided', actions: leaseAnswer as never },
          onError: { target: 'decided', actions: apply((c) => decideWithLease(c, false)) as never },
        },
      },
      decided: {
        on: {
          'sbr.view': [
            recants,
            { guard: 'calmAfter', target: 'stable', actions: take },
            { guard: 'anyChange', target: 'unstable', actions: take },
            { actions: take },
          ],
          'sbr.own-reachability': [
            recants,
            { guard: 'calmAfter', target: 'stable', actions: take },
            { guard: 'reachabilityChanges', target: 'unstable', actions: take },
            { actions: take },
          ],
        },
        after: { retryAfterDecision: 'unstable' },
      },
    },
  });
}

export type DowningMachine = ReturnType<typeof createDowningMachine>;
