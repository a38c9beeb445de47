import { Cluster, type ClusterConfig } from '../../packages/cluster/src/index.js';
import type { NodeAddress } from '../../packages/core/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';

export interface ClusterNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
}

/** Free ports on 127.0.0.1, picked by binding and releasing (seed lists need ports up front). */
export async function freePorts(n: number): Promise<number[]> {
  const { createServer } = await import('node:net');
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import('node:net').Server>((resolve) => {
          const s = createServer();
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as import('node:net').AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

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
