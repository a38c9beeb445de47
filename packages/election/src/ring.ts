import type { ElectionAlgorithmDefinition } from './election.js';

// Placeholder until the algorithm lands.
const placeholder = (name: 'ring' | 'ring-max'): ElectionAlgorithmDefinition => ({
  name,
  singleLeader: false,
  createMachine: () => {
    throw new Error(`${name} election: not implemented yet`);
  },
  registerMessages: () => {},
});
export const ringElection = placeholder('ring');
export const ringMaxElection = placeholder('ring-max');
