import { afterEach, describe, expect, it } from 'vitest';
import { freePorts } from '../support/cluster-nodes.js';
import {
  type CountReply,
  cartLogic,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  startShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { TableKeepers } from '../support/table-keeper.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

const startCluster = (n: number) => startShardingCluster(n, nodes);

describe('sharded entities: routing from every node to one activation', () => {
  it('sends and asks from three nodes reach one activation per entity id, counts exact', async () => {
    const cluster = await startCluster(3);
    const starts = new Map<string, number>();
    const carts = cluster.map((n) => n.sharding.register('cart', cartLogic(starts)));
    const table = tableOver(cluster);
    for (const n of cluster) n.partitions.adopt(table);
    const ids = Array.from({ length: 30 }, (_, i) => `cart-${i}`);
    for (const c of carts)
      for (const id of ids) for (let k = 0; k < 5; k++) c.ref(id).send({ type: 'cart.add' });
    for (const [i, c] of carts.entries()) {
      for (const id of ids) {
        const reply = await eventually(
          async () => {
            const r = await c.ref(id).ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
            return r.count === 15 ? r : undefined;
          },
          { what: `${id} counted 15 from node ${i}` },
        );
        expect(reply.entityId).toBe(id);
      }
    }
    // every id started exactly once, on the owner of its partition
    expect([...starts.values()].every((n) => n === 1)).toBe(true);
    expect(starts.size).toBe(ids.length);
    const activations = cluster.map((n) =>
      n.node.transport.system.metrics.total('doyen_sharding_activations_total'),
    );
    expect(activations.reduce((a, b) => a + b, 0)).toBe(ids.length);
    for (const id of ids) {
      const running = cluster.filter((n) => n.sharding.region.isRunning('cart', id));
      expect(running.map((n) => n.key)).toEqual([table.owners[cluster[0]!.partitions.partitionOf(id)]]);
    }
  });

  it('messages sent before any table are held and delivered once the partitions activate', async () => {
    const cluster = await startCluster(2);
    const starts = new Map<string, number>();
    const carts = cluster.map((n) => n.sharding.register('cart', cartLogic(starts)));
    for (const c of carts) for (let i = 0; i < 10; i++) c.ref(`early-${i}`).send({ type: 'cart.add', by: 2 });
    expect(cluster.reduce((s, n) => s + n.sharding.region.bufferedCount(), 0)).toBe(20);
    expect(cluster[0]!.node.transport.system.metrics.value('doyen_sharding_buffered_messages')).toBe(10);
    const table = tableOver(cluster);
    for (const n of cluster) n.partitions.adopt(table);
    for (let i = 0; i < 10; i++) {
      await eventually(
        async () => {
          const r = await carts[1]!
            .ref(`early-${i}`)
            .ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
          return r.count === 4;
        },
        { what: `early-${i} counted 4` },
      );
    }
    expect(cluster.reduce((s, n) => s + n.sharding.region.bufferedCount(), 0)).toBe(0);
  });

  it('a node without the type role only routes: every entity runs on the node with the role', async () => {
    const ports = await freePorts(2);
    const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
    const keepers = new TableKeepers();
    const host = await startShardingNode(ports[0]!, seeds, keepers, { roles: ['carts'] });
    nodes.push(host);
    await host.node.cluster.whenUp();
    const proxy = await startShardingNode(ports[1]!, seeds, keepers, { roles: [] });
    nodes.push(proxy);
    await proxy.node.cluster.whenUp();
    const starts = new Map<string, number>();
    const hostCarts = host.sharding.register('cart', cartLogic(starts), { role: 'carts' });
    // the proxy-only node must name the same role as its partitions' (it has no role, so no partitionRole)
    expect(() => proxy.sharding.register('cart', cartLogic(starts), { role: 'carts' })).toThrow(/role/);
    const proxyCarts = proxy.sharding.register('cart', cartLogic(starts));
    expect(host.sharding.shards().regions[0]!.hosts).toBe(true);
    // every partition to the node with the role, as the allocator with partitions.role does
    const table = tableOver([host]);
    for (const n of [host, proxy]) n.partitions.adopt(table);
    for (let i = 0; i < 10; i++) proxyCarts.ref(`p-${i}`).send({ type: 'cart.add' });
    for (let i = 0; i < 10; i++)
      await eventually(async () => {
        const r = await proxyCarts
          .ref(`p-${i}`)
          .ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
        return r.count === 1;
      });
    expect(host.sharding.region.activeCount('cart')).toBe(10);
    expect(proxy.sharding.region.activeCount('cart')).toBe(0);
    expect(hostCarts.name).toBe('cart');
  });
});
