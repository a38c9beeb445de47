import { formatNodeAddress, type NodeAddress, sameNode } from '@doyen/core';
import { compareContactPoints, sortedUnique } from './discovery.js';

/**
 * Akka Cluster Bootstrap's rule, as pure functions of what discovery and the probes reported:
 *
 * - a contact point that answers with seed nodes is in a cluster: join those seed nodes;
 * - otherwise keep probing until at least `requiredContactPoints` were discovered, the set has
 *   not changed for `stableMarginMs`, and every one of them answered recently ("no cluster
 *   here"); then only the contact point with the lowest address forms a new cluster: itself.
 *
 * So discovery that finds nothing forms nothing, a partitioned start waits for the heal (the
 * lowest cannot hear from everyone), and a node restarted beside a running cluster joins it.
 */

/** One probe's answer: the seed nodes a contact point offered (empty: not in a cluster). */
export interface ProbeObservation {
  readonly at: number;
  readonly seedNodes: readonly NodeAddress[];
}

export interface BootstrapState {
  /** The last discovered contact points (management endpoints), in the shared order. */
  readonly contactPoints: readonly NodeAddress[];
  /** When the set last changed. */
  readonly stableSince: number;
  /** The latest successful probe of each contact point, by `host:port`. */
  readonly observations: ReadonlyMap<string, ProbeObservation>;
}

export interface BootstrapSettings {
  /** This node's own contact point: its host and management port. */
  readonly self: NodeAddress;
  readonly requiredContactPoints: number;
  readonly stableMarginMs: number;
  /** An answer older than this no longer counts (the contact point may be gone). */
  readonly probeFreshMs: number;
  /** At most this many seed nodes are joined through (the oldest first, as offered). */
  readonly maxSeedNodes: number;
}

export type BootstrapDecision =
  | { readonly kind: 'join'; readonly seedNodes: readonly NodeAddress[] }
  | { readonly kind: 'form' }
  | { readonly kind: 'keep-probing'; readonly reason: string };

export function initialBootstrapState(now: number): BootstrapState {
  return { contactPoints: [], stableSince: now, observations: new Map() };
}

/** Discovery answered `points`: a different set restarts the stable margin; answers of vanished points are dropped. */
export function discovered(
  state: BootstrapState,
  points: readonly NodeAddress[],
  now: number,
): BootstrapState {
  const next = sortedUnique(points);
  const same =
    next.length === state.contactPoints.length && next.every((p, i) => sameNode(p, state.contactPoints[i]!));
  if (same) return state;
  const keep = new Set(next.map(formatNodeAddress));
  const observations = new Map([...state.observations].filter(([key]) => keep.has(key)));
  return { contactPoints: next, stableSince: now, observations };
}

/** A probe of `point` answered with `seedNodes` (empty: that node is not in a cluster yet). */
export function observed(
  state: BootstrapState,
  point: NodeAddress,
  seedNodes: readonly NodeAddress[],
  now: number,
): BootstrapState {
  const key = formatNodeAddress(point);
  if (!state.contactPoints.some((p) => sameNode(p, point))) return state;
  const observations = new Map(state.observations);
  observations.set(key, { at: now, seedNodes: [...seedNodes] });
  return { ...state, observations };
}

export function decide(state: BootstrapState, settings: BootstrapSettings, now: number): BootstrapDecision {
  const fresh = new Map([...state.observations].filter(([, o]) => now - o.at <= settings.probeFreshMs));
  const offered: NodeAddress[] = [];
  for (const point of state.contactPoints) {
    for (const seed of fresh.get(formatNodeAddress(point))?.seedNodes ?? []) {
      if (!offered.some((s) => sameNode(s, seed))) offered.push(seed);
    }
  }
  if (offered.length > 0) return { kind: 'join', seedNodes: offered.slice(0, settings.maxSeedNodes) };
  const seen = state.contactPoints.length;
  if (seen < settings.requiredContactPoints) {
    return {
      kind: 'keep-probing',
      reason: `${seen} contact point(s) discovered, ${settings.requiredContactPoints} required`,
    };
  }
  const stableFor = now - state.stableSince;
  if (stableFor < settings.stableMarginMs) {
    return {
      kind: 'keep-probing',
      reason: `contact points stable for ${stableFor} ms of ${settings.stableMarginMs}`,
    };
  }
  const silent = state.contactPoints.filter((p) => !fresh.has(formatNodeAddress(p)));
  if (silent.length > 0) {
    return {
      kind: 'keep-probing',
      reason: `no recent answer from ${silent.map(formatNodeAddress).join(', ')}`,
    };
  }
  const lowest = [...state.contactPoints].sort(compareContactPoints)[0]!;
  if (!sameNode(lowest, settings.self)) {
    return {
      kind: 'keep-probing',
      reason: `no cluster yet; ${formatNodeAddress(lowest)} (the lowest contact point) forms it`,
    };
  }
  return { kind: 'form' };
}
