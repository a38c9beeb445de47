import type { ElectionAlgorithmDefinition } from './election.js';
import { createQuorumMachine } from './quorum-machine.js';
import { registerQuorumMessages } from './quorum-messages.js';

/**
 * The seed's "Leader and Followers": a generation clock, one persisted vote per generation, and a
 * leader that acts only while a majority acknowledges it — at most one acting leader, even under
 * partitions (the minority side has none).
 */
export const quorumElection: ElectionAlgorithmDefinition = {
  name: 'quorum',
  singleLeader: true,
  createMachine: (deps) => createQuorumMachine(deps),
  registerMessages: registerQuorumMessages,
};
