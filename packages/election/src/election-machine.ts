import { type DecisionEnqueue, enqueueDecision } from '@doyen/core';
import type { ElectionDeps } from './election.js';
import { type ElectionStep, type Following, fromLeader, leaderRemoved } from './election-decisions.js';
import type { ElectionEffect } from './election-effects.js';

/**
 * The I/O half every message-passing election machine shares: its one action `run`, and how a
 * decision is applied (context assigned, effects to `run`, then its timers).
 */

/** The action `run`: sends through the election's transport, logs with `fields`, reports the view. */
export function runElectionEffect(deps: ElectionDeps, fields: Readonly<Record<string, unknown>>) {
  return (_: unknown, effect: ElectionEffect): void => {
    switch (effect.kind) {
      case 'send':
        deps.send(effect.peer, effect.message);
        return;
      case 'log':
        deps.system.logger.info({ event: effect.event, ...fields, ...effect.fields }, effect.msg);
        return;
      case 'report':
        deps.report(effect.view);
        return;
    }
  };
}

/** The part of xstate's `enqueue` (in `enqueueActions`) that applying an election step uses. */
export interface ElectionEnqueue<C, E> extends DecisionEnqueue<C, ElectionEffect> {
  cancel(id: string): void;
  raise(event: E, options?: { id?: string; delay?: number }): void;
}

/** Applies `step`: its context and effects through {@link enqueueDecision}, then its timers in order. */
export function enqueueElectionStep<C, E>(
  enqueue: ElectionEnqueue<C, E>,
  context: C,
  step: ElectionStep<C, E>,
): void {
  enqueueDecision(enqueue, context, step);
  for (const timer of step.timers) {
    if (timer.op === 'cancel') enqueue.cancel(timer.id);
    else if (timer.id !== undefined) enqueue.raise(timer.event, { id: timer.id, delay: timer.delay ?? 0 });
    else enqueue.raise(timer.event);
  }
}

/**
 * The body of a machine's `enqueueActions` applying `decide` to its context and event, so each
 * machine's `apply` is one line: `machineSetup.enqueueActions(stepOf(decide))`.
 */
export function stepOf<C, Ev, E>(decide: (context: C, event: Ev) => ElectionStep<C, E>) {
  return ({ context, event, enqueue }: { context: C; event: Ev; enqueue: unknown }): void =>
    enqueueElectionStep(enqueue as ElectionEnqueue<C, E>, context, decide(context, event));
}

/**
 * The guards of every machine that follows one leader (bully, candidate), wired alike: a message
 * from the followed leader, and peers that no longer include it.
 */
export const followingGuards = {
  fromLeader: ({
    context,
    event,
  }: {
    context: Following;
    event: { readonly type: string; readonly from?: unknown };
  }) => fromLeader(context, event),
  leaderRemoved: ({ context, event }: { context: Following; event: { readonly type: string } }) =>
    leaderRemoved(context, event),
};
