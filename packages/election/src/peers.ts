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

/** Every peer but `self`. */
export function othersThan(self: ElectionPeer, peers: readonly ElectionPeer[]): ElectionPeer[] {
  return peers.filter((p) => p.address !== self.address);
}
