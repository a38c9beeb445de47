// doyen nodes started in the test process (startNode): the list a test file closes after each test,
// and a node on 127.0.0.1 that forms its own cluster on ports chosen at run time.
import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';
import { type DoyenNode, type NodeConfig, silentLogger, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from './cluster-nodes.js';

/** A list for the nodes a test starts: every one in it is closed after each test of the file. */
export function nodesClosedAfterEach(): DoyenNode[] {
  const nodes: DoyenNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.close()));
  });
  return nodes;
}

/** A node started by `startLocalNode`, with the ports it was given. */
export interface LocalNode {
  readonly node: DoyenNode;
  readonly port: number;
  readonly httpPort: number;
}

/**
 * Starts a node on 127.0.0.1, its wire and HTTP on free ports, seeded by itself (so it forms its
 * own cluster) with a random secret, logging nowhere; `config` and `options` override any of it.
 * The node goes into `nodes` when given, before it is returned.
 */
export async function startLocalNode(
  config: Partial<NodeConfig> & { readonly cluster: string },
  options: Parameters<typeof startNode>[1] = {},
  nodes?: DoyenNode[],
): Promise<LocalNode> {
  const [port, httpPort] = await freePorts(2);
  const node = await startNode(
    {
      host: '127.0.0.1',
      port: port!,
      httpPort: httpPort!,
      seeds: [{ host: '127.0.0.1', port: port! }],
      secret: randomBytes(16).toString('hex'),
      ...config,
    },
    { logger: silentLogger(), ...options },
  );
  nodes?.push(node);
  return { node, port: port!, httpPort: httpPort! };
}

/**
 * Starts a member on 127.0.0.1:`port` joining through 127.0.0.1:`seedPort` (its own port: it
 * forms the cluster), logging nowhere unless `options.logger`; `config` names the cluster and
 * its secret and adds the rest. The node goes into `nodes` when given.
 */
export async function startMemberNode(
  port: number,
  seedPort: number,
  config: Partial<NodeConfig> & { readonly cluster: string; readonly secret: string },
  options: Parameters<typeof startNode>[1] = {},
  nodes?: DoyenNode[],
): Promise<DoyenNode> {
  const node = await startNode(
    { host: '127.0.0.1', port, seeds: [{ host: '127.0.0.1', port: seedPort }], ...config },
    { logger: silentLogger(), ...options },
  );
  nodes?.push(node);
  return node;
}
