import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receptionist } from '../../packages/cluster/src/index.js';
import type { Authority, MessageTypes } from '../../packages/core/src/index.js';
import { registerConsoleMessages } from '../../packages/doyen/src/console/console-messages.js';
import { definitionOf, ELECTION_ALGORITHMS } from '../../packages/election/src/index.js';
import { PartitionService } from '../../packages/partitions/src/index.js';
import { registerKeeperMessages } from '../../packages/sharding/src/partition-keeper/keeper-messages.js';
import { ClusterSingletons } from '../../packages/singleton/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';

/**
 * Every protocol message type a node registers says who may send it: a new type that forgot
 * would fail here (the schema also requires it at compile time). The table pins the authorities
 * the protocols rely on; a change to one must be a deliberate change to this table.
 */
const EXPECTED: Record<string, Authority> = {
  'doyen.watch': 'anyone',
  'doyen.unwatch': 'anyone',
  'doyen.terminated': 'anyone',
  'doyen.rejected': 'anyone',
  'membership.join': 'anyone',
  'membership.join-seen': 'member',
  'membership.welcome': 'member',
  'membership.redirect': 'anyone',
  'membership.update': 'member',
  'membership.ack': 'anyone',
  'membership.pull': 'member',
  'membership.leave': 'member',
  'membership.down': 'member',
  'membership.downed-notice': 'member',
  'membership.reachability': 'member',
  'heartbeat.ping': 'anyone',
  'heartbeat.pong': 'anyone',
  'sbc.probe': 'anyone',
  'sbc.probe-reply': 'anyone',
  'sbc.merge': 'coordinator',
  'singleton.hand-over-to-me': 'member',
  'singleton.handed-over': 'member',
  'singleton.identify': 'anyone',
  'singleton.identity': 'member',
  'singleton.hand-over-started': 'member',
  'singleton.drained': 'anyone',
  'host-lease.request': 'member',
  'host-lease.reply': 'member',
  'host-lease.release': 'member',
  'host-lease.batch': 'member',
  'host-lease.answers': 'member',
  'partitions.table': 'member',
  'partitions.ack': 'anyone',
  'partitions.retire': 'member',
  'receptionist.listing': 'member',
  'console.subscribe': 'member',
  'console.update': 'member',
  // the partition keeper: each speaks only for its sender (checked against the connection)
  'sharding.token-query': 'member',
  'sharding.token-withdraw': 'member',
  'sharding.token-answer': 'member',
  'sharding.hand-off': 'member',
  'sharding.drain-marker': 'member',
  // a stopping node, mostly removed by then, says it sends no more (only for itself)
  'sharding.farewell': 'anyone',
  'sharding.active': 'member',
  'sharding.hand-off-part': 'member',
  'sharding.hand-off-probe': 'member',
  'sharding.hand-off-receipt': 'member',
  'sharding.marker-request': 'member',
};

const PROTOCOL =
  /^(doyen|membership|heartbeat|sbc|singleton|host-lease|partitions|election|receptionist|console|sharding)\./;

describe('every protocol message type declares an authority', () => {
  let node: ClusterNode;
  let types: MessageTypes;
  beforeAll(async () => {
    const [port] = await freePorts(1);
    node = await startClusterNode(port!, [{ host: '127.0.0.1', port: port! }]);
    const system = node.transport.system;
    new ClusterSingletons(system, node.cluster);
    new PartitionService(system, node.cluster, 16);
    Receptionist.start(system, node.cluster);
    registerConsoleMessages(system.messageTypes);
    registerKeeperMessages(system.messageTypes);
    for (const algorithm of ELECTION_ALGORITHMS)
      definitionOf(algorithm).registerMessages(system.messageTypes);
    types = system.messageTypes;
  });
  afterAll(() => node.transport.close(0));

  it('registers the protocol types this table knows, and more election types', () => {
    const registered = types.types().filter((t) => PROTOCOL.test(t));
    for (const type of Object.keys(EXPECTED)) expect(registered).toContain(type);
    expect(registered.filter((t) => t.startsWith('election.')).length).toBeGreaterThan(10);
  });

  it('each one declares its authority in its schema', () => {
    const rows = types
      .types()
      .filter((t) => PROTOCOL.test(t))
      .map((type) => ({ type, authority: types.authorityOf(type) }));
    for (const { type, authority } of rows) {
      expect(authority, type).toBeDefined();
      if (type.startsWith('election.')) expect(authority, type).toBe('election-peer');
      else expect(authority, type).toBe(EXPECTED[type]);
    }
  });
});
