import type { ActorSystem } from '@doyen/core';

/**
 * What reaches the etcd election: nothing from the other nodes (the store is both ballot box and
 * failure detector), only the store's word: its watch, and the answers to this node's calls,
 * each stamped with this node's clock so the decisions read time from their events.
 */

/** From the root-invoked watch; never from the network (unregistered types are refused there). */
export interface StoreChanged {
  readonly type: 'etcd.watch';
  readonly holder: string | undefined;
  readonly revision: number;
}

/** A compare-and-swap answered: the key's holder afterwards (undefined: no answer) and its revision. */
export interface CampaignAnswer {
  readonly holder: string | undefined;
  readonly revision: number;
  /** This node's clock when the call left, and when its answer came back. */
  readonly sentAt: number;
  readonly answeredAt: number;
}

/** A keep-alive answered: whether the store still holds the key for us. */
export interface KeepAliveAnswer {
  readonly confirmed: boolean;
  readonly sentAt: number;
  readonly answeredAt: number;
}

/** Nothing goes over the wire between the nodes: no message type to register. */
export function registerEtcdMessages(_types: ActorSystem['messageTypes']): void {}
