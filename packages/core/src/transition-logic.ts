import { type AnyActorLogic, type EventObject, fromTransition as xstateFromTransition } from 'xstate';

/** The user's reducer, as doyen's cells call it on the fast path: (state, event) -> next state. */
export type Reducer = (state: unknown, event: EventObject) => unknown;

const REDUCER = Symbol.for('doyen.transition-reducer');
const recognised = new WeakMap<object, Reducer | null>();

/**
 * xstate's `fromTransition`, tagged so doyen's cells run the reducer themselves (no xstate actor
 * per doyen actor, nothing per message but the call). The logic stays xstate logic: it can be
 * given to `createActor`, invoked from a machine, or spawned by doyen like any other.
 */
export const fromTransition: typeof xstateFromTransition = (transition, initialContext) => {
  const logic = xstateFromTransition(transition, initialContext);
  Object.defineProperty(logic, REDUCER, { value: transition });
  return logic;
};

/**
 * The reducer of transition logic whose cell may run it directly, or undefined to run the logic
 * through an xstate actor. Recognises doyen's `fromTransition` by its tag and xstate's by its shape
 * (xstate 5: `config` is the reducer, no `start`, snapshots persisted and restored as they are).
 * A reducer that declares a third parameter wants xstate's actor scope (`self`, `emit`, …), which
 * only an xstate actor provides: it takes the xstate path.
 */
export function reducerOf(logic: AnyActorLogic): Reducer | undefined {
  let reducer = recognised.get(logic);
  if (reducer === undefined) {
    reducer = recognise(logic as unknown as Record<PropertyKey, unknown>);
    recognised.set(logic, reducer);
  }
  return reducer ?? undefined;
}

function recognise(logic: Record<PropertyKey, unknown>): Reducer | null {
  const tagged = logic[REDUCER];
  const candidate =
    typeof tagged === 'function' ? tagged : looksLikeXstateTransition(logic) ? logic.config : undefined;
  if (typeof candidate !== 'function' || candidate.length > 2) return null;
  return candidate as Reducer;
}

function looksLikeXstateTransition(logic: Record<PropertyKey, unknown>): boolean {
  if (
    typeof logic.config !== 'function' ||
    logic.start !== undefined ||
    typeof logic.transition !== 'function' ||
    typeof logic.getInitialSnapshot !== 'function' ||
    typeof logic.getPersistedSnapshot !== 'function' ||
    typeof logic.restoreSnapshot !== 'function'
  )
    return false;
  // Both are the identity in xstate's fromTransition; probing them runs no user code.
  const probe = { status: 'active', context: undefined };
  const persist = logic.getPersistedSnapshot as (s: unknown, o?: unknown) => unknown;
  const restore = logic.restoreSnapshot as (s: unknown, scope?: unknown) => unknown;
  try {
    return persist(probe) === probe && restore(probe) === probe;
  } catch {
    return false;
  }
}
