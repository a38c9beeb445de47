import type { ElectionAlgorithmDefinition } from './election.js';
import { createInvitationMachine } from './invitation-machine.js';
import { registerInvitationMessages } from './invitation-messages.js';

/** The invitation election: groups merge under the larger group's leader; one leader per group. */
export const invitationElection: ElectionAlgorithmDefinition = {
  name: 'invitation',
  singleLeader: false,
  createMachine: createInvitationMachine,
  registerMessages: registerInvitationMessages,
};
