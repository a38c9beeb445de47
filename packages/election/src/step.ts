import type { Message } from '@doyen/core';
import type { ElectionDeps, ElectionPeer } from './election.js';

/**
 * One event's decision in the ring and invitation machines, whose handlers are long enough to
 * read best as plain code: a handler edits a draft of the next context and appends operations,
 * all data (effects for the action `run`, timers to cancel, events to raise). `flushStep`
 * enqueues them in order (assign first), so the decision stays a pure function of (context,
 * event) and only `run` touches the network or the log, as in every other protocol machine.
 */
export type ElectionEffect =
  | { readonly kind: 'send'; readonly peer: ElectionPeer; readonly message: Message }
  | {
      readonly kind: 'log';
      readonly event: string;
      readonly fields: Readonly<Record<string, unknown>>;
      readonly msg: string;
    };

export type StepOp<E> =
  | { readonly op: 'run'; readonly effect: ElectionEffect }
  | { readonly op: 'cancel'; readonly id: string }
  | { readonly op: 'raise'; readonly event: E; readonly id?: string; readonly delay?: number };

export interface Step<C, E> {
  ctx: { -readonly [K in keyof C]: C[K] };
  readonly ops: StepOp<E>[];
}

/** The part of xstate's `enqueueActions` helper a step needs. */
export interface StepEnqueue<C, E> {
  (action: { readonly type: 'run'; readonly params: ElectionEffect }): void;
  assign(values: Partial<C>): void;
  cancel(id: string): void;
  raise(event: E, options?: { id?: string; delay?: number }): void;
}

export function newStep<C, E>(context: C): Step<C, E> {
  return { ctx: { ...context }, ops: [] };
}

/** Appends an effect for the action `run`. */
export function effect<C, E>(s: Step<C, E>, e: ElectionEffect): void {
  s.ops.push({ op: 'run', effect: e });
}

export function flushStep<C, E>(s: Step<C, E>, enqueue: StepEnqueue<C, E>): void {
  enqueue.assign(s.ctx as Partial<C>);
  for (const op of s.ops) {
    if (op.op === 'run') enqueue({ type: 'run', params: op.effect });
    else if (op.op === 'cancel') enqueue.cancel(op.id);
    else if (op.id !== undefined) enqueue.raise(op.event, { id: op.id, delay: op.delay ?? 0 });
    else enqueue.raise(op.event);
  }
}

/** The action `run` of such a machine: sends through the election's transport, logs with `fields`. */
export function runElectionEffect(deps: ElectionDeps, fields: Readonly<Record<string, unknown>>) {
  return (_: unknown, e: ElectionEffect): void => {
    if (e.kind === 'send') deps.send(e.peer, e.message);
    else deps.system.logger.info({ event: e.event, ...fields, ...e.fields }, e.msg);
  };
}
