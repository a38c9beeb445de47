import type { ElectionAlgorithmDefinition } from './election.js';
import { createRingMachine } from './ring-machine.js';
import { registerRingMessages } from './ring-messages.js';

/** The ring election (CHANG79), collecting the set of live addresses; one leader per partition side. */
export const ringElection: ElectionAlgorithmDefinition = {
  name: 'ring',
  singleLeader: false,
  createMachine: (deps) => createRingMachine(deps, 'ring'),
  registerMessages: (types) => registerRingMessages('ring', types),
};

/** The ring election's variant that carries only the highest rank seen instead of the set. */
export const ringMaxElection: ElectionAlgorithmDefinition = {
  name: 'ring-max',
  singleLeader: false,
  createMachine: (deps) => createRingMachine(deps, 'ring-max'),
  registerMessages: (types) => registerRingMessages('ring-max', types),
};
