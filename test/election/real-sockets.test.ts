import { afterEach, describe, expect, it } from 'vitest';
import {
  ELECTION_ALGORITHMS,
  Election,
  type ElectionAlgorithm,
  MemoryVoteStore,
  peersOf,
} from '../../packages/election/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const transports: WsTransport[] = [];
const elections: Election[] = [];
afterEach(async () => {
  for (const e of elections.splice(0)) e.stop();
  await Promise.all(transports.splice(0).map((t) => t.close(0)));
});

/** Every election over the wire: WebSockets on 127.0.0.1, MessagePack, the handshake, real timers. */
const WIRE_ALGORITHMS = ELECTION_ALGORITHMS.filter((a) => a !== 'etcd');

async function startFour(algorithm: ElectionAlgorithm) {
  const ports = await freePorts(4);
  const peers = peersOf(ports.map((port) => ({ host: '127.0.0.1', port })));
  const nodes: { transport: WsTransport; election: Election }[] = [];
  for (const port of ports) {
    const transport = await WsTransport.start({
      cluster: 'wire-election',
      host: '127.0.0.1',
      port,
      wire: { secret: 's' },
    });
    transports.push(transport);
    const election = Election.start(transport.system, { algorithm, peers, voteStore: new MemoryVoteStore() });
    elections.push(election);
    nodes.push({ transport, election });
  }
  return nodes;
}

const agreed = (nodes: { election: Election }[]) => {
  const leader = nodes[0]!.election.leader();
  if (leader === undefined || !nodes.every((n) => n.election.leader() === leader)) return undefined;
  const leading = nodes.filter((n) => n.election.view().role === 'leading');
  return leading.length === 1 && leading[0]!.election.self.address === leader ? leader : undefined;
};

describe('elections over real WebSockets (four nodes on 127.0.0.1)', () => {
  for (const algorithm of WIRE_ALGORITHMS) {
    it(`${algorithm}: one leader everyone follows; another after the leader's transport dies`, async () => {
      const nodes = await startFour(algorithm);
      const first = await eventually(() => agreed(nodes), {
        timeoutMs: 10_000,
        what: `${algorithm}: a leader`,
      });
      if (algorithm !== 'quorum' && algorithm !== 'invitation') {
        // the rank-based algorithms elect the highest rank
        expect(first).toBe(nodes[3]!.election.self.address);
      }
      const victim = nodes.find((n) => n.election.self.address === first)!;
      victim.election.stop();
      await victim.transport.close(0);
      const rest = nodes.filter((n) => n !== victim);
      const second = await eventually(() => agreed(rest), {
        timeoutMs: 10_000,
        what: `${algorithm}: a new leader`,
      });
      expect(second).not.toBe(first);
      if (algorithm === 'quorum')
        expect(rest.filter((n) => n.election.isActing()).length).toBeLessThanOrEqual(1);
    });
  }
});
