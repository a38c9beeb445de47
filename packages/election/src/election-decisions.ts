import type { DecisionStep } from '@doyen/core';
import type { ElectionPeer, PeersChanged } from './election.js';
import { type ElectionEffect, report } from './election-effects.js';
import { senderOf } from './peers.js';

/**
 * What the message-passing elections (bully, candidate, ring, invitation) decide alike, as pure
 * data: a decision's step (next context, effects from election-effects.ts, the timers it starts
 * or cancels) and the rules every one of them reads (a sender must be a current peer, the leader
 * may leave the peers). election-machine.ts executes them.
 */

/**
 * A timer a decision starts or cancels, applied in order after its effects: xstate defers both
 * to the end of the step, so their order among themselves is what counts. A `raise` without an
 * id is an immediate internal event.
 */
export type TimerOp<E> =
  | { readonly op: 'cancel'; readonly id: string }
  | { readonly op: 'raise'; readonly event: E; readonly id?: string; readonly delay?: number };

/** A decision: the next context, its effects for `run`, and its timers (see {@link TimerOp}). */
export interface ElectionStep<C, E = never> extends DecisionStep<C, ElectionEffect> {
  readonly timers: readonly TimerOp<E>[];
}

/** No change, nothing to do. */
export function same<C, E = never>(context: C): ElectionStep<C, E> {
  return { context, effects: [], timers: [] };
}

/** `step` with `more` effects (and timers) appended, its context replaced when given. */
export function also<C, E>(
  step: ElectionStep<C, E>,
  more: {
    readonly context?: C;
    readonly effects?: readonly ElectionEffect[];
    readonly timers?: readonly TimerOp<E>[];
  },
): ElectionStep<C, E> {
  return {
    context: more.context ?? step.context,
    effects: more.effects ? [...step.effects, ...more.effects] : step.effects,
    timers: more.timers ? [...step.timers, ...more.timers] : step.timers,
  };
}

/** What the machines that follow one leader (bully, candidate, ring) keep alike in their context. */
export interface Following {
  readonly peers: readonly ElectionPeer[];
  /** Whom this node follows (itself while leading); null while looking. */
  readonly leader: string | null;
}

/** A network message from the leader we follow (one of the current peers). */
export function fromLeader(c: Following, event: { readonly type: string; readonly from?: unknown }): boolean {
  return senderOf(c.peers, event) !== undefined && event.from === c.leader;
}

/** The peers changed and no longer include the leader we follow. */
export function leaderRemoved(c: Following, event: { readonly type: string }): boolean {
  return (
    event.type === 'election.peers' &&
    c.leader !== null &&
    !(event as PeersChanged).peers.some((p) => p.address === c.leader)
  );
}

export function reportLooking<C, E = never>(c: C): ElectionStep<C, E> {
  return { context: c, effects: [report('looking', null)], timers: [] };
}

export function reportFollowing<C extends Following, E = never>(c: C): ElectionStep<C, E> {
  return { context: c, effects: [report('following', c.leader)], timers: [] };
}

/** The new peer list, nothing else. */
export function takePeers<C extends { readonly peers: readonly ElectionPeer[] }, E = never>(
  context: C,
  event: { readonly type: string },
): ElectionStep<C, E> {
  return event.type === 'election.peers'
    ? same({ ...context, peers: (event as PeersChanged).peers })
    : same(context);
}
