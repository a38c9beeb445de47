// Nodes on loopback for the mutual-TLS tests, each with its JSON log lines captured.

import { pino } from 'pino';
import { Cluster, type ClusterConfig } from '../../packages/cluster/src/index.js';
import type { Message, NodeAddress } from '../../packages/core/src/index.js';
import { type WireConfig, WsTransport } from '../../packages/wire/src/index.js';

export interface LoggedNode {
  readonly transport: WsTransport;
  /** Messages received by `/user/inbox`. */
  readonly inbox: Message[];
  /** Every log line of the node, parsed. */
  readonly logs: Record<string, unknown>[];
  cluster?: Cluster;
}

export const TEST_SECRET = 'tls-second-factor';

/** A node on `host` (127.0.0.1 by default) with `/user/inbox` and the test message types. */
export async function startLoggedNode(
  options: { wire?: Partial<WireConfig>; host?: string; port?: number; cluster?: string } = {},
): Promise<LoggedNode> {
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info', base: undefined },
    { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const transport = await WsTransport.start({
    cluster: options.cluster ?? 'tls',
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    logger,
    wire: { secret: TEST_SECRET, ...options.wire },
  });
  transport.system.messageTypes.register(['test.ping', 'test.n']);
  const inbox: Message[] = [];
  transport.system.functionRef('inbox', (m) => inbox.push(m), 'user');
  return { transport, inbox, logs };
}

/** A logged node that also runs cluster membership, joining through `seeds`. */
export async function startLoggedMember(
  port: number,
  seeds: NodeAddress[],
  wire: Partial<WireConfig>,
  config: Partial<ClusterConfig> = {},
): Promise<LoggedNode> {
  const node = await startLoggedNode({ wire, port });
  const transport = node.transport;
  node.cluster = Cluster.start(
    transport.system,
    { seeds, ...config },
    { onMemberRemoved: (n) => transport.forget(n) },
  );
  return node;
}

/** Log entries of one `event`. */
export function eventsOf(node: LoggedNode, event: string): Record<string, unknown>[] {
  return node.logs.filter((l) => l.event === event);
}

/** Sends `test.ping` from `from` to `to`'s inbox. */
export function ping(from: LoggedNode, to: LoggedNode, n = 0): void {
  from.transport.system
    .refFor(to.transport.system.lookup('/user/inbox')!.id)
    .send({ type: 'test.ping', n } as Message);
}
