import { formatNodeAddress, type UniqueNodeAddress } from '@doyen/core';

/**
 * Life of a member. `joining` until the coordinator has told everyone, `up` while serving,
 * `leaving` → `exiting` → `removed` on a graceful leave, `down` once declared failed.
 */
export type MemberStatus = 'joining' | 'up' | 'leaving' | 'exiting' | 'down' | 'removed';

export interface Member {
  /** `host:port` */
  readonly address: string;
  /** Incarnation: a restarted process at the same address is a new member. */
  readonly uid: string;
  readonly name: string;
  /** Handed out by the coordinator from a counter that never goes back; lowest live age coordinates. */
  readonly age: number;
  readonly status: MemberStatus;
  readonly roles: readonly string[];
}

/** `host:port#uid`: identity of one incarnation. */
export function keyOf(member: { readonly address: string; readonly uid: string }): string {
  return `${member.address}#${member.uid}`;
}

export function keyOfNode(node: UniqueNodeAddress): string {
  return `${formatNodeAddress(node)}#${node.uid}`;
}

/** Parses `host:port` of a member back into a node address with its uid. */
export function nodeOf(member: { readonly address: string; readonly uid: string }): UniqueNodeAddress {
  const i = member.address.lastIndexOf(':');
  const rawHost = member.address.slice(0, i);
  const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
  return { host, port: Number(member.address.slice(i + 1)), uid: member.uid };
}

/** Statuses that still take part in the cluster (heartbeats, acks). */
export function isLive(status: MemberStatus): boolean {
  return status === 'joining' || status === 'up' || status === 'leaving' || status === 'exiting';
}
