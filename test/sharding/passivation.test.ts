import { afterEach, describe, expect, it } from 'vitest';
import {
  ACTIVATED_EVENT,
  PARTITION_PASSIVATED_EVENT,
  PASSIVATED_EVENT,
  perEntityLines,
} from '../../packages/sharding/src/region/entity-log-lines.js';
import {
  cartLogic,
  countOf,
  shardingNodesClosedAfterEach,
  startLoggedShardingNode,
  startShardingCluster,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('passivation', () => {
  it('an idle entity stops after passivateAfterMs; the next message starts it again, transparently', async () => {
    const [node] = await startShardingCluster(1, nodes);
    const starts = new Map<string, number>();
    const carts = node!.sharding.register('cart', cartLogic(starts), { passivateAfterMs: 150 });
    node!.partitions.adopt(tableOver([node!]));
    for (let i = 0; i < 5; i++) carts.ref(`idle-${i}`).send({ type: 'cart.add' });
    await eventually(() => node!.sharding.region.activeCount('cart') === 5);
    // a busy entity stays: one keeps getting messages past the timeout
    for (let t = 0; t < 6; t++) {
      carts.ref('busy').send({ type: 'cart.add' });
      await sleep(50);
    }
    await eventually(() => node!.sharding.region.activeCount('cart') === 1, {
      what: 'the idle ones passivated',
    });
    expect(node!.sharding.region.isRunning('cart', 'busy')).toBe(true);
    const metrics = node!.node.transport.system.metrics;
    expect(metrics.value('doyen_sharding_passivations_total', { type: 'cart', reason: 'idle' })).toBe(5);
    expect(metrics.value('doyen_sharding_active_entities', { type: 'cart' })).toBe(1);
    // re-activation on the next message: a fresh start (no persistence), counted as a second start
    expect(await countOf(carts.ref('idle-0'))).toBe(0);
    expect(starts.get('idle-0')).toBe(2);
    expect(node!.sharding.region.isRunning('cart', 'idle-0')).toBe(true);
  });

  it('positive control: without passivateAfterMs the same entities stay active', async () => {
    const [node] = await startShardingCluster(1, nodes);
    const carts = node!.sharding.register('cart', cartLogic(new Map()));
    node!.partitions.adopt(tableOver([node!]));
    for (let i = 0; i < 5; i++) carts.ref(`idle-${i}`).send({ type: 'cart.add' });
    await eventually(() => node!.sharding.region.activeCount('cart') === 5);
    await sleep(400);
    expect(node!.sharding.region.activeCount('cart')).toBe(5);
    expect(await countOf(carts.ref('idle-0'))).toBe(1);
  });

  it('over maxActiveEntities the least recently used entity is stopped; its next message brings it back', async () => {
    const [node] = await startShardingCluster(1, nodes);
    const starts = new Map<string, number>();
    const carts = node!.sharding.register('cart', cartLogic(starts), { maxActiveEntities: 5 });
    node!.partitions.adopt(tableOver([node!]));
    for (let i = 0; i < 20; i++) {
      carts.ref(`lru-${i}`).send({ type: 'cart.add' });
      // keep lru-0 recently used: it must survive every eviction
      carts.ref('lru-0').send({ type: 'cart.add' });
    }
    await eventually(() => node!.sharding.region.activeCount('cart') <= 5, { what: 'at most 5 active' });
    expect(await countOf(carts.ref('lru-0'))).toBe(21);
    expect(node!.sharding.region.isRunning('cart', 'lru-1')).toBe(false);
    expect(node!.sharding.region.isRunning('cart', 'lru-19')).toBe(true);
    const metrics = node!.node.transport.system.metrics;
    expect(
      metrics.value('doyen_sharding_passivations_total', { type: 'cart', reason: 'cap' }),
    ).toBeGreaterThanOrEqual(15);
    expect(starts.get('lru-0')).toBe(1);
    expect(await countOf(carts.ref('lru-1'))).toBe(0);
    expect(starts.get('lru-1')).toBe(2);
    expect(node!.sharding.region.activeCount('cart')).toBeLessThanOrEqual(5);
  });

  it('positive control: with the cap at Infinity all 20 stay active', async () => {
    const [node] = await startShardingCluster(1, nodes);
    const carts = node!.sharding.register('cart', cartLogic(new Map()), {
      maxActiveEntities: Number.POSITIVE_INFINITY,
    });
    node!.partitions.adopt(tableOver([node!]));
    for (let i = 0; i < 20; i++) carts.ref(`lru-${i}`).send({ type: 'cart.add' });
    await eventually(() => node!.sharding.region.activeCount('cart') === 20);
    expect(
      node!.node.transport.system.metrics.value('doyen_sharding_passivations_total', {
        type: 'cart',
        reason: 'cap',
      }),
    ).toBe(0);
  });
});

describe('sharding log events', () => {
  it('closing the region (a node downed and restarted in place, or stopping) logs a stop line per running entity', async () => {
    const { node, lines } = await startLoggedShardingNode(nodes, 'debug');
    const carts = node.sharding.register('cart', cartLogic(new Map()));
    node.partitions.adopt(tableOver([node]));
    const ids = Array.from({ length: 12 }, (_, i) => `closed-${i}`);
    for (const id of ids) carts.ref(id).send({ type: 'cart.add' });
    await eventually(() => node.sharding.region.activeCount('cart') === ids.length, { what: '12 active' });
    const stops = () => lines.filter((l) => l.event === 'sharding.passivated');
    expect(stops()).toEqual([]);
    node.sharding.stop();
    expect(node.sharding.region.activeCount('cart')).toBe(0);
    // the overlap checkers end an activation at its stop line: without one it lives on in the
    // checker until the process dies (a node downed and restarted in place lives on)
    await eventually(() => stops().length >= ids.length, { what: 'a stop line per entity' });
    expect(
      stops()
        .map((l) => l.entityId)
        .sort(),
    ).toEqual([...ids].sort());
    for (const l of stops()) expect(l.reason).toBe('stopped');
  });

  it('a partition stopped as a whole (a hand-off) writes one line for all its entities, read back per entity', async () => {
    const { node, lines } = await startLoggedShardingNode(nodes, 'debug');
    const carts = node.sharding.register('cart', cartLogic(new Map()));
    node.partitions.adopt(tableOver([node]));
    const p = node.partitions.partitionOf('pp-0');
    const ids = Array.from({ length: 400 }, (_, i) => `pp-${i}`)
      .filter((id) => node.partitions.partitionOf(id) === p)
      .slice(0, 6);
    expect(ids.length).toBeGreaterThan(2);
    for (const id of ids) carts.ref(id).send({ type: 'cart.add' });
    await eventually(() => node.sharding.region.activeCount('cart') === ids.length, { what: 'active' });
    node.sharding.region.drain(p);
    await eventually(() => lines.some((l) => l.event === PARTITION_PASSIVATED_EVENT), { what: 'the line' });
    const batch = lines.filter((l) => l.event === PARTITION_PASSIVATED_EVENT);
    expect(batch).toHaveLength(1);
    expect(lines.filter((l) => l.event === PASSIVATED_EVENT)).toEqual([]);
    expect(batch[0]).toMatchObject({ entityType: 'cart', partition: p, reason: 'hand-off' });
    // read per entity: the stops each entity would have logged alone, with its own activation
    const activationOf = new Map(
      lines.filter((l) => l.event === ACTIVATED_EVENT).map((l) => [l.entityId, l.activation]),
    );
    const stops = perEntityLines(batch[0]!);
    expect(stops.map((l) => l.entityId).sort()).toEqual([...ids].sort());
    for (const stop of stops)
      expect(stop).toMatchObject({
        event: PASSIVATED_EVENT,
        partition: p,
        reason: 'hand-off',
        incarnation: node.node.transport.system.node.uid,
        activation: activationOf.get(stop.entityId),
        time: batch[0]!.time,
      });
  });

  it('activated and passivated lines carry entity id, partition, table version, incarnation and activation', async () => {
    const { node, lines } = await startLoggedShardingNode(nodes, 'debug');
    const carts = node.sharding.register('cart', cartLogic(new Map()), { passivateAfterMs: 50 });
    const table = tableOver([node]);
    node.partitions.adopt(table);
    carts.ref('logged').send({ type: 'cart.add' });
    await eventually(() => lines.some((l) => l.event === 'sharding.passivated'), { what: 'passivated line' });
    const activated = lines.find((l) => l.event === 'sharding.activated')!;
    const passivated = lines.find((l) => l.event === 'sharding.passivated')!;
    const expected = {
      entityType: 'cart',
      entityId: 'logged',
      partition: node.partitions.partitionOf('logged'),
      version: table.version,
      incarnation: node.node.transport.system.node.uid,
    };
    expect(activated).toMatchObject({ ...expected, restored: false });
    expect(passivated).toMatchObject({ ...expected, reason: 'idle', activation: activated.activation });
    expect(typeof activated.node).toBe('string');
    expect(lines.find((l) => l.event === 'sharding.cargo-restored')).toMatchObject({
      snapshots: 0,
      forwarded: 0,
    });
  });
});
