import type { ActorSystem, Message } from '@doyen/core';
import { address, addressList, count, electionMessage } from './validate.js';

/** A group leader asks a peer outside its group to merge; `size` decides who leads the merge. */
export interface InvitationInvite extends Message {
  readonly type: 'election.invitation.invite';
  readonly from: string;
  readonly size: number;
}

/** An invited ordinary member names its group leader, so the two leaders talk directly. */
export interface InvitationRedirect extends Message {
  readonly type: 'election.invitation.redirect';
  readonly from: string;
  readonly leader: string;
}

/** The smaller group's leader hands its members to the larger group's leader. */
export interface InvitationJoin extends Message {
  readonly type: 'election.invitation.join';
  readonly from: string;
  /** Echoed in Welcome, so a late Welcome for an abandoned join is ignored. */
  readonly id: number;
  readonly members: readonly string[];
}

/** The larger group's leader took the members in. */
export interface InvitationWelcome extends Message {
  readonly type: 'election.invitation.welcome';
  readonly from: string;
  readonly id: number;
}

/** The smaller group's leader tells its members whom they follow now (only they are told). */
export interface InvitationNewLeader extends Message {
  readonly type: 'election.invitation.new-leader';
  readonly from: string;
  readonly leader: string;
}

/** Leader -> members: the group as the leader sees it. */
export interface InvitationHeartbeat extends Message {
  readonly type: 'election.invitation.heartbeat';
  readonly from: string;
  readonly members: readonly string[];
}

/** Member -> leader: whom the member follows (another leader means "drop me"). */
export interface InvitationHeartbeatAck extends Message {
  readonly type: 'election.invitation.heartbeat-ack';
  readonly from: string;
  readonly leader: string;
}

export type InvitationMessage =
  | InvitationInvite
  | InvitationRedirect
  | InvitationJoin
  | InvitationWelcome
  | InvitationNewLeader
  | InvitationHeartbeat
  | InvitationHeartbeatAck;

/** Bounds what a hostile peer can make us keep. */
const MAX_MEMBERS = 10_000;

export function registerInvitationMessages(types: ActorSystem['messageTypes']): void {
  const members = addressList(MAX_MEMBERS);
  types.register('election.invitation.invite', electionMessage({ from: address, size: count }));
  types.register(
    ['election.invitation.redirect', 'election.invitation.new-leader', 'election.invitation.heartbeat-ack'],
    electionMessage({ from: address, leader: address }),
  );
  types.register('election.invitation.join', electionMessage({ from: address, id: count, members }));
  types.register('election.invitation.welcome', electionMessage({ from: address, id: count }));
  types.register('election.invitation.heartbeat', electionMessage({ from: address, members }));
}
