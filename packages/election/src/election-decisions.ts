import type { DecisionStep, Message } from '@doyen/core';
import type { ElectionPeer, ElectionRole, LeaderView, PeersChanged } from './election.js';
import { peerAt } from './peers.js';

/**
 * What the message-passing elections (bully, candidate, ring, invitation) decide alike, as pure
 * data: the effects their machine's one action `run` carries out, the timers a decision starts
 * or cancels, and the rules every one of them reads (a sender must be a current peer, ranks
 * compare, the leader may leave the peers). election-machine.ts executes them.
 */

/** An info line; the machine adds the algorithm (and node) to `fields`. */
export interface LogEffect {
  readonly kind: 'log';
  readonly event: string;
  readonly fields: Readonly<Record<string, unknown>>;
  readonly msg: string;
}

/** This node's view after a change (deduplicated by the election's edge). */
export interface ReportEffect {
  readonly kind: 'report';
  readonly view: LeaderView;
}

export type ElectionEffect =
  /** To one peer's election machine, through the election's transport (counted there). */
  | { readonly kind: 'send'; readonly peer: ElectionPeer; readonly message: Message }
  | LogEffect
  | ReportEffect;

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

export function send(peer: ElectionPeer, message: object): ElectionEffect {
  return { kind: 'send', peer, message: message as Message };
}

/** `message` to the peer at `address`, if it is one (nothing otherwise). */
export function sendTo(
  peers: readonly ElectionPeer[],
  address: string | null,
  message: object,
): ElectionEffect[] {
  const peer = peerAt(peers, address ?? undefined);
  return peer ? [send(peer, message)] : [];
}

export function log(event: string, fields: Record<string, unknown>, msg: string): ElectionEffect {
  return { kind: 'log', event, fields, msg };
}

/**
 * The view of an election without terms or leases: a leader acts while it leads (these
 * algorithms promise no single leader under partitions).
 */
export function report(role: ElectionRole, leader: string | null): ElectionEffect {
  return { kind: 'report', view: { role, leader: leader ?? undefined, term: 0, acting: role === 'leading' } };
}

/** Rank of the peer at `address`; -1 for nobody or a stranger. */
export function rankOf(peers: readonly ElectionPeer[], address: string | null): number {
  return address === null ? -1 : (peerAt(peers, address)?.rank ?? -1);
}

/** Sender of a network message, if it is one of the current peers (others are ignored). */
export function senderOf(
  peers: readonly ElectionPeer[],
  event: { readonly type: string; readonly from?: unknown },
): ElectionPeer | undefined {
  return event.type === 'election.peers' || typeof event.from !== 'string'
    ? undefined
    : peerAt(peers, event.from);
}

/** What the rank-based machines (bully, candidate) keep alike. */
interface Following {
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

/** Every peer but `self`. */
export function othersThan(self: ElectionPeer, peers: readonly ElectionPeer[]): ElectionPeer[] {
  return peers.filter((p) => p.address !== self.address);
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
