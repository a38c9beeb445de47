import type { ActorSystem } from '@doyen/core';
import { address, addressList, count, electionMessage, nullOrAddress } from './validate.js';

/** Asks every higher-ranked peer whether it is alive (the full bully round). */
export interface BullyElection {
  readonly type: 'election.bully.election';
  readonly from: string;
}

/** A higher-ranked peer's answer to Election; `leader` is whom it follows (null if none). */
export interface BullyAlive {
  readonly type: 'election.bully.alive';
  readonly from: string;
  readonly rank: number;
  readonly leader: string | null;
}

/** Tells the highest-ranked responder of a round to take over (modified bully, step 3). */
export interface BullyTakeover {
  readonly type: 'election.bully.takeover';
  readonly from: string;
}

/** Next-in-line failover: `failed` is down, the recipient is the highest alternative; take over. */
export interface BullyFailover {
  readonly type: 'election.bully.failover';
  readonly from: string;
  readonly failed: string | null;
}

/** The sender leads; `failover` is its next-in-line list, highest first. */
export interface BullyElected {
  readonly type: 'election.bully.elected';
  readonly from: string;
  readonly failover: readonly string[];
}

/** Leader -> every peer; carries the current failover list so followers keep it fresh. */
export interface BullyHeartbeat {
  readonly type: 'election.bully.heartbeat';
  readonly from: string;
  readonly failover: readonly string[];
}

/** Follower -> its leader: lets the leader know who is alive for the failover list. */
export interface BullyHeartbeatAck {
  readonly type: 'election.bully.heartbeat-ack';
  readonly from: string;
}

export type BullyMessage =
  | BullyElection
  | BullyAlive
  | BullyTakeover
  | BullyFailover
  | BullyElected
  | BullyHeartbeat
  | BullyHeartbeatAck;

/** Far above any sensible failoverListSize: bounds what a hostile peer can make us keep. */
const MAX_FAILOVER_LIST = 64;

export function registerBullyMessages(types: ActorSystem['messageTypes']): void {
  const fromOnly = electionMessage({ from: address });
  types.register(
    ['election.bully.election', 'election.bully.takeover', 'election.bully.heartbeat-ack'],
    fromOnly,
  );
  types.register(
    'election.bully.alive',
    electionMessage({ from: address, rank: count, leader: nullOrAddress }),
  );
  types.register('election.bully.failover', electionMessage({ from: address, failed: nullOrAddress }));
  types.register(
    ['election.bully.elected', 'election.bully.heartbeat'],
    electionMessage({ from: address, failover: addressList(MAX_FAILOVER_LIST) }),
  );
}
