import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
export const candidateElection: ElectionAlgorithmDefinition = {
  name: 'candidate' as ElectionAlgorithmDefinition['name'],
  singleLeader: false,
  createMachine: () => {
    throw new Error('candidate election: not implemented yet');
  },
  registerMessages: () => {},
};
