import type { DecisionStep } from '@doyen/core';
import type { ReachabilityChange } from '../membership/membership-messages.js';
import type { Membership } from '../model/membership.js';
import type { PeerStatus } from './heartbeater.js';

/**
 * The failure detector machine's decisions, pure: context and event in, next context and effects
 * out (failure-detector-machine.ts carries the effects out).
 */

export interface FailureDetectorContext {
  /** Monitored peers (member keys) and what the detector currently thinks of each. */
  readonly peers: Readonly<Record<string, PeerStatus>>;
}

export type FailureDetectorEvent =
  | { readonly type: 'fd.members'; readonly membership: Membership }
  | { readonly type: 'fd.peers'; readonly peers: Readonly<Record<string, PeerStatus>> };

/**
 * Every effect of the failure detector machine, carried out in order by its one action `run`:
 * hand a new membership to the heartbeater (`monitor`), tell the membership of peers that crossed
 * the unreachable line (`tell-membership`), tell the split-brain resolver which peers this node
 * reaches (`tell-downing`).
 */
export type FailureDetectorEffect =
  | { readonly kind: 'monitor'; readonly membership: Membership }
  /** Every peer that crossed the unreachable line in one table change: one report to the members. */
  | { readonly kind: 'tell-membership'; readonly changes: readonly ReachabilityChange[] }
  | { readonly kind: 'tell-downing'; readonly reachable: readonly string[] };

/** Peers heard from and not judged unreachable (an `unheard` one is no evidence either way). */
const reachableKeys = (peers: Readonly<Record<string, PeerStatus>>): string[] =>
  Object.entries(peers)
    .filter(([, s]) => s === 'reachable' || s === 'suspect')
    .map(([k]) => k)
    .sort();

/**
 * The heartbeater's table changed (pure): the membership hears of every peer that crossed the
 * unreachable line, the split-brain resolver of the new set of peers this node reaches.
 */
export function peersChanged(
  context: FailureDetectorContext,
  peers: Readonly<Record<string, PeerStatus>>,
): DecisionStep<FailureDetectorContext, FailureDetectorEffect> {
  const effects: FailureDetectorEffect[] = [];
  const changes: ReachabilityChange[] = [];
  for (const [key, after] of Object.entries(peers)) {
    const before = context.peers[key];
    // a new peer starts reachable: only a change of mind is news
    if (before !== undefined && (before === 'unreachable') !== (after === 'unreachable')) {
      changes.push({ subject: key, reachable: after !== 'unreachable' });
    }
  }
  if (changes.length > 0) effects.push({ kind: 'tell-membership', changes });
  const was = reachableKeys(context.peers);
  const now = reachableKeys(peers);
  if (was.join(',') !== now.join(',') || Object.keys(context.peers).length === 0) {
    effects.push({ kind: 'tell-downing', reachable: now });
  }
  return { context: { peers }, effects };
}
