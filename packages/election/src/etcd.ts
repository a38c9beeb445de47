import type { ElectionAlgorithmDefinition } from './election.js';
import { createEtcdMachine } from './etcd-machine.js';
import { registerEtcdMessages } from './etcd-messages.js';

export { createEtcdMachine } from './etcd-machine.js';

/** Election through an external linearizable store: whoever holds the key (with its lease) leads. */
export const etcdElection: ElectionAlgorithmDefinition = {
  name: 'etcd',
  singleLeader: true,
  createMachine: createEtcdMachine,
  // Nothing goes over the wire between the nodes: the store decides and detects failures.
  registerMessages: registerEtcdMessages,
};
