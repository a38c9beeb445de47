// Remember entities on an in-process cluster: the ids of active entities are kept in a store per
// partition; after their owner stops, the partition's new owners restart them at the configured
// rate, never all at once and never one twice; a store that is down is retried, logged and counted.
import { afterEach, describe, expect, it } from 'vitest';
import { busiestWindow } from '../../bench/lib/stats.js';
import { fromTransition } from '../../packages/core/src/index.js';
import type { PartitionTable } from '../../packages/partitions/src/index.js';
import {
  MemoryRememberStore,
  type RememberChange,
  type RememberOptions,
  type RememberStore,
} from '../../packages/sharding/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { jsonLogCapture } from '../support/json-log.js';
import {
  type ShardingNode,
  shardingNodesClosedAfterEach,
  startShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { TableKeepers } from '../support/table-keeper.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

/** Per node: when each entity started (fresh start: no snapshot), in order. */
type Starts = { id: string; at: number }[];

/** A counter whose every fresh start is recorded in `starts`. */
function recordedCounter(starts: Starts) {
  return fromTransition(
    (count: number, event: { type: string }) => (event.type === 'cart.add' ? count + 1 : count),
    ({ input }: { input: { entityId: string } }) => {
      starts.push({ id: input.entityId, at: performance.now() });
      return 0;
    },
  );
}

/** A store that can be switched off: every call then fails as an unreachable etcd would. */
class SwitchableStore implements RememberStore {
  down = false;
  constructor(readonly inner: MemoryRememberStore) {}
  async write(changes: readonly RememberChange[]): Promise<void> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:2379 (store switched off)');
    await this.inner.write(changes);
  }
  async list(entityType: string, partition: number): Promise<readonly string[]> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:2379 (store switched off)');
    return this.inner.list(entityType, partition);
  }
  async close(): Promise<void> {}
}

/** Three nodes sharing `remember`; the table puts every partition on the third. */
async function threeNodes(remember: RememberOptions, loggers: ReturnType<typeof jsonLogCapture>[] = []) {
  const keepers = new TableKeepers();
  const ports = await freePorts(3);
  const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
  const started: ShardingNode[] = [];
  for (const [i, port] of ports.entries()) {
    const n = await startShardingNode(port, seeds, keepers, {}, loggers[i]?.logger, remember);
    nodes.push(n);
    started.push(n);
    await n.node.cluster.whenUp();
  }
  const [a, b, c] = started as [ShardingNode, ShardingNode, ShardingNode];
  const v1 = tableOver([c]);
  for (const n of started) n.partitions.adopt(v1);
  return { a, b, c, v1 };
}

/** Stops `n` as a crash looks to the others (no hand-off): its keeper and entities end with it. */
async function stopNode(n: ShardingNode): Promise<void> {
  nodes.splice(nodes.indexOf(n), 1);
  n.sharding.stop();
  await n.node.transport.close();
}

describe('remember entities', () => {
  it('restarts 10k remembered ids on the new owners at the configured rate after their owner stops, none twice', async () => {
    const store = new MemoryRememberStore();
    const rate = 2000;
    const { a, b, c, v1 } = await threeNodes({ store, restartsPerSecond: rate });
    const starts = new Map<ShardingNode, Starts>([
      [a, []],
      [b, []],
      [c, []],
    ]);
    const carts = new Map(
      [...starts].map(([n, s]) => [n, n.sharding.register('cart', recordedCounter(s), { remember: true })]),
    );
    const ids = Array.from({ length: 10_000 }, (_, i) => `cart-${i}`);
    for (const id of ids) carts.get(a)!.ref(id).send({ type: 'cart.add' });
    await eventually(() => store.all('cart').length === ids.length, {
      what: '10k ids remembered',
      timeoutMs: 20_000,
    });
    expect(c.sharding.region.activeCount('cart')).toBe(ids.length);

    await stopNode(c);
    const stoppedAt = performance.now();
    const v2: PartitionTable = tableOver([a, b], v1);
    for (const n of [a, b]) n.partitions.adopt(v2);
    // while the restarts run, messages reach some entities first: they start once, by the message
    await new Promise((r) => setTimeout(r, 300));
    const early = ids.filter((_, i) => i % 200 === 0);
    for (const id of early) carts.get(b)!.ref(id).send({ type: 'cart.add' });
    await eventually(
      () => a.sharding.region.activeCount('cart') + b.sharding.region.activeCount('cart') === ids.length,
      { what: 'every remembered id running again', timeoutMs: 30_000 },
    );
    const took = performance.now() - stoppedAt;

    // none twice: each id started once on the stopped node and once more after it
    const after = [...starts.get(a)!, ...starts.get(b)!];
    const perId = new Map<string, number>();
    for (const s of after) perId.set(s.id, (perId.get(s.id) ?? 0) + 1);
    expect(after.length).toBe(ids.length);
    expect([...perId.values()].every((n) => n === 1)).toBe(true);
    expect(
      ids.every((id) => a.sharding.region.isRunning('cart', id) !== b.sharding.region.isRunning('cart', id)),
    ).toBe(true);

    // at the configured rate: no second of either node restarts more than the rate (+ the early
    // messages' starts and one pacer tick of slack), and each node's share takes its time
    for (const n of [a, b]) {
      const times = starts.get(n)!.map((s) => s.at);
      const share = times.length;
      const busiest = busiestWindow(times, 1000);
      const spread = Math.max(...times) - Math.min(...times);
      console.log(
        `[remember] ${n.key}: ${share} restarted over ${spread.toFixed(0)} ms, busiest second ${busiest} (rate ${rate}/s)`,
      );
      expect(busiest).toBeLessThanOrEqual(rate + early.length + rate / 50);
      expect(spread).toBeGreaterThanOrEqual(((share - rate) / rate) * 1000 * 0.9);
    }
    // every id was restarted from the store except early ones a message started first
    const restarted = [a, b].reduce(
      (sum, n) =>
        sum +
        n.node.transport.system.metrics.value('doyen_sharding_remembered_restarts_total', { type: 'cart' }),
      0,
    );
    expect(restarted).toBeGreaterThanOrEqual(ids.length - early.length);
    expect(restarted).toBeLessThanOrEqual(ids.length);
    console.log(`[remember] 10k ids running again ${took.toFixed(0)} ms after their owner stopped`);
  }, 90_000);

  it('forgets an id when its entity is passivated (idle), keeps it across a move', async () => {
    const store = new MemoryRememberStore();
    const { a, c, v1 } = await threeNodes({ store });
    const starts: Starts = [];
    for (const n of nodes)
      n.sharding.register('cart', recordedCounter(starts), { remember: true, passivateAfterMs: 1000 });
    const cart = a.sharding.ref('cart', 'idle-1');
    cart.send({ type: 'cart.add' });
    await eventually(() => store.all('cart').includes('idle-1'), { what: 'idle-1 remembered' });
    await eventually(() => !c.sharding.region.isRunning('cart', 'idle-1'), { what: 'idle-1 passivated' });
    await eventually(() => store.all('cart').length === 0, { what: 'idle-1 forgotten' });

    // a planned move (hand-off) keeps the id: the new owner restarts it without a message
    a.sharding.ref('cart', 'moving-1').send({ type: 'cart.add' });
    await eventually(() => store.all('cart').includes('moving-1'), { what: 'moving-1 remembered' });
    const v2 = tableOver([a], v1);
    for (const n of nodes) n.partitions.adopt(v2);
    await eventually(() => a.sharding.region.isRunning('cart', 'moving-1'), {
      what: 'moving-1 restarted on a',
    });
    expect(store.all('cart')).toEqual(['moving-1']);
  }, 30_000);

  it('a store that is down: failures are logged and counted, retried with backoff; no crash, nothing run twice', async () => {
    const store = new SwitchableStore(new MemoryRememberStore());
    const logs = [jsonLogCapture('info'), jsonLogCapture('info'), jsonLogCapture('info')];
    const { a, b, c, v1 } = await threeNodes({ store, retryMs: 20, maxRetryMs: 200 }, logs);
    const starts = new Map<ShardingNode, Starts>([
      [a, []],
      [b, []],
      [c, []],
    ]);
    for (const [n, s] of starts) n.sharding.register('cart', recordedCounter(s), { remember: true });
    const ids = Array.from({ length: 200 }, (_, i) => `cart-${i}`);

    // writes while the store is down: kept, retried, then written once it is back
    store.down = true;
    for (const id of ids) a.sharding.ref('cart', id).send({ type: 'cart.add' });
    const cMetrics = c.node.transport.system.metrics;
    await eventually(
      () => cMetrics.value('doyen_sharding_remember_store_failures_total', { operation: 'write' }) >= 2,
      {
        what: 'failed writes retried',
      },
    );
    expect(
      logs[2]!.lines.some((l) => l.event === 'sharding.remember-store-failed' && l.operation === 'write'),
    ).toBe(true);
    expect(cMetrics.value('doyen_sharding_remember_pending_writes')).toBe(ids.length);
    store.down = false;
    await eventually(() => store.inner.all('cart').length === ids.length, {
      what: 'ids written once the store is back',
    });

    // the owner stops while the store is down: the new owners cannot list, retry, and restart once it is back
    store.down = true;
    await stopNode(c);
    const v2 = tableOver([a, b], v1);
    for (const n of [a, b]) n.partitions.adopt(v2);
    const aMetrics = a.node.transport.system.metrics;
    const bMetrics = b.node.transport.system.metrics;
    await eventually(
      () =>
        aMetrics.value('doyen_sharding_remember_store_failures_total', { operation: 'list' }) +
          bMetrics.value('doyen_sharding_remember_store_failures_total', { operation: 'list' }) >=
        4,
      { what: 'failed lists retried' },
    );
    expect(
      [...logs[0]!.lines, ...logs[1]!.lines].some(
        (l) => l.event === 'sharding.remember-store-failed' && l.operation === 'list',
      ),
    ).toBe(true);
    // messages still reach their entities meanwhile (started by the message, once)
    for (const id of ids.slice(0, 20)) a.sharding.ref('cart', id).send({ type: 'cart.add' });
    await eventually(
      () => a.sharding.region.activeCount('cart') + b.sharding.region.activeCount('cart') === 20,
      { what: '20 entities started by messages' },
    );
    store.down = false;
    await eventually(
      () => a.sharding.region.activeCount('cart') + b.sharding.region.activeCount('cart') === ids.length,
      { what: 'every remembered id restarted once the store is back' },
    );
    const after = [...starts.get(a)!, ...starts.get(b)!].map((s) => s.id);
    expect(after.length).toBe(ids.length);
    expect(new Set(after).size).toBe(ids.length);
  }, 30_000);

  it('a type with remember on a node without a store is refused with a clear error', async () => {
    const keepers = new TableKeepers();
    const [port] = await freePorts(1);
    const n = await startShardingNode(port!, [{ host: '127.0.0.1', port: port! }], keepers);
    nodes.push(n);
    expect(() => n.sharding.register('cart', recordedCounter([]), { remember: true })).toThrow(
      /remember: true, but this node has no remember store/,
    );
  });
});
