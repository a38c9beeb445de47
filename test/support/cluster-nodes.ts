import { Cluster, type ClusterConfig, nodeOf } from '../../packages/cluster/src/index.js';
import type { Logger, NodeAddress } from '../../packages/core/src/index.js';
import { type WireConfig, WsTransport } from '../../packages/wire/src/index.js';

export interface ClusterNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
}

import { freePorts } from '../../packages/testkit/src/free-ports.js';
import { eventually } from './wait.js';

export { freePorts };

export async function startClusterNode(
  port: number,
  seeds: NodeAddress[],
  config: Partial<ClusterConfig> = {},
  wire: Partial<WireConfig> = {},
  /** Another loopback address (127.0.0.x) makes the node a distinct source address to its peers. */
  host = '127.0.0.1',
  /** Where the node logs (default nowhere). */
  logger?: Logger,
): Promise<ClusterNode> {
  const transport = await WsTransport.start({
    cluster: 'it',
    host,
    port,
    wire: { secret: 's', ...wire },
    ...(logger ? { logger } : {}),
  });
  const cluster = Cluster.start(
    transport.system,
    { seeds, ...config },
    { onMemberRemoved: (n) => transport.forget(n) },
  );
  // as startNode does: members and seeds are known peers (reserved handshake slots, decode priority)
  transport.setKnownPeers([], seeds);
  cluster.subscribeMembership((m) => transport.setKnownPeers(m.members.map(nodeOf), seeds));
  return { transport, cluster };
}

/**
 * A cluster of `wires.length` nodes on 127.0.0.1 (one wire config each), the first its seed,
 * resolved once every node sees them all up. Push the nodes to `into` as they start, so a test's
 * cleanup closes them even when the cluster never forms.
 */
export async function startUpCluster(
  wires: readonly Partial<WireConfig>[],
  into: ClusterNode[],
  config: Partial<ClusterConfig> = {},
): Promise<ClusterNode[]> {
  const ports = await freePorts(wires.length);
  const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
  const first = await startClusterNode(ports[0]!, seeds, config, wires[0]);
  into.push(first);
  await first.cluster.whenUp();
  for (let i = 1; i < wires.length; i++)
    into.push(await startClusterNode(ports[i]!, seeds, config, wires[i]));
  const nodes = into.slice(-wires.length);
  await eventually(
    () =>
      nodes.every(
        (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === wires.length,
      ),
    { what: `${wires.length} up members everywhere` },
  );
  return nodes;
}

/**
 * Two nodes on 127.0.0.1 (A the seed, so A is the coordinator), pushed to `into` as they start and
 * resolved once both are up; `peerPort` is a third free port, for a raw peer of the test's own.
 */
export async function startTwoNodes(
  into: ClusterNode[],
): Promise<{ a: ClusterNode; b: ClusterNode; peerPort: number }> {
  const [portA, portB, peerPort] = (await freePorts(3)) as [number, number, number];
  const seeds = [{ host: '127.0.0.1', port: portA }];
  const a = await startClusterNode(portA, seeds);
  into.push(a);
  const b = await startClusterNode(portB, seeds);
  into.push(b);
  await Promise.all([a.cluster.whenUp(), b.cluster.whenUp()]);
  return { a, b, peerPort };
}

/** The view a node has: coordinator address and the sorted live member addresses. */
export function viewOf(node: ClusterNode): string {
  const s = node.cluster.state();
  const members = (s.membership?.members ?? []).map((m) => `${m.address}:${m.status}`).sort();
  return `${s.coordinator?.address ?? '-'}|${members.join(',')}`;
}
