import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
export const invitationElection: ElectionAlgorithmDefinition = {
  name: 'invitation' as ElectionAlgorithmDefinition['name'],
  singleLeader: false,
  createMachine: () => {
    throw new Error('invitation election: not implemented yet');
  },
  registerMessages: () => {},
};
