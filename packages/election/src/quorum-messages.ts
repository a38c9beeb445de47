import type { ActorSystem, Message } from '@doyen/core';
import { address, count, electionMessage, flag, time } from './validate.js';

/**
 * Asks "would you vote for me in `generation`?" without bumping anyone's generation (Raft's
 * pre-vote): a node cut off in a minority keeps failing here, so it never inflates the generation
 * and never unseats the majority's leader when the partition heals.
 */
export interface QuorumPreVote extends Message {
  readonly type: 'election.quorum.pre-vote';
  readonly from: string;
  /** The generation the sender would campaign in (its own + 1). */
  readonly generation: number;
  readonly lastIndex: number;
}

export interface QuorumPreVoteReply extends Message {
  readonly type: 'election.quorum.pre-vote-reply';
  readonly from: string;
  /** Echoes the request's generation, so replies to an earlier round are not counted. */
  readonly generation: number;
  readonly granted: boolean;
}

/** The real vote request: the sender already moved to `generation` and voted for itself. */
export interface QuorumVoteRequest extends Message {
  readonly type: 'election.quorum.vote-request';
  readonly from: string;
  readonly generation: number;
  readonly lastIndex: number;
}

export interface QuorumVote extends Message {
  readonly type: 'election.quorum.vote';
  readonly from: string;
  /** The voter's generation after handling the request (higher ones unseat the candidate). */
  readonly generation: number;
  readonly granted: boolean;
}

export interface QuorumHeartbeat extends Message {
  readonly type: 'election.quorum.heartbeat';
  readonly from: string;
  readonly generation: number;
  /** The leader's clock when sent, echoed in the ack: the lease is measured from send times. */
  readonly sentAt: number;
}

export interface QuorumHeartbeatAck extends Message {
  readonly type: 'election.quorum.heartbeat-ack';
  readonly from: string;
  /** The follower's generation: higher than the leader's means the leader is stale. */
  readonly generation: number;
  readonly sentAt: number;
  /** False when the heartbeat's generation was older than ours. */
  readonly ok: boolean;
}

export type QuorumMessage =
  | QuorumPreVote
  | QuorumPreVoteReply
  | QuorumVoteRequest
  | QuorumVote
  | QuorumHeartbeat
  | QuorumHeartbeatAck;

const validators: Record<QuorumMessage['type'], Parameters<typeof electionMessage>[0]> = {
  'election.quorum.pre-vote': { from: address, generation: count, lastIndex: count },
  'election.quorum.pre-vote-reply': { from: address, generation: count, granted: flag },
  'election.quorum.vote-request': { from: address, generation: count, lastIndex: count },
  'election.quorum.vote': { from: address, generation: count, granted: flag },
  'election.quorum.heartbeat': { from: address, generation: count, sentAt: time },
  'election.quorum.heartbeat-ack': { from: address, generation: count, sentAt: time, ok: flag },
};

export const QUORUM_MESSAGE_TYPES = Object.keys(validators) as QuorumMessage['type'][];

export function registerQuorumMessages(types: ActorSystem['messageTypes']): void {
  for (const [type, checks] of Object.entries(validators)) types.register(type, electionMessage(checks));
}
