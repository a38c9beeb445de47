import { DoyenError } from '@doyen/core';

/**
 * Hazelcast-style split-brain protection for user requests: while fewer than the configured
 * minimum of members are up and reachable from here, work is refused with this error instead of
 * being done by what may be the minority side of a partition.
 */
export class NotEnoughMembersError extends DoyenError {
  constructor(
    readonly required: number,
    readonly present: number,
  ) {
    super(`requires at least ${required} reachable members, ${present} present`, 'not-enough-members');
  }
}

/** Members that count: up (or leaving) and not reported unreachable by anyone this node trusts. */
export function reachableUpCount(
  members: readonly { readonly key: string; readonly status: string }[],
  unreachable: ReadonlySet<string>,
): number {
  return members.filter((m) => (m.status === 'up' || m.status === 'leaving') && !unreachable.has(m.key))
    .length;
}
