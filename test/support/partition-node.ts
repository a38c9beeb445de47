import { memberKey } from '../../packages/cluster/src/index.js';
import {
  ALLOCATOR_SINGLETON,
  allocatorLogic,
  PartitionService,
} from '../../packages/partitions/src/index.js';
import { ClusterSingletons } from '../../packages/singleton/src/index.js';
import { type ClusterNode, startClusterNode } from './cluster-nodes.js';

export interface PartitionNode extends ClusterNode {
  readonly service: PartitionService;
}

/**
 * A cluster node as `startNode` wires it: singletons, the partition service (tables judged from
 * the allocator singleton's placement) and the allocator with `partitionCount` partitions.
 */
export async function startPartitionNode(
  port: number,
  seedPort: number,
  partitionCount: number,
): Promise<PartitionNode> {
  const node = await startClusterNode(port, [{ host: '127.0.0.1', port: seedPort }]);
  const system = node.transport.system;
  const singletons = new ClusterSingletons(system, node.cluster);
  const service = new PartitionService(system, node.cluster, partitionCount, {
    allocatorHost: (m) => {
      const host = singletons.placement.hostOf(m, undefined);
      return host && memberKey(host);
    },
  });
  singletons.register(
    ALLOCATOR_SINGLETON,
    allocatorLogic({
      system,
      cluster: node.cluster,
      service,
      options: { partitionCount },
      ackTimeoutMs: 2000,
    }),
  );
  return { ...node, service };
}
