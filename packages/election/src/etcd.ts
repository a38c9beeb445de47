import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
export const etcdElection: ElectionAlgorithmDefinition = {
  name: 'etcd' as ElectionAlgorithmDefinition['name'],
  singleLeader: false,
  createMachine: () => {
    throw new Error('etcd election: not implemented yet');
  },
  registerMessages: () => {},
};
