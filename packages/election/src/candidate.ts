import { createCandidateMachine } from './candidate-machine.js';
import { registerCandidateMessages } from './candidate-messages.js';
import type { ElectionAlgorithmDefinition } from './election.js';

/** Bully's candidate/ordinary optimisation: only the top-ranked candidates are asked. */
export const candidateElection: ElectionAlgorithmDefinition = {
  name: 'candidate',
  singleLeader: false,
  createMachine: createCandidateMachine,
  registerMessages: registerCandidateMessages,
};
