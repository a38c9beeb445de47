// Kept apart from cluster-nodes.ts, which the benches import too: this one needs vitest.
import { afterEach } from 'vitest';
import type { ClusterNode } from './cluster-nodes.js';

/** A list for the cluster nodes a test starts: every one in it is closed at once after each test. */
export function clusterNodesClosedAfterEach(): ClusterNode[] {
  const nodes: ClusterNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.transport.close(0)));
  });
  return nodes;
}
