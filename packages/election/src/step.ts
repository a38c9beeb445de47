/**
 * An event handler's work written as plain code: it edits a draft of the context and queues
 * effects; `flushStep` turns both into xstate actions in order (assign first, then the effects),
 * so a handler stays one readable function while the machine stays pure.
 */
export type StepOp<E> =
  | { readonly op: 'do'; readonly fn: () => void }
  | { readonly op: 'cancel'; readonly id: string }
  | { readonly op: 'raise'; readonly event: E; readonly id?: string; readonly delay?: number };

export interface Step<C, E> {
  ctx: { -readonly [K in keyof C]: C[K] };
  readonly ops: StepOp<E>[];
}

/** The part of xstate's `enqueueActions` helper a step needs. */
export interface StepEnqueue<C, E> {
  (fn: () => void): void;
  assign(values: Partial<C>): void;
  cancel(id: string): void;
  raise(event: E, options?: { id?: string; delay?: number }): void;
}

export function newStep<C, E>(context: C): Step<C, E> {
  return { ctx: { ...context }, ops: [] };
}

export function flushStep<C, E>(s: Step<C, E>, enqueue: StepEnqueue<C, E>): void {
  enqueue.assign(s.ctx as Partial<C>);
  for (const op of s.ops) {
    if (op.op === 'do') enqueue(op.fn);
    else if (op.op === 'cancel') enqueue.cancel(op.id);
    else if (op.id !== undefined) enqueue.raise(op.event, { id: op.id, delay: op.delay ?? 0 });
    else enqueue.raise(op.event);
  }
}
