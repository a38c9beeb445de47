import type { ActorSystem } from '@doyen/core';
import { address, electionMessage } from './validate.js';

/** Asks a candidate (or, in the fallback round, a higher ordinary peer) whether it is alive. */
export interface CandidateProbe {
  readonly type: 'election.candidate.probe';
  readonly from: string;
}

export interface CandidateAlive {
  readonly type: 'election.candidate.alive';
  readonly from: string;
}

/** The sender chose `leader` (not necessarily itself) and tells everyone. */
export interface CandidateElected {
  readonly type: 'election.candidate.elected';
  readonly from: string;
  readonly leader: string;
}

/** Leader -> every peer. */
export interface CandidateHeartbeat {
  readonly type: 'election.candidate.heartbeat';
  readonly from: string;
}

export type CandidateMessage = CandidateProbe | CandidateAlive | CandidateElected | CandidateHeartbeat;

export function registerCandidateMessages(types: ActorSystem['messageTypes']): void {
  types.register(
    ['election.candidate.probe', 'election.candidate.alive', 'election.candidate.heartbeat'],
    electionMessage({ from: address }),
  );
  types.register('election.candidate.elected', electionMessage({ from: address, leader: address }));
}
