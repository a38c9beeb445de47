import { afterEach, describe, expect, it } from 'vitest';
import { ManagementServer } from '../../packages/doyen/src/index.js';
import type { ShardRegionsView } from '../../packages/sharding/src/index.js';
import {
  cartLogic,
  countOf,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  tableOver,
} from '../support/sharding-nodes.js';

const nodes = shardingNodesClosedAfterEach(afterEach);
const servers: ManagementServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('GET /cluster/shards', () => {
  it("answers per entity type the partitions active here and their entity counts (Akka Management's shape)", async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const carts = a!.sharding.register('cart', cartLogic(new Map()));
    b!.sharding.register('cart', cartLogic(new Map()));
    a!.sharding.register('device', cartLogic(new Map()));
    b!.sharding.register('device', cartLogic(new Map()));
    const table = tableOver([a!, b!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    const ids = Array.from({ length: 12 }, (_, i) => `c-${i}`);
    for (const id of ids) expect(await countOf(carts.ref(id))).toBe(0);
    const http = await ManagementServer.start({
      host: '127.0.0.1',
      port: 0,
      node: { system: a!.node.transport.system, cluster: a!.node.cluster, sharding: a!.sharding },
      onLeave: () => {},
    });
    servers.push(http);
    const base = `http://127.0.0.1:${http.port}`;
    const all = (await (await fetch(`${base}/cluster/shards`)).json()) as ShardRegionsView;
    const mine = table.owners.flatMap((o, p) => (o === a!.key ? [p] : []));
    expect(all.self).toBe(a!.key);
    expect(all.tableVersion).toBe(table.version);
    expect(all.activePartitions).toEqual(mine);
    expect(all.regions.map((r) => r.typeName)).toEqual(['cart', 'device']);
    const expected = mine.map((p) => ({
      shardId: String(p),
      numEntities: ids.filter((id) => a!.partitions.partitionOf(id) === p).length,
    }));
    expect(all.regions[0]!.shards).toEqual(expected);
    expect(all.regions[1]!.shards.every((s) => s.numEntities === 0)).toBe(true);
    const one = await (await fetch(`${base}/cluster/shards/cart`)).json();
    expect(one).toEqual({ regions: [{ shards: expected }] });
    expect((await fetch(`${base}/cluster/shards/nope`)).status).toBe(404);
    // a change without the management token is refused before any route
    expect((await fetch(`${base}/cluster/shards`, { method: 'POST' })).status).toBe(403);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/doyen_sharding_active_entities\{type="cart"\} \d+/);
    expect(metrics).toMatch(/doyen_sharding_activations_total\{type="cart"\} \d+/);
  });

  it('a node with sharding off answers 404', async () => {
    const [a] = await startShardingCluster(1, nodes);
    const http = await ManagementServer.start({
      host: '127.0.0.1',
      port: 0,
      node: { system: a!.node.transport.system, cluster: a!.node.cluster },
      onLeave: () => {},
    });
    servers.push(http);
    expect((await fetch(`http://127.0.0.1:${http.port}/cluster/shards`)).status).toBe(404);
  });
});
