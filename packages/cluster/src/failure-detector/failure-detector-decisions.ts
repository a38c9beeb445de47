import { addressOfKey, type DecisionStep, type LogEffect } from '@doyen/core';
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
  | { readonly type: 'fd.peers'; readonly peers: Readonly<Record<string, PeerStatus>> }
  /** The transport's dial to `address` (`host:port`) was refused: nothing listens there. */
  | { readonly type: 'fd.refused'; readonly address: string };

/** Why a peer was judged unreachable without waiting for its detector (logged as `cause`). */
export const CONNECTION_REFUSED = 'connection-refused';

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
  | { readonly kind: 'tell-downing'; readonly reachable: readonly string[] }
  /**
   * The heartbeater holds these peers unreachable (a refusal is no heartbeat the phi detector
   * would miss for a while: without this its next tick would find them reachable again) until
   * one of them is heard from again.
   */
  | { readonly kind: 'hold-unreachable'; readonly keys: readonly string[] }
  /** Counted in `doyen_fd_connection_refused_total`, one per peer judged by a refusal. */
  | { readonly kind: 'count-refused'; readonly peers: number }
  | LogEffect<'info'>;

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
  // A peer held unreachable leaves the table only once it is no target any more: heard again
  // (the ring walk that took in members behind it is undone in the same tick) or no longer a
  // member. Our observation of it is withdrawn then too; left standing, the coordinator kept it
  // for good and, under manual downing, never moved a joiner up again.
  for (const [key, before] of Object.entries(context.peers)) {
    if (before === 'unreachable' && !(key in peers)) changes.push({ subject: key, reachable: true });
  }
  if (changes.length > 0) effects.push({ kind: 'tell-membership', changes });
  if (Object.keys(context.peers).length === 0)
    effects.push({ kind: 'tell-downing', reachable: reachableKeys(peers) });
  else effects.push(...downingNews(context.peers, peers));
  return { context: { peers }, effects };
}

/** The split-brain resolver hears of the peers this node reaches when that set changed. */
function downingNews(
  before: Readonly<Record<string, PeerStatus>>,
  after: Readonly<Record<string, PeerStatus>>,
): FailureDetectorEffect[] {
  const was = reachableKeys(before);
  const now = reachableKeys(after);
  return was.join(',') === now.join(',') ? [] : [{ kind: 'tell-downing', reachable: now }];
}

/**
 * A dial to `address` was refused (pure). A kill -9 closes the process's port at once, and a
 * refused dial means nothing listens there: the monitored incarnations at that address are judged
 * unreachable now rather than when phi crosses its threshold ~1 s later. This is an observation of
 * reachability, not a downing: the split-brain resolver still waits its stable-after. A paused
 * (SIGSTOP) process still accepts and a partition drops or times out, so neither is refused and
 * both keep the phi path. Peers already unreachable, and peers at other addresses, are no news.
 */
export function connectionRefused(
  context: FailureDetectorContext,
  address: string,
): DecisionStep<FailureDetectorContext, FailureDetectorEffect> {
  const keys = Object.keys(context.peers)
    .filter((key) => context.peers[key] !== 'unreachable' && addressOfKey(key) === address)
    .sort();
  if (keys.length === 0) return { context, effects: [] };
  const peers: Record<string, PeerStatus> = { ...context.peers };
  for (const key of keys) peers[key] = 'unreachable';
  const logs = keys.map(
    (peer): LogEffect<'info'> => ({
      kind: 'log',
      level: 'info',
      event: 'fd.peer-unreachable',
      fields: { peer, cause: CONNECTION_REFUSED },
      msg: `${peer} unreachable (connection refused: nothing listens at ${address})`,
    }),
  );
  return {
    context: { peers },
    effects: [
      { kind: 'hold-unreachable', keys },
      ...logs,
      { kind: 'count-refused', peers: keys.length },
      { kind: 'tell-membership', changes: keys.map((subject) => ({ subject, reachable: false })) },
      ...downingNews(context.peers, peers),
    ],
  };
}
