import {
  type ActorRef,
  type MessageTypes,
  type Read,
  read,
  schema,
  type UniqueNodeAddress,
} from '@doyen/core';
import type { Member, MemberStatus } from '../model/member.js';
import type { Membership } from '../model/membership.js';

/** Joiner -> seed (forwarded to the coordinator): let me in. */
export interface Join {
  readonly type: 'membership.join';
  readonly node: UniqueNodeAddress;
  readonly name: string;
  readonly roles: readonly string[];
  readonly replyTo: ActorRef;
  /** The joiner's identity key: the boundary checks it is the key its connection proved. */
  readonly publicKey?: string;
}

/** Coordinator -> joiner, after the members acknowledged (or the ack timeout passed). */
export interface Welcome {
  readonly type: 'membership.welcome';
  readonly membership: Membership;
  /** The coordinator that admitted the joiner: a welcome is believed only from it. */
  readonly from: UniqueNodeAddress;
}

/**
 * A seed that is not the coordinator -> joiner: ask the coordinator yourself. Joins are not
 * forwarded: a member speaks only for itself, so the coordinator admits a join only from the
 * connection of the node that joins.
 */
export interface Redirect {
  readonly type: 'membership.redirect';
  readonly coordinator: UniqueNodeAddress;
  readonly from: UniqueNodeAddress;
}

/**
 * A live member -> a joiner, at once when the join reaches it: "your join reached a live
 * cluster" (Akka's InitJoinAck). The welcome waits for every member's ack, which may take longer
 * than the joiner's join timeout; without this answer a restarted first seed would take the
 * silence for an empty cluster and form a second one. It only holds a joiner back from forming.
 */
export interface JoinSeen {
  readonly type: 'membership.join-seen';
  /** The member that saw the join (speaks for itself). */
  readonly from: UniqueNodeAddress;
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

/** A member -> coordinator: declare this member down (operator or API request made at `by`). */
export interface DownRequest {
  readonly type: 'membership.down';
  readonly member: string;
  readonly by: string;
}

/** A member -> a node it has downed that still heartbeats it: you are out (Akka's quarantine). */
export interface DownedNotice {
  readonly type: 'membership.downed-notice';
  readonly by: string;
}

/** One member that an observer's failure detector changed its mind about. */
export interface ReachabilityChange {
  readonly subject: string;
  readonly reachable: boolean;
}

/**
 * Observer -> members: my failure detector changed its mind about these members, in this order
 * (all it found in one heartbeat tick: a cut flips every target across it at once, and one report
 * per target made every member judge its view once per target).
 */
export interface ReachabilityReport {
  readonly type: 'membership.reachability';
  readonly observer: string;
  readonly changes: readonly ReachabilityChange[];
}

/** Every message of the membership protocol that comes from the network. */
export type MembershipMessage =
  | Join
  | JoinSeen
  | Welcome
  | Redirect
  | Update
  | Ack
  | Pull
  | Leave
  | DownRequest
  | DownedNotice
  | ReachabilityReport;

// ---- validation at the boundary -------------------------------------------------------------

const STATUSES: readonly MemberStatus[] = [
  'joining',
  'up',
  'leaving',
  'exiting',
  'down',
  'removed',
]; /** Bounds: a hostile peer cannot make us spin on a membership of millions. */
const MAX_MEMBERS = 10_000;
const roles = read.list(read.string(64), 64);

const member: Read<Member> = read.object<Member>({
  address: read.address,
  uid: read.matching(/^[A-Za-z0-9]{1,64}$/, 'a node uid'),
  name: read.string(256),
  age: read.count,
  status: read.oneOf(...STATUSES),
  roles,
  publicKey: read.optional(read.publicKey),
});

/** A membership from the network, rebuilt field by field. */
export const readMembership: Read<Membership> = read.object<Membership>({
  version: read.count,
  nextAge: read.count,
  members: read.list(member, MAX_MEMBERS),
  failed: read.list(member, MAX_MEMBERS),
  unreachable: read.list(read.memberKey, MAX_MEMBERS),
});

/**
 * Every membership message, rebuilt from its fields; `speaksFor` names the identities a message
 * claims, which must be the node its connection authenticated as (a member speaks only for
 * itself). The last argument is who may send it, checked at the boundary against this node's
 * view: `anyone` where the sender is not yet (or not any more) one of ours (a join, heartbeats to
 * a joiner, probes between sides), `member` where the protocol itself picks among members (an
 * update is believed from the coordinator it believes, but one from any member that leaves us
 * out is its downed-notice, and a next-oldest may coordinate before we see the old one fail),
 * `coordinator` for a merge order. Which member a receiver believes is decided by the protocol
 * with these fields, once they are known to be true.
 */
export function registerMembershipMessages(types: MessageTypes): void {
  types.register(
    'membership.join',
    schema<Join>(
      {
        node: read.node,
        name: read.string(256),
        roles,
        replyTo: read.ref,
        publicKey: read.optional(read.publicKey),
      },
      // its key too: the coordinator admits the key the joiner's connection proved, and a join
      // without one over a connection that proved one is forged (it would admit a keyless member)
      (m) => [{ ...m.node, publicKey: m.publicKey ?? '' }, m.replyTo],
      'anyone',
    ),
  );
  types.register(
    'membership.join-seen',
    // `member`: while the node joins it has no view, so anyone may say it (a joiner cannot judge
    // membership yet); once it has one, only its members, the only ones a late answer comes
    // from. A forged one can only keep a first seed from forming: at worst a delayed first start.
    schema<JoinSeen>({ from: read.node }, (m) => [m.from], 'member'),
  );
  types.register(
    'membership.welcome',
    schema<Welcome>({ membership: readMembership, from: read.node }, (m) => [m.from], 'member'),
  );
  types.register(
    'membership.redirect',
    schema<Redirect>({ coordinator: read.node, from: read.node }, (m) => [m.from], 'anyone'),
  );
  types.register(
    'membership.update',
    schema<Update>({ membership: readMembership, replyTo: read.ref }, (m) => [m.replyTo], 'member'),
  );
  types.register(
    'membership.ack',
    // an ack only ends the wait for its own sender: one from a member just taken out of the
    // view must still end it (else the joiner waits for the ack timeout)
    schema<Ack>({ version: read.count, from: read.memberKey }, (m) => [m.from], 'anyone'),
  );
  types.register(
    'membership.pull',
    schema<Pull>({ version: read.count, replyTo: read.ref }, (m) => [m.replyTo], 'member'),
  );
  types.register(
    'membership.leave',
    schema<Leave>({ member: read.memberKey }, (m) => [m.member], 'member'),
  );
  types.register(
    'membership.down',
    schema<DownRequest>({ member: read.memberKey, by: read.memberKey }, (m) => [m.by], 'member'),
  );
  types.register(
    'membership.downed-notice',
    schema<DownedNotice>({ by: read.memberKey }, (m) => [m.by], 'member'),
  );
  types.register(
    'membership.reachability',
    schema<ReachabilityReport>(
      {
        observer: read.memberKey,
        changes: read.list(
          read.object<ReachabilityChange>({ subject: read.memberKey, reachable: read.boolean }),
          MAX_MEMBERS,
        ),
      },
      (m) => [m.observer],
      'member',
    ),
  );
}
