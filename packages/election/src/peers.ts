import { formatNodeAddress, type NodeAddress } from '@doyen/core';
import type { ElectionPeer } from './election.js';

/** Peers from addresses, ranked by their position in `nodes` (the last is the highest). */
export function peersOf(nodes: readonly NodeAddress[]): ElectionPeer[] {
  return nodes.map((node, rank) => ({ address: formatNodeAddress(node), node, rank }));
}

/** Highest rank first. */
export function byRankDescending(peers: readonly ElectionPeer[]): ElectionPeer[] {
  return [...peers].sort((a, b) => b.rank - a.rank);
}

export function highestRanked(peers: readonly ElectionPeer[]): ElectionPeer | undefined {
  let best: ElectionPeer | undefined;
  for (const p of peers) if (best === undefined || p.rank > best.rank) best = p;
  return best;
}

export function peerAt(
  peers: readonly ElectionPeer[],
  address: string | undefined,
): ElectionPeer | undefined {
  return address === undefined ? undefined : peers.find((p) => p.address === address);
}

/** Votes (or acks) needed out of `n` voters: a strict majority. */
export function majorityOf(n: number): number {
  return Math.floor(n / 2) + 1;
}

/**
 * The ring: peers ordered by rank ascending, wrapping around. Successors of `address` in ring
 * order, excluding itself (the ring algorithm skips unreachable ones in this order).
 */
export function successorsOf(peers: readonly ElectionPeer[], address: string): ElectionPeer[] {
  const ring = [...peers].sort((a, b) => a.rank - b.rank);
  const at = ring.findIndex((p) => p.address === address);
  if (at < 0) return ring;
  return [...ring.slice(at + 1), ...ring.slice(0, at)];
}
