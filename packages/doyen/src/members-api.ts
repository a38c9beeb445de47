import type { Cluster, ClusterEvent, Member } from '@doyen/cluster';
import { memberKey, oldestFirst, oldestOf } from '@doyen/cluster';
import type { ElectedCoordinator } from '@doyen/election';

/**
 * Akka Management's cluster HTTP shapes (`/cluster/members`, `/cluster/members/{address}`,
 * `/cluster/domain-events`), so dashboards and scripts written for Akka read doyen unchanged.
 * A node is named `doyen://<cluster>@host:port`, as Akka names it `akka://<system>@host:port`.
 */

/** Akka's member statuses, capitalised as Akka prints them. */
export type AkkaMemberStatus = 'Joining' | 'Up' | 'Leaving' | 'Exiting' | 'Down' | 'Removed';

/** One entry of `members` (and the body of `GET /cluster/members/{address}`). */
export interface ClusterMemberView {
  readonly node: string;
  readonly nodeUid: string;
  readonly status: AkkaMemberStatus;
  readonly roles: readonly string[];
}

export interface ClusterUnreachableMemberView {
  readonly node: string;
  /** The members whose failure detectors report it unreachable, as this node knows them. */
  readonly observedBy: readonly string[];
}

/** The body of `GET /cluster/members`; `leader` and `oldest` are absent while there is none. */
export interface ClusterMembersView {
  readonly selfNode: string;
  readonly members: readonly ClusterMemberView[];
  readonly unreachable: readonly ClusterUnreachableMemberView[];
  /** The coordinator (Akka's leader): the oldest up member, or the elected one. */
  readonly leader?: string;
  /** The oldest up member (where singletons run under the emergent coordinator). */
  readonly oldest?: string;
  readonly oldestPerRole: Readonly<Record<string, string>>;
}

/** One server-sent event of `GET /cluster/events`: Akka's event name and its JSON payload. */
export interface DomainEventView {
  readonly type: AkkaEventType;
  readonly data: Readonly<Record<string, unknown>>;
}

export type AkkaEventType =
  | 'MemberJoined'
  | 'MemberUp'
  | 'MemberLeft'
  | 'MemberExited'
  | 'MemberDowned'
  | 'MemberRemoved'
  | 'UnreachableMember'
  | 'ReachableMember'
  | 'LeaderChanged';

/** Akka's event classes a `type=` filter may name, and the concrete events each covers. */
const EVENT_CLASSES: Readonly<Record<string, readonly AkkaEventType[]>> = {
  ClusterDomainEvent: [
    'MemberJoined',
    'MemberUp',
    'MemberLeft',
    'MemberExited',
    'MemberDowned',
    'MemberRemoved',
    'UnreachableMember',
    'ReachableMember',
    'LeaderChanged',
  ],
  MemberEvent: ['MemberJoined', 'MemberUp', 'MemberLeft', 'MemberExited', 'MemberDowned', 'MemberRemoved'],
  ReachabilityEvent: ['UnreachableMember', 'ReachableMember'],
};

const STATUS: Readonly<Record<Member['status'], AkkaMemberStatus>> = {
  joining: 'Joining',
  up: 'Up',
  leaving: 'Leaving',
  exiting: 'Exiting',
  down: 'Down',
  removed: 'Removed',
};

/** `doyen://<cluster>@host:port`: the Akka-style URI of a member at `address` (`host:port`). */
export function nodeUri(cluster: string, address: string): string {
  return `doyen://${cluster}@${address}`;
}

function memberView(cluster: string, m: Member): ClusterMemberView {
  return { node: nodeUri(cluster, m.address), nodeUid: m.uid, status: STATUS[m.status], roles: [...m.roles] };
}

/** The members of this node's view in Akka Management's shape. */
export function clusterMembersView(cluster: Cluster, elected?: ElectedCoordinator): ClusterMembersView {
  const name = cluster.system.cluster;
  const state = cluster.state();
  const members = state.membership?.members ?? [];
  const byKey = new Map(members.map((m) => [memberKey(m), m]));
  const observers = cluster.unreachableObservers();
  const unreachableKeys = new Set([...(state.membership?.unreachable ?? []), ...Object.keys(observers)]);
  const unreachable: ClusterUnreachableMemberView[] = [];
  for (const key of unreachableKeys) {
    const m = byKey.get(key);
    if (!m) continue;
    const observedBy = (observers[key] ?? []).flatMap((o) => {
      const observer = byKey.get(o);
      return observer ? [nodeUri(name, observer.address)] : [];
    });
    unreachable.push({ node: nodeUri(name, m.address), observedBy });
  }
  const oldest = oldestOf(members);
  const oldestPerRole: Record<string, string> = {};
  for (const m of oldestFirst(members))
    for (const role of m.roles) oldestPerRole[role] ??= nodeUri(name, m.address);
  const leaderAddress = elected ? elected.coordinator() : state.coordinator?.address;
  return {
    selfNode: nodeUri(name, cluster.self.address),
    members: members.map((m) => memberView(name, m)),
    unreachable,
    ...(leaderAddress ? { leader: nodeUri(name, leaderAddress) } : {}),
    ...(oldest ? { oldest: nodeUri(name, oldest.address) } : {}),
    oldestPerRole,
  };
}

/**
 * The member an address in a path names, or undefined. Accepted as Akka accepts them — with or
 * without the `doyen://` prefix — and also as doyen prints them: `host:port`, `host:port#uid`.
 * A URI naming another cluster matches nothing.
 */
export function findMemberByAddress(cluster: Cluster, raw: string): Member | undefined {
  const name = cluster.system.cluster;
  let address = raw.trim();
  if (address.startsWith('doyen://')) address = address.slice('doyen://'.length);
  const at = address.lastIndexOf('@');
  if (at >= 0) {
    if (address.slice(0, at) !== name) return undefined;
    address = address.slice(at + 1);
  }
  const members = cluster.state().membership?.members ?? [];
  if (address.includes('#')) return members.find((m) => memberKey(m) === address);
  return members.find((m) => m.address === address);
}

/** The member view of one member, for `GET /cluster/members/{address}`. */
export function clusterMemberView(cluster: Cluster, member: Member): ClusterMemberView {
  return memberView(cluster.system.cluster, member);
}

/** The event types a request's `type=` parameters select (all when none); unknown names are an error. */
export function selectedEventTypes(
  requested: readonly string[],
):
  | { readonly ok: true; readonly types: ReadonlySet<AkkaEventType> }
  | { readonly ok: false; readonly unknown: string } {
  if (requested.length === 0) return { ok: true, types: new Set(EVENT_CLASSES.ClusterDomainEvent) };
  const types = new Set<AkkaEventType>();
  for (const name of requested) {
    const covered =
      EVENT_CLASSES[name] ??
      (EVENT_CLASSES.ClusterDomainEvent!.includes(name as AkkaEventType)
        ? [name as AkkaEventType]
        : undefined);
    if (!covered) return { ok: false, unknown: name };
    for (const t of covered) types.add(t);
  }
  return { ok: true, types };
}

/** A doyen cluster event as Akka's domain event (name and JSON payload). */
export function domainEventOf(cluster: string, event: ClusterEvent): DomainEventView {
  if (event.type === 'coordinator.changed') {
    const address = event.coordinator ? nodeUri(cluster, event.coordinator.address) : undefined;
    return { type: 'LeaderChanged', data: { ...(address ? { address } : {}), type: 'LeaderChanged' } };
  }
  const type = MEMBER_EVENT[event.type];
  const m = event.member;
  const member = {
    roles: [...m.roles],
    status: STATUS[m.status],
    uniqueAddress: { address: nodeUri(cluster, m.address), longUid: m.uid },
  };
  return {
    type,
    data: {
      member,
      ...(event.type === 'member.removed' ? { previousStatus: STATUS[event.previousStatus] } : {}),
      type,
    },
  };
}

const MEMBER_EVENT: Readonly<Record<Exclude<ClusterEvent['type'], 'coordinator.changed'>, AkkaEventType>> = {
  'member.joined': 'MemberJoined',
  'member.up': 'MemberUp',
  'member.leaving': 'MemberLeft',
  'member.exiting': 'MemberExited',
  'member.downed': 'MemberDowned',
  'member.removed': 'MemberRemoved',
  'member.unreachable': 'UnreachableMember',
  'member.reachable': 'ReachableMember',
};

/** The current state as events, one per member for its status, as Akka's `InitialStateAsEvents` gives them. */
export function initialStateEvents(cluster: Cluster): ClusterEvent[] {
  const state = cluster.state();
  const events: ClusterEvent[] = [];
  const members = state.membership?.members ?? [];
  for (const m of members) {
    const type = INITIAL[m.status];
    if (type) events.push({ type, member: m });
  }
  const observers = cluster.unreachableObservers();
  for (const m of members) {
    if ((observers[memberKey(m)] ?? []).length > 0) events.push({ type: 'member.unreachable', member: m });
  }
  if (state.coordinator)
    events.push({ type: 'coordinator.changed', coordinator: state.coordinator, previous: undefined });
  return events;
}

const INITIAL: Partial<
  Record<Member['status'], 'member.joined' | 'member.up' | 'member.leaving' | 'member.exiting'>
> = { joining: 'member.joined', up: 'member.up', leaving: 'member.leaving', exiting: 'member.exiting' };
