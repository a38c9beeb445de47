import type { NodeAddress, UniqueNodeAddress } from './address.js';
import type { Message } from './message.js';

/**
 * Traffic class of a message. Cluster protocol traffic travels on its own lane so heartbeats
 * are never queued behind user messages.
 */
export type Lane = 'system' | 'user';

/** What crosses the network for one message. */
export interface Envelope {
  /** Path of the recipient on the receiving node, e.g. `/user/orders`. */
  readonly to: string;
  /** The node incarnation the sender meant; a mismatch means the recipient is gone. */
  readonly toUid: string;
  /** Address of the sending actor, if any. */
  readonly from: string | undefined;
  readonly message: Message;
  /** W3C traceparent of the span the message was sent in (OpenTelemetry), when there was one. */
  readonly trace?: string;
}

/** The network as the actor system sees it: the wire implements it with WebSockets, the testkit in memory. */
export interface RemoteTransport {
  send(node: UniqueNodeAddress, envelope: Envelope, lane: Lane): void;
  /** Why the last dial to a node failed (`connect ECONNREFUSED …`), if it did and none succeeded since. */
  lastDialFailure?(node: NodeAddress): string | undefined;
  /**
   * Calls `listener` whenever a dial to a node is refused (ECONNREFUSED: nothing listens at that
   * address; a crashed process, not a paused or cut-off one). Returns the unsubscribe function.
   */
  onConnectionRefused?(listener: (node: NodeAddress) => void): () => void;
}

/** System paths travel on the system lane, everything else on the user lane. */
export function laneOf(path: string): Lane {
  return path.startsWith('/system/') ? 'system' : 'user';
}
