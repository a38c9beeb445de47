import { type Member, type Membership, memberKey, oldestOf } from '@doyen/cluster';

/**
 * The member that runs a singleton: the oldest `up` member (`oldestOf`'s default), optionally
 * among those with a role. Leaving and exiting members no longer count, so a leaving oldest
 * hands over to the next.
 */
export function singletonHostOf(membership: Membership, role?: string): Member | undefined {
  return oldestOf(membership.members, role === undefined ? {} : { role });
}

/**
 * What became of a former oldest, as the new membership tells it:
 * - `alive`: still a member (leaving or exiting): ask it to hand over;
 * - `removed`: left gracefully, its instance already stopped: start at once;
 * - `downed`: failed and downed: start only after the down-removal margin, when its side has
 *   certainly downed itself too.
 */
export type FormerOldestFate = 'alive' | 'removed' | 'downed';

export function fateOf(formerKey: string, membership: Membership): FormerOldestFate {
  if (membership.members.some((m) => memberKey(m) === formerKey)) return 'alive';
  if (membership.failed.some((m) => memberKey(m) === formerKey)) return 'downed';
  return 'removed';
}
