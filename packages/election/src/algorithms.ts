import { bullyElection } from './bully.js';
import { candidateElection } from './candidate.js';
import type { ElectionAlgorithm, ElectionAlgorithmDefinition } from './election.js';
import { etcdElection } from './etcd.js';
import { invitationElection } from './invitation.js';
import { quorumElection } from './quorum.js';
import { ringElection, ringMaxElection } from './ring.js';

const definitions: Record<ElectionAlgorithm, ElectionAlgorithmDefinition> = {
  quorum: quorumElection,
  bully: bullyElection,
  candidate: candidateElection,
  invitation: invitationElection,
  ring: ringElection,
  'ring-max': ringMaxElection,
  etcd: etcdElection,
};

export function definitionOf(algorithm: ElectionAlgorithm): ElectionAlgorithmDefinition {
  return definitions[algorithm];
}
