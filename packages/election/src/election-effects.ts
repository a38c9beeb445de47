import type { Message } from '@doyen/core';
import type { ElectionPeer, ElectionRole, LeaderView } from './election.js';
import { peerAt } from './peers.js';

/**
 * The effects a message-passing election's decision asks of its machine, as data: sends, log
 * lines and the view it reports. The machine's one action `run` (election-machine.ts) does them.
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
