import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
export const bullyElection: ElectionAlgorithmDefinition = {
  name: 'bully' as ElectionAlgorithmDefinition['name'],
  singleLeader: false,
  createMachine: () => {
    throw new Error('bully election: not implemented yet');
  },
  registerMessages: () => {},
};
