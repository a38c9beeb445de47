// Sharding on in-process cluster nodes: each node gets a partition service and a Sharding driven
// by the in-process TableKeepers; tables are computed by the test (`allocate`) and adopted on each
// node when the test says, so moves happen exactly when and where a test wants them.
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import type { ActorRef, Logger, Message } from '../../packages/core/src/index.js';
import { fromTransition } from '../../packages/core/src/index.js';
import { allocate, PartitionService, type PartitionTable } from '../../packages/partitions/src/index.js';
import { type RememberOptions, Sharding } from '../../packages/sharding/src/index.js';
import type { KeeperHost, OwnerLeasePort } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import { startPartitionKeeper } from '../../packages/sharding/src/partition-keeper/keeper-machine.js';
import { type ClusterNode, freePorts, startClusterNode } from './cluster-nodes.js';
import { jsonLogCapture, type LogLine } from './json-log.js';
import { TableKeepers } from './table-keeper.js';
import { eventually } from './wait.js';

export const TEST_PARTITIONS = 16;

/**
 * Sharding on `node` whose partition keeper reads the owner lease from `leases` (a fake, or the
 * clock's) instead of the host lease, over TEST_PARTITIONS; `host` may wrap the keeper's host
 * (a test taking a guard away, say).
 */
export function shardingWithLeases(
  node: ClusterNode,
  partitions: PartitionService,
  leases: OwnerLeasePort,
  host: (host: KeeperHost) => KeeperHost = (h) => h,
): Sharding {
  const system = node.transport.system;
  return new Sharding(system, node.cluster, partitions, {
    startKeeper: (keeperHost) =>
      startPartitionKeeper({
        system,
        cluster: node.cluster,
        tables: partitions,
        partitionCount: TEST_PARTITIONS,
        leases,
        host: host(keeperHost),
      }),
  });
}

export interface ShardingNode {
  readonly node: ClusterNode;
  readonly partitions: PartitionService;
  readonly sharding: Sharding;
  readonly key: string;
}

/** Starts a cluster node with sharding on `port`, joining `seeds`. */
export async function startShardingNode(
  port: number,
  seeds: { host: string; port: number }[],
  keepers: TableKeepers,
  config: Partial<ClusterConfig> = {},
  logger?: Logger,
  remember?: RememberOptions,
): Promise<ShardingNode> {
  const node = await startClusterNode(port, seeds, config, {}, '127.0.0.1', logger);
  const system = node.transport.system;
  // the replies entities send back to asks travel as top-level messages: the app registers them
  system.messageTypes.register(['cart.count']);
  const partitions = new PartitionService(system, node.cluster, TEST_PARTITIONS);
  const key = node.cluster.self.key;
  const sharding = new Sharding(system, node.cluster, partitions, {
    startKeeper: keepers.starter(key, partitions),
    ...(config.roles?.includes('carts') ? { partitionRole: 'carts' } : {}),
    ...(remember ? { remember } : {}),
  });
  return { node, partitions, sharding, key };
}

/**
 * One node alone (its own seed) whose log lines at `level` and above are captured, pushed to
 * `nodes` (closed after each test) and up.
 */
export async function startLoggedShardingNode(
  nodes: ShardingNode[],
  level: string,
): Promise<{ node: ShardingNode; lines: LogLine[] }> {
  const { lines, logger } = jsonLogCapture(level);
  const [port] = await freePorts(1);
  const node = await startShardingNode(
    port!,
    [{ host: '127.0.0.1', port: port! }],
    new TableKeepers(),
    {},
    logger,
  );
  nodes.push(node);
  await node.node.cluster.whenUp();
  return { node, lines };
}

/** A table over `nodes` (the allocator's optimal moves from `previous`). */
export function tableOver(nodes: readonly ShardingNode[], previous?: PartitionTable): PartitionTable {
  return allocate(
    previous,
    nodes.map((n) => ({ key: n.key, roles: [] })),
    { partitionCount: TEST_PARTITIONS },
  );
}

export type CartEvent =
  | { readonly type: 'cart.add'; readonly by?: number; readonly from?: string; readonly seq?: number }
  | { readonly type: 'cart.get'; readonly replyTo: ActorRef }
  | { readonly type: 'cart.touch' };

export interface CartState {
  readonly entityId: string;
  readonly count: number;
  /** Per sender (`from`), the last `seq` seen: a lower or equal one is out of order (or twice). */
  readonly lastSeq: Readonly<Record<string, number>>;
  readonly outOfOrder: number;
}

export interface CountReply extends Message {
  readonly type: 'cart.count';
  readonly entityId: string;
  readonly count: number;
  readonly outOfOrder: number;
}

/**
 * A counting cart (`fromTransition`, doyen's fast path): `cart.add` counts (and checks each
 * sender's sequence numbers when given), `cart.get` answers its count. `starts` counts each fresh start per entity id (not restores from a snapshot).
 */
export function cartLogic(starts: Map<string, number>) {
  return fromTransition(
    (state: CartState, event: CartEvent) => {
      if (event.type === 'cart.add') {
        const next = { ...state, count: state.count + (event.by ?? 1) };
        if (event.from === undefined || event.seq === undefined) return next;
        const last = state.lastSeq[event.from] ?? 0;
        return {
          ...next,
          lastSeq: { ...state.lastSeq, [event.from]: event.seq },
          outOfOrder: state.outOfOrder + (event.seq <= last ? 1 : 0),
        };
      }
      if (event.type === 'cart.get') {
        const reply: CountReply = {
          type: 'cart.count',
          entityId: state.entityId,
          count: state.count,
          outOfOrder: state.outOfOrder,
        };
        event.replyTo.send(reply);
      }
      return state;
    },
    ({ input }: { input: { entityId: string } }) => {
      starts.set(input.entityId, (starts.get(input.entityId) ?? 0) + 1);
      return { entityId: input.entityId, count: 0, lastSeq: {}, outOfOrder: 0 };
    },
  );
}

/** Starts `n` sharding nodes on 127.0.0.1 (the first the seed), pushed to `into`, resolved when all are up. */
export async function startShardingCluster(
  n: number,
  into: ShardingNode[],
  keepers = new TableKeepers(),
): Promise<ShardingNode[]> {
  const ports = await freePorts(n);
  const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
  const started: ShardingNode[] = [];
  for (const port of ports) {
    const node = await startShardingNode(port, seeds, keepers);
    into.push(node);
    started.push(node);
    if (started.length === 1) await node.node.cluster.whenUp();
  }
  await eventually(
    () =>
      started.every(
        (s) => s.node.cluster.state().membership?.members.filter((m) => m.status === 'up').length === n,
      ),
    { what: `${n} up members` },
  );
  return started;
}

/** A list of sharding nodes closed after each test of the file. */
export function shardingNodesClosedAfterEach(afterEach: (fn: () => Promise<void>) => void): ShardingNode[] {
  const nodes: ShardingNode[] = [];
  afterEach(async () => {
    const closing = nodes.splice(0);
    for (const n of closing) n.sharding.stop();
    await Promise.all(closing.map((n) => n.node.transport.close()));
  });
  return nodes;
}

/** Asks `ref` for its count until it is `expected` (deliveries may still be on their way). */
export async function countOf(ref: {
  ask: <R extends Message>(build: (replyTo: ActorRef<R>) => CartEvent) => Promise<R>;
}): Promise<number> {
  const reply = await ref.ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
  return reply.count;
}
