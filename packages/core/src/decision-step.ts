/**
 * The one way a protocol machine applies a decision (see CONTRIBUTING.md): a pure function of
 * (context, event) returns the next context and the effects as data; the machine assigns the
 * context and hands each effect, in order, to its one action `run`, the only code with I/O.
 */
export interface DecisionStep<C, F> {
  readonly context: C;
  readonly effects: readonly F[];
}

/**
 * A log line as a decision's effect: the machine's `run` writes it at `level` with its `event`
 * and `fields`. `Level` narrows the levels a protocol logs at.
 */
export interface LogEffect<Level extends 'debug' | 'info' | 'warn' = 'debug' | 'info' | 'warn'> {
  readonly kind: 'log';
  readonly level: Level;
  readonly event: string;
  readonly fields: Readonly<Record<string, unknown>>;
  readonly msg: string;
}

/** The part of xstate's `enqueue` (in `enqueueActions`) that applying a decision uses. */
export interface DecisionEnqueue<C, F> {
  (action: { readonly type: 'run'; readonly params: F }): void;
  assign(assigner: () => C): void;
}

/** Assigns the step's context when it changed, then enqueues `run` for each effect. */
export function enqueueDecision<C, F>(
  enqueue: DecisionEnqueue<C, F>,
  context: C,
  step: DecisionStep<C, F>,
): void {
  if (step.context !== context) enqueue.assign(() => step.context);
  for (const effect of step.effects) enqueue({ type: 'run', params: effect });
}
