import {
  type ActorRef,
  formatNodeAddress,
  type NodeAddress,
  parseNodeAddress,
  type UniqueNodeAddress,
} from '@doyen/core';
import { compareAddress } from '../downing/sbr-view.js';
import type { Merge, Probe, ProbeReply, SbcView } from './split-brain-checker-messages.js';

/**
 * The split-brain checker's decisions, pure: context and event in, next context and effects out
 * (no logger, ref or clock here; split-brain-checker-machine.ts carries the effects out).
 */

export interface CheckerContext {
  /** The membership's last view; undefined until the first one. */
  readonly view: SbcView | undefined;
  /** Set once a merge started (as its initiator or on our coordinator's order): final. */
  readonly merging: boolean;
  /** The addresses the last probing round asked: only their replies are believed. */
  readonly probed: readonly string[];
}

export const initialCheckerContext: CheckerContext = { view: undefined, merging: false, probed: [] };

/** What the decisions know of this node. */
export interface CheckerEnv {
  /** This node's incarnation: probes and replies name it. */
  readonly self: UniqueNodeAddress;
  /** `host:port` of this node. */
  readonly selfAddress: string;
  /** The seeds (as discovery resolved them): a cluster found at one of them is ours to find. */
  readonly seeds: readonly NodeAddress[];
}

/** Time for the merge orders to reach the other members before the initiator restarts. */
export const MERGE_SEND_GRACE_MS = 250;

/** Every effect of the checker, carried out in order by the machine's one action `run`. */
export type CheckerEffect =
  /** Ask each of `targets` (any incarnation) whether it coordinates another sub-cluster, telling our `size`. */
  | { readonly kind: 'probe'; readonly targets: readonly NodeAddress[]; readonly size: number }
  /** Answer a probe with our coordinator and size, in our own name. */
  | { readonly kind: 'reply'; readonly to: ActorRef; readonly reply: ProbeReply }
  /** Order each of `to` (our other members, by address, any incarnation) to merge. */
  | { readonly kind: 'order-merge'; readonly to: readonly NodeAddress[]; readonly merge: Merge }
  /**
   * Restart this node as a new incarnation joining through `seeds`; after `graceMs` when given
   * (the merge orders must leave before this node's transport closes), else at once.
   */
  | { readonly kind: 'rejoin'; readonly seeds: readonly NodeAddress[]; readonly graceMs?: number }
  | {
      readonly kind: 'log';
      readonly level: 'warn';
      readonly event: 'split-brain.merge';
      readonly fields: Readonly<Record<string, unknown>>;
      readonly msg: string;
    };

export interface CheckerStep {
  readonly context: CheckerContext;
  readonly effects: readonly CheckerEffect[];
}

const addressOf = formatNodeAddress;

/**
 * Who merges into whom (pure, the same answer on both sides): the smaller sub-cluster joins the
 * larger; equal sizes keep the side whose coordinator has the lowest address.
 */
export function shouldMergeInto(
  mine: { size: number; address: string },
  theirs: { size: number; address: string },
) {
  if (mine.size !== theirs.size) return mine.size < theirs.size;
  return compareAddress(mine.address, theirs.address) > 0;
}

/** The addresses one probing round asks (failed members' addresses that are not ours now). */
export function probeTargets(view: SbcView): string[] {
  const targets = new Set<string>();
  for (const f of view.failed) {
    const a = addressOf(f);
    if (!view.memberAddresses.includes(a)) targets.add(a);
  }
  return [...targets];
}

/**
 * Whether a probe reply may lead to a merge (pure): it answers a probe of ours (it comes from an
 * address this node probed), and the cluster it names was found by this node itself: its
 * coordinator is an address we probed or one of our seeds (the seeds discovery resolved). An
 * unsolicited reply, or one pointing elsewhere, could otherwise move the whole cluster into
 * whatever address a peer names.
 */
export function isOwnFinding(
  probed: readonly string[],
  seeds: readonly NodeAddress[],
  reply: Pick<ProbeReply, 'from' | 'coordinator'>,
): boolean {
  if (!probed.includes(addressOf(reply.from))) return false;
  const target = addressOf(reply.coordinator);
  return probed.includes(target) || seeds.some((s) => addressOf(s) === target);
}

/** A new view from the membership. */
export function takeView(context: CheckerContext, view: SbcView): CheckerStep {
  return { context: { ...context, view }, effects: [] };
}

/** Whether to probe: this node coordinates, some members failed, and no merge is under way. */
export function shouldProbe(context: CheckerContext): boolean {
  return (
    !context.merging &&
    context.view !== undefined &&
    context.view.isCoordinator &&
    context.view.failed.length > 0
  );
}

/** Whether probing stops: no merge under way and nothing to probe for (not the coordinator, or nobody failed). */
export function stopsProbing(context: CheckerContext): boolean {
  return !context.merging && !(context.view?.isCoordinator && context.view.failed.length > 0);
}

/**
 * One probing round: its targets are remembered first (only their replies are believed), then
 * each failed address not ours now is probed once, in the order of the failed list.
 */
export function probeRound(context: CheckerContext): CheckerStep {
  const view = context.view!;
  const probed = probeTargets(view);
  const remaining = new Set(probed);
  const targets: NodeAddress[] = [];
  for (const f of view.failed) if (remaining.delete(addressOf(f))) targets.push(f);
  return {
    context: { ...context, probed },
    effects: [{ kind: 'probe', targets, size: view.size }],
  };
}

/** A probe from another sub-cluster's coordinator: answer with ours, unless it is one of ours or we merge. */
export function answerProbe(env: CheckerEnv, context: CheckerContext, probe: Probe): CheckerStep {
  const view = context.view;
  if (!view || context.merging || !view.coordinator) return { context, effects: [] };
  // the prober is one of ours: nothing to merge
  if (view.memberAddresses.includes(addressOf(probe.coordinator))) return { context, effects: [] };
  const reply: ProbeReply = {
    type: 'sbc.probe-reply',
    coordinator: view.coordinator,
    size: view.size,
    from: env.self,
  };
  return { context, effects: [{ kind: 'reply', to: probe.replyTo, reply }] };
}

/**
 * Whether a probe reply makes this node start a merge: it coordinates, no merge is under way,
 * the reply names another cluster found by this node's own probing, and ours is the side that
 * joins (smaller, or equal with the higher coordinator address).
 */
export function replyMerges(env: CheckerEnv, context: CheckerContext, reply: ProbeReply): boolean {
  const view = context.view;
  if (!view?.isCoordinator || context.merging) return false;
  if (view.memberAddresses.includes(addressOf(reply.coordinator))) return false;
  if (!isOwnFinding(context.probed, env.seeds, reply)) return false;
  return shouldMergeInto(
    { size: view.size, address: env.selfAddress },
    { size: reply.size, address: addressOf(reply.coordinator) },
  );
}

/**
 * The initiator's merge (after `replyMerges`): log it, order every other member of ours to merge
 * into the reply's coordinator, and restart once the orders had time to leave.
 */
export function startMerge(env: CheckerEnv, context: CheckerContext, reply: ProbeReply): CheckerStep {
  const view = context.view!;
  const target = reply.coordinator;
  const merge: Merge = {
    type: 'sbc.merge',
    from: view.coordinatorKey!,
    target: { host: target.host, port: target.port },
  };
  return merging(
    context,
    {
      fields: { role: 'initiator', target: addressOf(target), ourSize: view.size, theirSize: reply.size },
      msg: `split brain: merging our ${view.size} members into ${addressOf(target)}'s ${reply.size}`,
    },
    [
      {
        kind: 'order-merge',
        to: view.memberAddresses.filter((a) => a !== env.selfAddress).map(parseNodeAddress),
        merge,
      },
      { kind: 'rejoin', seeds: [merge.target], graceMs: MERGE_SEND_GRACE_MS },
    ],
  );
}

/** Whether a merge order is obeyed: only from our coordinator, and only once. */
export function obeysMerge(context: CheckerContext, merge: Merge): boolean {
  return !context.merging && merge.from === context.view?.coordinatorKey;
}

/** Our coordinator's merge order (after `obeysMerge`): log it and restart at once into its target. */
export function followMerge(context: CheckerContext, merge: Merge): CheckerStep {
  return merging(
    context,
    {
      fields: { role: 'member', target: addressOf(merge.target) },
      msg: `split brain: our coordinator merges us into ${addressOf(merge.target)}; rejoining`,
    },
    [{ kind: 'rejoin', seeds: [merge.target] }],
  );
}

/**
 * A merge starting, as its initiator or on our coordinator's order: from here on `merging` stays
 * set (no second merge, no order obeyed twice), the `split-brain.merge` line says why, then `then`
 * carries it out.
 */
function merging(
  context: CheckerContext,
  log: { readonly fields: Readonly<Record<string, unknown>>; readonly msg: string },
  then: readonly CheckerEffect[],
): CheckerStep {
  return {
    context: { ...context, merging: true },
    effects: [{ kind: 'log', level: 'warn', event: 'split-brain.merge', ...log }, ...then],
  };
}
