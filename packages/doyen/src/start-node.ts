import { Cluster } from '@doyen/cluster';
import { createLogger, type Logger } from '@doyen/core';
import { WsTransport } from '@doyen/wire';
import { ManagementServer } from './management-http.js';
import { type NodeConfig, validateNodeConfig } from './node-config.js';

export interface DoyenNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
  readonly http: ManagementServer | undefined;
  readonly logger: Logger;
  /** Leaves the cluster gracefully (bounded by the leave timeout), then closes everything. */
  shutdown(): Promise<void>;
  /** Closes at once, without leaving: what a crash looks like to the others. */
  close(): Promise<void>;
  /** Resolves once the node has closed, whoever asked (API, HTTP, signal). */
  readonly closed: Promise<void>;
}

/**
 * Starts a node: binds the transport, starts joining, serves HTTP management, and resolves
 * once the node is up. Rejects with `JoinFailedError` when no seed lets it in.
 */
export async function startNode(
  input: NodeConfig,
  options: { logger?: Logger; waitUntilUp?: boolean } = {},
): Promise<DoyenNode> {
  const config = validateNodeConfig(input);
  const logger = options.logger ?? createLogger({ level: config.logLevel ?? 'info' });
  const transport = await WsTransport.start({
    cluster: config.cluster,
    host: config.host,
    port: config.port,
    logger,
    wire: { ...config.wire, ...(config.secret !== undefined ? { secret: config.secret } : {}) },
    ...(config.bindHost ? { bindHost: config.bindHost } : {}),
  });
  const cluster = Cluster.start(
    transport.system,
    {
      ...config.clusterOptions,
      seeds: config.seeds,
      roles: config.roles ?? [],
      ...(config.name ? { name: config.name } : {}),
    },
    { onMemberRemoved: (node) => transport.forget(node) },
  );
  let closing: Promise<void> | undefined;
  let http: ManagementServer | undefined;
  let markClosed: () => void = () => {};
  const closedPromise = new Promise<void>((resolve) => (markClosed = resolve));
  const close = () => {
    closing ??= (async () => {
      cluster.stop();
      await http?.close();
      await transport.close();
      markClosed();
    })();
    return closing;
  };
  let shuttingDown: Promise<void> | undefined;
  const shutdown = () => {
    shuttingDown ??= (async () => {
      logger.info({ event: 'node.shutdown', node: transport.system.nodeName }, 'leaving the cluster');
      await cluster.leave();
      await close();
    })();
    return shuttingDown;
  };
  try {
    if (config.httpPort !== undefined) {
      http = await ManagementServer.start({
        host: config.bindHost ?? config.host,
        port: config.httpPort,
        system: transport.system,
        cluster,
        onLeave: () => void shutdown(),
      });
    }
    if (options.waitUntilUp !== false) await cluster.whenUp();
  } catch (error) {
    await close();
    throw error;
  }
  return { transport, cluster, http, logger, shutdown, close, closed: closedPromise };
}
