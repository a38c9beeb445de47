import type { ActorSystem, Message } from '@doyen/core';
import { address, addressList, count, electionMessage } from './validate.js';

/** `ring` collects the live set (CHANG79); `ring-max` only the highest-ranked address seen. */
export type RingVariant = 'ring' | 'ring-max';

/**
 * One hop of a circulation. `initiator` + `id` name the circulation (the id is random, so a
 * restarted initiator never collides with its former incarnation); `token` names this hop for
 * the ack, so the sender can skip a successor that does not answer.
 */
interface RingHop extends Message {
  readonly from: string;
  readonly initiator: string;
  readonly id: number;
  readonly token: number;
}

/** `ring`: the election collecting the addresses that handled it. */
export interface RingSetElection extends RingHop {
  readonly type: 'election.ring.election';
  readonly live: readonly string[];
}

/** `ring-max`: the election carrying only the highest-ranked address seen (max is commutative). */
export interface RingMaxElection extends RingHop {
  readonly type: 'election.ring-max.election';
  readonly max: string;
}

/** Second circulation: who leads (and, for `ring`, the live set it was chosen from). */
export interface RingSetElected extends RingHop {
  readonly type: 'election.ring.elected';
  readonly leader: string;
  readonly live: readonly string[];
}

export interface RingMaxElected extends RingHop {
  readonly type: 'election.ring-max.elected';
  readonly leader: string;
}

/** "I have it": the receiver of a hop took over its circulation. */
export interface RingAck extends Message {
  readonly type: 'election.ring.ack' | 'election.ring-max.ack';
  readonly from: string;
  readonly token: number;
}

export interface RingHeartbeat extends Message {
  readonly type: 'election.ring.heartbeat' | 'election.ring-max.heartbeat';
  readonly from: string;
}

export type RingElectionMessage = RingSetElection | RingMaxElection;
export type RingElectedMessage = RingSetElected | RingMaxElected;
export type RingCirculation = RingElectionMessage | RingElectedMessage;
export type RingMessage = RingCirculation | RingAck | RingHeartbeat;

/** Bounds what a hostile peer can make us carry around the ring. */
const MAX_LIVE = 10_000;

export function ringTypes<V extends RingVariant>(variant: V) {
  return {
    election: `election.${variant}.election`,
    elected: `election.${variant}.elected`,
    ack: `election.${variant}.ack`,
    heartbeat: `election.${variant}.heartbeat`,
  } as const;
}

export function registerRingMessages(variant: RingVariant, types: ActorSystem['messageTypes']): void {
  const t = ringTypes(variant);
  const check = {
    from: address,
    initiator: address,
    id: count,
    token: count,
  };
  const list = addressList(MAX_LIVE);
  if (variant === 'ring') {
    types.register(t.election, electionMessage({ ...check, live: list }));
    types.register(t.elected, electionMessage({ ...check, leader: address, live: list }));
  } else {
    types.register(t.election, electionMessage({ ...check, max: address }));
    types.register(t.elected, electionMessage({ ...check, leader: address }));
  }
  types.register(t.ack, electionMessage({ from: address, token: count }));
  types.register(t.heartbeat, electionMessage({ from: address }));
}
