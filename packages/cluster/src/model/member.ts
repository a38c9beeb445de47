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
 * @deprecated `nodeKey` from `@doyen/core` is the one name of a member key (`host:port#uid`),
 * from a member or from a node address with its uid: the key names a node incarnation, whether
 * or not it is a member yet (a joiner, a prober, a wire origin), core reads it back
 * (`nodeOfKey`, `addressOfKey`) and checks it at the boundary. This alias stays for one release.
 */
export const memberKey: typeof nodeKey = nodeKey;

/** The node address (with its uid) of a member, to send to it. */
export function nodeOf(member: { readonly address: string; readonly uid: string }): UniqueNodeAddress {
  return { ...parseNodeAddress(member.address), uid: member.uid };
}

/** Statuses that still take part in the cluster (heartbeats, acks). */
export function isLive(status: MemberStatus): boolean {
  return status === 'joining' || status === 'up' || status === 'leaving' || status === 'exiting';
}

const UP: readonly MemberStatus[] = ['up'];

/** What `oldestOf` and `oldestFirst` need of a member. */
export type Aged = { readonly age: number; readonly status: string; readonly roles?: readonly string[] };

/** Which members `oldestOf` and `oldestFirst` count: `statuses` (default `up`) and, with `role`, that role. */
export interface OldestOptions {
  readonly statuses?: readonly MemberStatus[];
  readonly role?: string;
}

/** Whether `m` is one `options` counts (the one rule of `oldestOf` and `oldestFirst`). */
function counted(m: Aged, statuses: readonly string[], role: string | undefined): boolean {
  return statuses.includes(m.status) && (role === undefined || m.roles?.includes(role) === true);
}

/**
 * The oldest of `members`: the lowest `age` (the coordinator hands ages out from a counter that
 * never goes back, so no two members share one) among those whose status is one of `statuses`
 * and, with `role`, that have the role. The default counts only `up` members: singletons run on
 * the oldest up member (the coordinator, `coordinatorOf`), so a leaving oldest hands over to the
 * next. Keep-oldest downing counts `up`, `leaving` and `exiting` (`SINGLETON_HOLDING`): a leaving
 * oldest still runs its singletons until it exits, so its side is the one to keep.
 */
export function oldestOf<M extends Aged>(members: Iterable<M>, options: OldestOptions = {}): M | undefined {
  const statuses: readonly string[] = options.statuses ?? UP;
  let oldest: M | undefined;
  for (const m of members) {
    if (!counted(m, statuses, options.role)) continue;
    if (oldest === undefined || m.age < oldest.age) oldest = m;
  }
  return oldest;
}

/** The members `oldestOf` counts, oldest first (its answer is the first of them). */
export function oldestFirst<M extends Aged>(members: Iterable<M>, options: OldestOptions = {}): M[] {
  const statuses: readonly string[] = options.statuses ?? UP;
  return [...members].filter((m) => counted(m, statuses, options.role)).sort((a, b) => a.age - b.age);
}

/** Statuses of a member that may still run singletons (up, or on its way out). */
export const SINGLETON_HOLDING: readonly MemberStatus[] = ['up', 'leaving', 'exiting'];
