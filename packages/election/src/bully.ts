import { createBullyMachine } from './bully-machine.js';
import { registerBullyMessages } from './bully-messages.js';
import type { ElectionAlgorithmDefinition } from './election.js';

/** The modified bully election with next-in-line failover; one leader per partition side. */
export const bullyElection: ElectionAlgorithmDefinition = {
  name: 'bully',
  singleLeader: false,
  createMachine: createBullyMachine,
  registerMessages: registerBullyMessages,
};
