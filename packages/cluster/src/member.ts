import { nodeKey, parseNodeAddress, type UniqueNodeAddress } from '@doyen/core';

export { addressOfKey, nodeOfKey } from '@doyen/core';

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
  /**
   * The incarnation's identity key (base64url Ed25519), admitted by the coordinator from the
   * joiner's authenticated connection: a connection claiming this member must sign with it.
   * Absent in clusters whose transport has no identity keys (the simulation).
   */
  readonly publicKey?: string;
}

/**
 * `host:port#uid`: the identity of one incarnation, the one way a member is named (in views,
 * observations, downing decisions, partition tables, logs). From a member or from a node
 * address with its uid; read back with `nodeOfKey` and `addressOfKey`.
 */
export function memberKey(
  member: { readonly address: string; readonly uid: string } | UniqueNodeAddress,
): string {
  return 'address' in member ? `${member.address}#${member.uid}` : nodeKey(member);
}

/** The node address (with its uid) of a member, to send to it. */
export function nodeOf(member: { readonly address: string; readonly uid: string }): UniqueNodeAddress {
  return { ...parseNodeAddress(member.address), uid: member.uid };
}

/** Statuses that still take part in the cluster (heartbeats, acks). */
export function isLive(status: MemberStatus): boolean {
  return status === 'joining' || status === 'up' || status === 'leaving' || status === 'exiting';
}

/**
 * The oldest of `members`: the lowest `age` (the coordinator hands ages out from a counter that
 * never goes back, so no two members share one) among those whose status is one of `statuses`
 * and, with `role`, that have the role. The default counts only `up` members: singletons run on
 * the oldest up member, so a leaving oldest hands over to the next. Keep-oldest downing counts
 * `up`, `leaving` and `exiting` (`SINGLETON_HOLDING`): a leaving oldest still runs its
 * singletons until it exits, so its side is the one to keep.
 */
export function oldestOf<
  M extends { readonly age: number; readonly status: MemberStatus; readonly roles: readonly string[] },
>(
  members: Iterable<M>,
  options: { readonly statuses?: readonly MemberStatus[]; readonly role?: string } = {},
): M | undefined {
  const statuses = options.statuses ?? ['up'];
  let oldest: M | undefined;
  for (const m of members) {
    if (!statuses.includes(m.status)) continue;
    if (options.role !== undefined && !m.roles.includes(options.role)) continue;
    if (oldest === undefined || m.age < oldest.age) oldest = m;
  }
  return oldest;
}

/** Statuses of a member that may still run singletons (up, or on its way out). */
export const SINGLETON_HOLDING: readonly MemberStatus[] = ['up', 'leaving', 'exiting'];
