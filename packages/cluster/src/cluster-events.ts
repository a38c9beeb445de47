import { nodeKey } from '@doyen/core';
import type { Member } from './model/member.js';
import { coordinatorOf, type Membership } from './model/membership.js';

/** Facts about the cluster, as this node learns them; each one is also logged with its `event` name. */
export type ClusterEvent =
  | { readonly type: 'member.joined'; readonly member: Member }
  | { readonly type: 'member.up'; readonly member: Member }
  | { readonly type: 'member.leaving'; readonly member: Member }
  | { readonly type: 'member.exiting'; readonly member: Member }
  | { readonly type: 'member.unreachable'; readonly member: Member }
  | { readonly type: 'member.reachable'; readonly member: Member }
  | { readonly type: 'member.downed'; readonly member: Member }
  | { readonly type: 'member.removed'; readonly member: Member; readonly previousStatus: Member['status'] }
  | {
      readonly type: 'coordinator.changed';
      readonly coordinator: Member | undefined;
      readonly previous: Member | undefined;
    };

/** The events that take a node from `prev` to `next` (pure; `prev` undefined before joining). */
export function diffMemberships(prev: Membership | undefined, next: Membership): ClusterEvent[] {
  const events: ClusterEvent[] = [];
  const before = new Map((prev?.members ?? []).map((m) => [nodeKey(m), m]));
  const after = new Map(next.members.map((m) => [nodeKey(m), m]));
  for (const [key, m] of after) {
    const old = before.get(key);
    if (!old) {
      events.push({ type: 'member.joined', member: m });
      if (m.status !== 'joining') events.push(statusEvent(m)!);
    } else if (old.status !== m.status) {
      const e = statusEvent(m);
      if (e) events.push(e);
    }
  }
  const failedNow = new Set(next.failed.map(nodeKey));
  for (const [key, old] of before) {
    if (after.has(key)) continue;
    if (failedNow.has(key)) events.push({ type: 'member.downed', member: { ...old, status: 'down' } });
    events.push({
      type: 'member.removed',
      member: { ...old, status: 'removed' },
      previousStatus: old.status,
    });
  }
  const wasUnreachable = new Set(prev?.unreachable ?? []);
  const isUnreachable = new Set(next.unreachable);
  for (const key of isUnreachable) {
    const m = after.get(key);
    if (m && !wasUnreachable.has(key)) events.push({ type: 'member.unreachable', member: m });
  }
  for (const key of wasUnreachable) {
    const m = after.get(key);
    if (m && !isUnreachable.has(key)) events.push({ type: 'member.reachable', member: m });
  }
  const oldCoordinator = prev ? coordinatorOf(prev) : undefined;
  const newCoordinator = coordinatorOf(next);
  if ((oldCoordinator && nodeKey(oldCoordinator)) !== (newCoordinator && nodeKey(newCoordinator))) {
    events.push({ type: 'coordinator.changed', coordinator: newCoordinator, previous: oldCoordinator });
  }
  return events;
}

function statusEvent(m: Member): ClusterEvent | undefined {
  switch (m.status) {
    case 'up':
      return { type: 'member.up', member: m };
    case 'leaving':
      return { type: 'member.leaving', member: m };
    case 'exiting':
      return { type: 'member.exiting', member: m };
    default:
      return undefined;
  }
}
