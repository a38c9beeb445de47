import type { Member, Membership } from '@doyen/cluster';
import { singletonHostOf } from './oldest.js';

/**
 * Where singletons run. The default follows the emergent leader (the oldest member); an elected
 * coordinator (`coordinator: 'quorum' | 'etcd'`) places them on the node that holds the
 * election's majority or lease instead.
 */
export interface SingletonPlacement {
  readonly kind: string;
  /** The member that should run a singleton (with `role`), as this node sees it now. */
  hostOf(membership: Membership, role: string | undefined): Member | undefined;
  /**
   * The placement itself guarantees that a former host stopped acting before a new one is
   * chosen (a majority or a lease). Then a host that loses its mandate stops its instance at
   * once, and a new host starts without a hand-over from an unreachable or gone former host and
   * without the down-removal margin.
   */
  readonly exclusive: boolean;
  /** Calls `listener` when `hostOf` (or `mayRun`) may answer differently for the same membership. */
  subscribe(listener: () => void): () => void;
  /**
   * A leased placement: the host runs instances only while `mayRun` says so (it holds the lease),
   * stops them at once when that ends, and hands over gracefully while it still holds it.
   */
  readonly leased?: boolean;
  /** Whether this node may run instances (with `role`) now; absent: whenever it is the host. */
  mayRun?(role: string | undefined): boolean;
  /** The member holding the lease this node, the host, bids for in vain: it is asked to hand over. */
  blockerOf?(role: string | undefined): string | undefined;
  /** What this node knows of the lease (with `role`), for `/singletons`. */
  leaseOf?(role: string | undefined): SingletonLeaseView;
  /** A singleton with `role` is registered here. */
  addRole?(role: string | undefined): void;
  /** How many instances (with `role`) run here now. */
  hosting?(role: string | undefined, running: number): void;
}

/** A leased placement's state on one node, as `/singletons` shows it. */
export interface SingletonLeaseView {
  /** This node holds the lease and may run the instance now. */
  readonly held: boolean;
  /** The member this node's own vote is bound to (null: none). */
  readonly votedFor: string | null;
  /** The member holding the lease this node bids for in vain (null: none). */
  readonly blockedBy: string | null;
}

/** The emergent leader's placement: the oldest up member (with the role). */
export const oldestPlacement: SingletonPlacement = {
  kind: 'oldest',
  hostOf: singletonHostOf,
  exclusive: false,
  subscribe: () => () => {},
};
