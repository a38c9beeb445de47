import { type ActorSystem, enqueueDecision, type Message } from '@doyen/core';
import { and, fromPromise, setup } from 'xstate';
import { detectionTimeMs } from '../failure-detector/detector.js';
import { MEMBERSHIP_PATH } from '../model/system-actors.js';
import type { DowningConfig } from './downing-config.js';
import {
  type DowningContext,
  type DowningEffect,
  type DowningPolicy,
  type DowningStep,
  decide,
  decideForSide,
  decideWithLease,
  downAllWhenUnstable,
  downingPolicy,
  downsOwnSide,
  forgetAbsent,
  initialDowningContext,
  inputOf,
  isDecider,
  isTroubled,
  observe,
  remembersNew,
  selfDowning,
  settle,
} from './downing-decisions.js';
import type { DowningEvent } from './downing-messages.js';
import { defaultDownAllWhenUnstableMs, defaultStableAfterMs, isMinoritySide } from './resolver.js';
import type { StrategyConfig } from './strategies.js';

export type { DowningContext, DowningEffect } from './downing-decisions.js';
export type { DowningEvent, OwnReachabilityMessage, SbrViewMessage } from './downing-messages.js';

const FORGET_ID = 'forget-absent';

/** The machine's own delayed event: the members downed lately may be forgotten. */
interface ForgetAbsent {
  readonly type: 'sbr.forget-absent';
}

export interface DowningDeps {
  readonly system: ActorSystem;
  /** The cluster's configuration (ClusterConfig), of which downing reads its part. */
  readonly config: DowningConfig;
}

/** The strategy a downing mode runs (undefined: lease-majority, or the resolver is inactive). */
export function strategyOf(config: Pick<DowningConfig, 'downing' | 'sbr'>): StrategyConfig | undefined {
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
 * action `run` carries out. Under `auto` and `manual` the machine stays inactive. The states that
 * route on an event (stable, waiting, healed, decided) take it once, with `decide`, and their
 * eventless transitions route on what it changed (`context.news`); the others only observe it.
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
        return input && isMinoritySide(input, sbr.role, context.partition)
          ? sbr.acquireLeaseDelayForMinorityMs
          : 0;
      },
    },
    guards: {
      active: () => active,
      // The routing guards read what `decide` stored for the event just taken (context.news);
      // every route settles it, so an event is routed once.
      recanted: ({ context }) => context.news?.recanted === true,
      troubled: ({ context }) => context.news !== undefined && isTroubled(context),
      calm: ({ context }) => context.news !== undefined && !isTroubled(context),
      memberUp: ({ context }) => context.news?.memberUp === true,
      reachabilityChanged: ({ context }) => context.news?.reachabilityChanged === true,
      losingStill: ({ context }) => context.news?.losingStill === true,
      anyChange: ({ context }) =>
        context.news?.memberUp === true || context.news?.reachabilityChanged === true,
      hasNews: ({ context }) => context.news !== undefined,
      isDecider: ({ context }) => isDecider(context),
      usesLease: () => policy.usesLease,
      downsOwnSide: ({ context }) => downsOwnSide(context),
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
  /** In the states that do not route on it, an event only updates what this node knows. */
  const observeEvent = apply((c, e) => observe(policy, c, e));
  /** In the states that route on it: the event taken once, what it changed left for the guards. */
  const decideEvent = apply((c, e) => decide(policy, c, e));
  const settleEvent = apply((c) => settle(c));
  const leaseAnswer = apply((c, e) =>
    decideWithLease(c, (e as unknown as { output: boolean }).output === true),
  );
  const onEvent = {
    'sbr.view': { actions: decideEvent },
    'sbr.own-reachability': { actions: decideEvent },
  } as const;
  /** First on every event routed while active: a member counted here crossed over (see recant). */
  const recanted = { guard: 'recanted', target: '#downing.decided', actions: settleEvent } as const;
  /** Last: an event that moves nothing here is only settled. */
  const unchanged = { guard: 'hasNews', actions: settleEvent } as const;

  /**
   * While unstable (in `waiting` or `healed`; never by re-entering `unstable`, which would restart
   * the down-all-when-unstable limit): everyone reachable again → `healed`, and stable once that
   * lasts; a member becoming up is no instability: both timers start over; a reachability
   * change restarts the stable-after wait only, unless it cannot change a losing verdict
   * (losingStill).
   */
  const whileUnstable = [
    recanted,
    { guard: 'calm', target: '#downing.unstable.healed', actions: settleEvent },
    { guard: 'memberUp', target: '#downing.unstable', reenter: true, actions: settleEvent },
    { guard: 'losingStill', actions: settleEvent },
    {
      guard: 'reachabilityChanged',
      target: '#downing.unstable.waiting',
      reenter: true,
      actions: settleEvent,
    },
    unchanged,
  ] as const;

  return machineSetup.createMachine({
    id: 'downing',
    context: initialDowningContext,
    initial: 'checking',
    on: {
      'sbr.view': { actions: observeEvent },
      'sbr.own-reachability': { actions: observeEvent },
      'sbr.forget-absent': { actions: apply((c) => forgetAbsent(policy, c)) },
    },
    states: {
      checking: {
        always: [{ guard: 'active', target: 'stable' }, { target: 'inactive' }],
      },
      inactive: {},
      stable: {
        on: onEvent,
        always: [recanted, { guard: 'troubled', target: 'unstable', actions: settleEvent }, unchanged],
      },
      unstable: {
        initial: 'waiting',
        after: {
          unstableLimit: [
            {
              // no decider guard: if the side cannot agree on one, every member downs all (safe)
              guard: and(['downAllWhenUnstable', 'stillTroubled']),
              target: 'decided',
              actions: apply((c) => downAllWhenUnstable(c)),
            },
          ],
        },
        states: {
          waiting: {
            on: onEvent,
            always: whileUnstable,
            after: { stableAfter: 'deciding' },
          },
          deciding: {
            always: [
              { guard: 'isDecider', target: '#downing.deciderActs' },
              {
                guard: 'downsOwnSide',
                target: '#downing.decided',
                actions: apply((c) => selfDowning(c)!),
              },
              // not the decider, and this side survives: wait for the decider's news. Stable for
              // stable-after is the end of an instability: the down-all limit starts over too.
              { target: '#downing.unstable', reenter: true },
            ],
          },
          // Everyone reachable again. A heal and the next failure can be milliseconds apart (one
          // link heals as another breaks): only a calm that lasts ends the instability.
          healed: {
            on: onEvent,
            always: whileUnstable,
            after: { calmFor: '#downing.stable' },
          },
        },
      },
      deciderActs: {
        always: [
          { guard: 'usesLease', target: 'leaseWait' },
          { target: 'decided', actions: apply((c) => decideForSide(c)) },
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
        on: onEvent,
        always: [
          recanted,
          { guard: 'calm', target: 'stable', actions: settleEvent },
          { guard: 'anyChange', target: 'unstable', actions: settleEvent },
          unchanged,
        ],
        after: { retryAfterDecision: 'unstable' },
      },
    },
  });
}

export type DowningMachine = ReturnType<typeof createDowningMachine>;
