import { Cluster, type ClusterConfig } from '../../packages/cluster/src/index.js';
import type { NodeAddress } from '../../packages/core/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';

export interface ClusterNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
}

export { freePorts } from '../../packages/testkit/src/free-ports.js';

export async function startClusterNode(
  port: number,
  seeds: NodeAddress[],
  config: Partial<ClusterConfig> = {},
): Promise<ClusterNode> {
  const transport = await WsTransport.start({
    cluster: 'it',
    host: '127.0.0.1',
    port,
    wire: { secret: 's' },
  });
  const cluster = Cluster.start(
    transport.system,
    { seeds, ...config },
    { onMemberRemoved: (n) => transport.forget(n) },
  );
  return { transport, cluster };
}

/** The view a node has: coordinator address and the sorted live member addresses. */
export function viewOf(node: ClusterNode): string {
  const s = node.cluster.state();
  const members = (s.membership?.members ?? []).map((m) => `${m.address}:${m.status}`).sort();
  return `${s.coordinator?.address ?? '-'}|${members.join(',')}`;
}
