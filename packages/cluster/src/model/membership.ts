import { nodeKey } from '@doyen/core';
import { isLive, type Member, type MemberStatus, oldestOf } from './member.js';

/**
 * The versioned membership every node holds (the seed's Membership): live members, the failed
 * ones (kept so the split-brain checker can probe them), the members the coordinator considers
 * unreachable, and the age counter. Only the coordinator produces new versions; these functions
 * are pure and return a new value with the version bumped.
 */
export interface Membership {
  readonly version: number;
  /** Next age to hand out; never goes back, so an age is never reused. */
  readonly nextAge: number;
  readonly members: readonly Member[];
  readonly failed: readonly Member[];
  /** Keys of members observed unreachable (by any live observer), as the coordinator saw it. */
  readonly unreachable: readonly string[];
}

export interface NewMember {
  readonly address: string;
  readonly uid: string;
  readonly name: string;
  readonly roles: readonly string[];
  readonly publicKey?: string;
}

/** Most failed members remembered for probing; older ones are forgotten first. */
export const FAILED_LIST_MAX = 100;

export function formCluster(self: NewMember): Membership {
  return {
    version: 1,
    nextAge: 2,
    members: [{ ...self, age: 1, status: 'up' }],
    failed: [],
    unreachable: [],
  };
}

/** The coordinator: the oldest `up` member (the emergent leader), by `oldestOf`. */
export function coordinatorOf(m: Membership): Member | undefined {
  return oldestOf(m.members);
}

export function findMember(m: Membership, key: string): Member | undefined {
  return m.members.find((x) => nodeKey(x) === key);
}

export function findByAddress(m: Membership, address: string): Member | undefined {
  return m.members.find((x) => x.address === address);
}

export function liveMembers(m: Membership): Member[] {
  return m.members.filter((x) => isLive(x.status));
}

function bump(m: Membership, changes: Partial<Membership>): Membership {
  return { ...m, ...changes, version: m.version + 1 };
}

/**
 * Adds a joiner with the next age. A new incarnation at a known address replaces the old one
 * (returned as `replaced`) and clears that address from the failed list (the seed's rejoin).
 */
export function addJoiner(m: Membership, joiner: NewMember): { membership: Membership; replaced?: Member } {
  const replaced = findByAddress(m, joiner.address);
  const members = m.members.filter((x) => x.address !== joiner.address);
  members.push({ ...joiner, age: m.nextAge, status: 'joining' });
  const membership = bump(m, {
    nextAge: m.nextAge + 1,
    members,
    failed: m.failed.filter((x) => x.address !== joiner.address),
    unreachable: replaced ? m.unreachable.filter((k) => k !== nodeKey(replaced)) : m.unreachable,
  });
  return replaced ? { membership, replaced } : { membership };
}

export function setStatus(m: Membership, keys: readonly string[], status: MemberStatus): Membership {
  const wanted = new Set(keys);
  let changed = false;
  const members = m.members.map((x) => {
    if (!wanted.has(nodeKey(x)) || x.status === status) return x;
    changed = true;
    return { ...x, status };
  });
  return changed ? bump(m, { members }) : m;
}

/** Declares members failed: out of the membership, into the failed list with status `down`. */
export function downMembers(m: Membership, keys: readonly string[]): Membership {
  const wanted = new Set(keys);
  const downed = m.members.filter((x) => wanted.has(nodeKey(x)));
  if (downed.length === 0) return m;
  const failed = [...m.failed.filter((f) => !downed.some((d) => d.address === f.address))];
  for (const d of downed) failed.push({ ...d, status: 'down' });
  return bump(m, {
    members: m.members.filter((x) => !wanted.has(nodeKey(x))),
    failed: failed.slice(-FAILED_LIST_MAX),
    unreachable: m.unreachable.filter((k) => !wanted.has(k)),
  });
}

/** Removes members that left gracefully: gone, not failed. */
export function removeMembers(m: Membership, keys: readonly string[]): Membership {
  const wanted = new Set(keys);
  if (!m.members.some((x) => wanted.has(nodeKey(x)))) return m;
  return bump(m, {
    members: m.members.filter((x) => !wanted.has(nodeKey(x))),
    unreachable: m.unreachable.filter((k) => !wanted.has(k)),
  });
}

export function setUnreachable(m: Membership, keys: readonly string[]): Membership {
  const next = [...new Set(keys)].filter((k) => findMember(m, k) !== undefined).sort();
  const same = next.length === m.unreachable.length && next.every((k, i) => k === m.unreachable[i]);
  return same ? m : bump(m, { unreachable: next });
}
