import { ActorRef, type Message, type MessageTypes, type UniqueNodeAddress } from '@doyen/core';
import type { MemberStatus } from './member.js';
import type { Membership } from './membership.js';

/** Joiner -> seed (forwarded to the coordinator): let me in. */
export interface Join {
  readonly type: 'membership.join';
  readonly node: UniqueNodeAddress;
  readonly name: string;
  readonly roles: readonly string[];
  readonly replyTo: ActorRef;
}

/** Coordinator -> joiner, after the members acknowledged (or the ack timeout passed). */
export interface Welcome {
  readonly type: 'membership.welcome';
  readonly membership: Membership;
}

/** Coordinator -> members: the new membership; answered with an ack. */
export interface Update {
  readonly type: 'membership.update';
  readonly membership: Membership;
  readonly replyTo: ActorRef;
}

export interface Ack {
  readonly type: 'membership.ack';
  readonly version: number;
  readonly from: string;
}

/** "My version is this; send me yours if it is newer." */
export interface Pull {
  readonly type: 'membership.pull';
  readonly version: number;
  readonly replyTo: ActorRef;
}

/** Member -> coordinator: I am leaving gracefully. */
export interface Leave {
  readonly type: 'membership.leave';
  readonly member: string;
}

/** Anyone -> coordinator: declare this member down (operator or API request). */
export interface DownRequest {
  readonly type: 'membership.down';
  readonly member: string;
}

/** A member -> a node it has downed that still heartbeats it: you are out (Akka's quarantine). */
export interface DownedNotice {
  readonly type: 'membership.downed-notice';
  readonly by: string;
}

/** Observer -> members: my failure detector changed its mind about `subject`. */
export interface ReachabilityReport {
  readonly type: 'membership.reachability';
  readonly observer: string;
  readonly subject: string;
  readonly reachable: boolean;
}

export interface HeartbeatPing {
  readonly type: 'heartbeat.ping';
  readonly from: UniqueNodeAddress;
  readonly version: number;
}

export interface HeartbeatPong {
  readonly type: 'heartbeat.pong';
  readonly from: UniqueNodeAddress;
  readonly version: number;
}

export type MembershipMessage =
  | Join
  | Welcome
  | Update
  | Ack
  | Pull
  | Leave
  | DownRequest
  | ReachabilityReport;
export type HeartbeatMessage = HeartbeatPing | HeartbeatPong;

// ---- validation at the boundary -------------------------------------------------------------

const STATUSES: readonly MemberStatus[] = ['joining', 'up', 'leaving', 'exiting', 'down', 'removed'];
const isInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isStr = (v: unknown, max = 256): v is string => typeof v === 'string' && v.length <= max;
const isRef = (v: unknown) => v instanceof ActorRef;
const isKey = (v: unknown) => isStr(v, 400) && (v as string).includes('#');

function isNode(v: unknown): boolean {
  const n = v as Partial<UniqueNodeAddress> | null;
  return (
    typeof n === 'object' &&
    n !== null &&
    isStr(n.host) &&
    Number.isInteger(n.port) &&
    (n.port as number) > 0 &&
    (n.port as number) < 65536 &&
    isStr(n.uid, 64)
  );
}

function isMemberLike(v: unknown): boolean {
  const m = v as Record<string, unknown> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    isStr(m.address) &&
    isStr(m.uid, 64) &&
    isStr(m.name) &&
    isInt(m.age) &&
    STATUSES.includes(m.status as MemberStatus) &&
    Array.isArray(m.roles) &&
    m.roles.length <= 64 &&
    m.roles.every((r) => isStr(r, 64))
  );
}

/** Shape check of a membership from the network; bounded so a hostile peer cannot make us spin. */
export function membershipProblem(v: unknown): string | undefined {
  const m = v as Partial<Membership> | null;
  if (typeof m !== 'object' || m === null) return 'membership must be a map';
  if (!isInt(m.version) || !isInt(m.nextAge)) return 'version and nextAge must be non-negative integers';
  if (!Array.isArray(m.members) || m.members.length > 10_000 || !m.members.every(isMemberLike)) {
    return 'members must be a list of members';
  }
  if (!Array.isArray(m.failed) || m.failed.length > 10_000 || !m.failed.every(isMemberLike)) {
    return 'failed must be a list of members';
  }
  if (!Array.isArray(m.unreachable) || !m.unreachable.every(isKey)) return 'unreachable must be member keys';
  return undefined;
}

function check(fields: Record<string, (v: unknown) => boolean | string | undefined>) {
  return (message: Message): string | undefined => {
    const m = message as unknown as Record<string, unknown>;
    for (const [field, test] of Object.entries(fields)) {
      const r = test(m[field]);
      if (r === false) return `bad field ${field}`;
      if (typeof r === 'string') return r;
    }
    return undefined;
  };
}

export function registerClusterMessages(types: MessageTypes): void {
  types.register(
    'membership.join',
    check({
      node: isNode,
      name: (v) => isStr(v),
      roles: (v) => Array.isArray(v) && v.every((r) => isStr(r, 64)),
      replyTo: isRef,
    }),
  );
  types.register('membership.welcome', check({ membership: membershipProblem }));
  types.register('membership.update', check({ membership: membershipProblem, replyTo: isRef }));
  types.register('membership.ack', check({ version: isInt, from: isKey }));
  types.register('membership.pull', check({ version: isInt, replyTo: isRef }));
  types.register(['membership.leave', 'membership.down'], check({ member: isKey }));
  types.register('membership.downed-notice', check({ by: isKey }));
  types.register(
    'membership.reachability',
    check({ observer: isKey, subject: isKey, reachable: (v) => typeof v === 'boolean' }),
  );
  types.register(['heartbeat.ping', 'heartbeat.pong'], check({ from: isNode, version: isInt }));
  types.register('sbc.probe', check({ coordinator: isNode, size: isInt, replyTo: isRef }));
  types.register('sbc.probe-reply', check({ coordinator: isNode, size: isInt }));
  types.register('sbc.merge', check({ from: isKey, target: (v) => isNode({ ...(v as object), uid: 'x' }) }));
}
