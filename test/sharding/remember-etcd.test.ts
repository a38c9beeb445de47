// The remember-entities store on a real etcd: batched writes (more than one transaction), prefix
// lists per type and partition, and a restart after the owner stops; an unreachable etcd fails
// each call within its timeout (the runtime retries it).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fromTransition } from '../../packages/core/src/index.js';
import { EtcdRememberStore, type RememberChange } from '../../packages/sharding/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { uniqueCluster } from '../support/etcd.js';
import {
  type ShardingNode,
  shardingNodesClosedAfterEach,
  startShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { TableKeepers } from '../support/table-keeper.js';
import {
  ETCD_MISSING,
  etcdInstalled,
  startThrowawayEtcd,
  type ThrowawayEtcd,
} from '../support/throwaway-etcd.js';
import { eventually } from '../support/wait.js';

const available = Boolean(process.env.ETCD_ENDPOINTS) || etcdInstalled();
if (!available) console.warn(`[remember-etcd] skipped: ${ETCD_MISSING}`);

const nodes = shardingNodesClosedAfterEach(afterEach);
const stores: EtcdRememberStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function store(endpoints: readonly string[], cluster = uniqueCluster('remember')): EtcdRememberStore {
  const s = new EtcdRememberStore({ endpoints, cluster, timeoutMs: 1000 });
  stores.push(s);
  return s;
}

describe('EtcdRememberStore with etcd unreachable', () => {
  it('fails a write and a list within its timeout, never hangs', async () => {
    const [port] = await freePorts(1);
    const s = store([`http://127.0.0.1:${port}`]);
    const started = Date.now();
    await expect(
      s.write([{ entityType: 'cart', partition: 1, entityId: 'x', remembered: true }]),
    ).rejects.toThrow();
    await expect(s.list('cart', 1)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(8000);
  }, 15_000);

  it('refuses bad endpoints with a clear error', () => {
    expect(() => new EtcdRememberStore({ endpoints: ['ftp://x'], cluster: 'c' })).toThrow(/must be http/);
  });
});

describe.skipIf(!available)('EtcdRememberStore against a real etcd', () => {
  let etcd: ThrowawayEtcd;
  beforeAll(async () => {
    etcd = await startThrowawayEtcd();
  }, 20_000);
  afterAll(() => etcd?.stop());

  it('writes adds and removes in batches of transactions and lists them per type and partition', async () => {
    const s = store(etcd.endpoints);
    const adds: RememberChange[] = Array.from({ length: 250 }, (_, i) => ({
      entityType: 'cart',
      partition: i % 2,
      entityId: `cart/${i}`,
      remembered: true,
    }));
    await s.write(adds);
    expect((await s.list('cart', 0)).length).toBe(125);
    expect((await s.list('cart', 1)).length).toBe(125);
    expect(await s.list('device', 0)).toEqual([]);
    // the same id twice in one batch: the later change wins
    await s.write([
      { entityType: 'cart', partition: 0, entityId: 'cart/0', remembered: false },
      { entityType: 'cart', partition: 0, entityId: 'cart/2', remembered: false },
      { entityType: 'cart', partition: 0, entityId: 'cart/2', remembered: true },
    ]);
    const listed = await s.list('cart', 0);
    expect(listed.length).toBe(124);
    expect(listed).not.toContain('cart/0');
    expect(listed).toContain('cart/2');
  });

  it('restarts remembered entities from etcd on the new owner after their owner stops', async () => {
    const cluster = uniqueCluster('remember');
    const keepers = new TableKeepers();
    const ports = await freePorts(2);
    const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
    const started: ShardingNode[] = [];
    for (const port of ports) {
      const n = await startShardingNode(port, seeds, keepers, {}, undefined, {
        store: store(etcd.endpoints, cluster),
        restartsPerSecond: 500,
      });
      nodes.push(n);
      started.push(n);
      await n.node.cluster.whenUp();
    }
    const [a, b] = started as [ShardingNode, ShardingNode];
    const starts = new Map<string, number>();
    const counter = fromTransition(
      (count: number, e: { type: string }) => (e.type === 'cart.add' ? count + 1 : count),
      ({ input }: { input: { entityId: string } }) => {
        starts.set(input.entityId, (starts.get(input.entityId) ?? 0) + 1);
        return 0;
      },
    );
    for (const n of started) n.sharding.register('cart', counter, { remember: true });
    const v1 = tableOver([b]);
    for (const n of started) n.partitions.adopt(v1);
    const ids = Array.from({ length: 300 }, (_, i) => `cart-${i}`);
    for (const id of ids) a.sharding.ref('cart', id).send({ type: 'cart.add' });
    const reader = store(etcd.endpoints, cluster);
    const remembered = async () => {
      let n = 0;
      for (let p = 0; p < a.partitions.partitionCount; p++) n += (await reader.list('cart', p)).length;
      return n;
    };
    await eventually(async () => (await remembered()) === ids.length, { what: '300 ids in etcd' });

    nodes.splice(nodes.indexOf(b), 1);
    b.sharding.stop();
    await b.node.transport.close();
    const v2 = tableOver([a], v1);
    a.partitions.adopt(v2);
    await eventually(() => a.sharding.region.activeCount('cart') === ids.length, {
      what: 'every id restarted on a',
    });
    expect([...starts.values()].every((n) => n === 2)).toBe(true);
  }, 30_000);
});
