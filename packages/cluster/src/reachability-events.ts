import { nodeKey } from '@doyen/core';
import type { ClusterEvent } from './cluster-events.js';
import type { Membership } from './model/membership.js';

/**
 * Which members this node takes for unreachable, and the events that tell it: the coordinator's
 * list in the membership plus every live member some live observer currently reports (this
 * node's own detector included). A member that is not the coordinator, or a side cut off from
 * it, so hears of unreachable members before any resolver decides (pure).
 */
export function reachabilityEvents(
  published: ReadonlySet<string>,
  membership: Membership,
  observations: Readonly<Record<string, readonly string[]>>,
  selfKey: string,
): { readonly events: ClusterEvent[]; readonly unreachable: Set<string> } {
  const members = new Map(membership.members.map((m) => [nodeKey(m), m]));
  const unreachable = new Set<string>();
  for (const key of membership.unreachable) if (members.has(key) && key !== selfKey) unreachable.add(key);
  for (const [subject, observers] of Object.entries(observations)) {
    if (subject === selfKey || !members.has(subject)) continue;
    if (observers.some((o) => members.has(o))) unreachable.add(subject);
  }
  const events: ClusterEvent[] = [];
  for (const key of unreachable) {
    if (!published.has(key)) events.push({ type: 'member.unreachable', member: members.get(key)! });
  }
  for (const key of published) {
    const m = members.get(key);
    // a member that left the membership is downed or removed: those events say so
    if (m && !unreachable.has(key)) events.push({ type: 'member.reachable', member: m });
  }
  return { events, unreachable };
}
