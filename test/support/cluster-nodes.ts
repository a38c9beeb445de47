import { Cluster, type ClusterConfig, nodeOf } from '../../packages/cluster/src/index.js';
import type { NodeAddress } from '../../packages/core/src/index.js';
import { type WireConfig, WsTransport } from '../../packages/wire/src/index.js';

export interface ClusterNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
}

export { freePorts } from '../../packages/testkit/src/free-ports.js';

export async function startClusterNode(
  port: number,
  seeds: NodeAddress[],
  config: Partial<ClusterConfig> = {},
  wire: Partial<WireConfig> = {},
  /** Another loopback address (127.0.0.x) makes the node a distinct source address to its peers. */
  host = '127.0.0.1',
): Promise<ClusterNode> {
  const transport = await WsTransport.start({
    cluster: 'it',
    host,
    port,
    wire: { secret: 's', ...wire },
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

/** The view a node has: coordinator address and the sorted live member addresses. */
export function viewOf(node: ClusterNode): string {
  const s = node.cluster.state();
  const members = (s.membership?.members ?? []).map((m) => `${m.address}:${m.status}`).sort();
  return `${s.coordinator?.address ?? '-'}|${members.join(',')}`;
}
