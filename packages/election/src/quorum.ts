import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
export const quorumElection: ElectionAlgorithmDefinition = {
  name: 'quorum' as ElectionAlgorithmDefinition['name'],
  singleLeader: false,
  createMachine: () => {
    throw new Error('quorum election: not implemented yet');
  },
  registerMessages: () => {},
};
