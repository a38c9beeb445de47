// Sharded messages to another node travel as batches (`sharding.batch`): the wire's per-message
// work is paid once per batch. What must hold: per-sender order across batched and lone
// (unbatchable) payloads, bounded batches, a new table flushing what the old one routed, and each
// entry of a batch from the network checked alone.
import { afterEach, describe, expect, it } from 'vitest';
import { type DeadLetter, type Message, nodeOfKey } from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { REGION_PATH } from '../../packages/sharding/src/index.js';
import { registerKeeperMessages } from '../../packages/sharding/src/partition-keeper/keeper-messages.js';
import { batchedSize, EntityBatches } from '../../packages/sharding/src/region/entity-batches.js';
import {
  BATCH_SLOTS,
  type EntityBatch,
  MAX_BATCH_MESSAGES,
} from '../../packages/sharding/src/region/region-messages.js';
import {
  type CountReply,
  cartLogic,
  countOf,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  TEST_PARTITIONS,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

describe('entity batches (the sender side)', () => {
  it('batches only flat payloads: primitive fields and refs, small; anything else goes alone', () => {
    expect(
      batchedSize({ type: 'cart.add', by: 2, from: 'me', ok: true, none: null } as Message),
    ).toBeGreaterThan(0);
    expect(batchedSize({ type: 'cart.add', nested: { a: 1 } } as Message)).toBe(-1);
    expect(batchedSize({ type: 'cart.add', list: [1] } as Message)).toBe(-1);
    expect(batchedSize({ type: 'cart.add', big: 'x'.repeat(5000) } as Message)).toBe(-1);
    expect(batchedSize({ type: 'cart.add', n: 1n } as unknown as Message)).toBe(-1);
    expect(batchedSize(Object.assign(Object.create(null), { type: 'cart.add' }) as Message)).toBe(-1);
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, i]));
    expect(batchedSize({ type: 'cart.add', ...many } as Message)).toBe(-1);
  });

  it('sends at the end of the task, at once when full, one batch per owner; a new version starts a new batch', async () => {
    // a payload small enough for the count to fill a batch before the bytes do
    const tell = { type: 't' } as Message;
    const sent: { owner: string; batch: EntityBatch }[] = [];
    let version = 1;
    const batches = new EntityBatches(
      (owner, batch) => sent.push({ owner, batch }),
      () => version,
    );
    for (let i = 0; i < MAX_BATCH_MESSAGES + 3; i++)
      expect(batches.add('a', 'cart', `c${i}`, 0, 0, tell, undefined)).toBe(true);
    batches.add('b', 'cart', 'x', 1, 0, tell, undefined);
    // the full one left at once; the rest waits for the end of the task
    expect(sent.map((s) => [s.owner, s.batch.entries.length / BATCH_SLOTS])).toEqual([
      ['a', MAX_BATCH_MESSAGES],
    ]);
    expect(batches.size).toBe(4);
    await Promise.resolve();
    expect(sent.map((s) => [s.owner, s.batch.entries.length / BATCH_SLOTS])).toEqual([
      ['a', MAX_BATCH_MESSAGES],
      ['a', 3],
      ['b', 1],
    ]);
    // in order within a batch: ids as added
    expect(sent[1]!.batch.entries.filter((_, i) => i % BATCH_SLOTS === 1)).toEqual([
      `c${MAX_BATCH_MESSAGES}`,
      `c${MAX_BATCH_MESSAGES + 1}`,
      `c${MAX_BATCH_MESSAGES + 2}`,
    ]);
    batches.add('a', 'cart', 'v1', 0, 0, tell, undefined);
    version = 2;
    batches.add('a', 'cart', 'v2', 0, 0, tell, undefined);
    expect(sent.at(-1)!.batch.version).toBe(1);
    await Promise.resolve();
    expect(sent.at(-1)!.batch).toMatchObject({ version: 2, entries: [0, 'v2', 0, 0, tell, null] });
    // bounded by bytes too: payloads of ~1.5 KiB leave in batches of a few
    sent.length = 0;
    const large = { type: 'cart.add', note: 'x'.repeat(500) } as Message;
    for (let i = 0; i < 40; i++) batches.add('a', 'cart', `l${i}`, 0, 0, large, undefined);
    expect(sent.length).toBeGreaterThan(2);
    expect(Math.max(...sent.map((s) => s.batch.entries.length / BATCH_SLOTS))).toBeLessThan(20);
    await Promise.resolve();
  });
});

describe('entity batches between real nodes', () => {
  async function twoNodes() {
    const [a, b] = await startShardingCluster(2, nodes);
    const starts = new Map<string, number>();
    const carts = [a!, b!].map((n) => n.sharding.register('cart', cartLogic(starts)));
    // every partition on A: B only routes
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    return { a: a!, b: b!, starts, fromB: carts[1]! };
  }

  it('batched and lone payloads from one sender arrive in its order, each counted once, one activation per id', async () => {
    const { b, starts, fromB } = await twoNodes();
    const ids = Array.from({ length: 40 }, (_, i) => `o-${i}`);
    const sends = 30;
    for (let seq = 1; seq <= sends; seq++)
      for (const id of ids) {
        // every third message is not batchable (a nested field): it must not overtake the batch
        const extra = seq % 3 === 0 ? { meta: { n: seq } } : {};
        fromB.ref(id).send({ type: 'cart.add', from: 'b', seq, ...extra } as never);
      }
    for (const id of ids) {
      const reply = await fromB.ref(id).ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
      expect({ id, count: reply.count, outOfOrder: reply.outOfOrder }).toEqual({
        id,
        count: sends,
        outOfOrder: 0,
      });
    }
    expect([...starts.values()].every((n) => n === 1)).toBe(true);
    expect(starts.size).toBe(ids.length);
    // they went as batches: far fewer wire messages than sharded messages
    const sent = b.node.transport.system.metrics.total('doyen_wire_messages_sent_total');
    expect(sent).toBeLessThan((ids.length * sends) / 2);
  });

  it('a batch from the network: each malformed entry is refused alone, the others delivered in order', async () => {
    const { a, b, starts } = await twoNodes();
    const dead: DeadLetter[] = [];
    a.node.transport.system.deadLetters.subscribe((l) => dead.push(l));
    const regionOfA = b.node.transport.system.remoteRef(nodeOfKey(a.key), REGION_PATH);
    const p = partitionOf('k1', TEST_PARTITIONS);
    const good = (by: number) => [0, 'k1', p, 0, { type: 'cart.add', by }, null];
    const entries = [
      ...good(1),
      ...[7, 'k1', p, 0, { type: 'cart.add', by: 100 }, null], // no such type index
      ...[0, 42, p, 0, { type: 'cart.add', by: 100 }, null], // id not a string
      ...[0, 'k1', -1, 0, { type: 'cart.add', by: 100 }, null], // partition not a count
      ...[0, 'k1', p, 0.5, { type: 'cart.add', by: 100 }, null], // hops not a count
      ...[0, 'k1', p, 0, 'not a message', null], // payload not a message
      ...[0, 'k1', p, 0, { type: 'cart.add', by: 100 }, 'not a ref'], // sender not a ref
      ...[0, 'k1', (p + 1) % TEST_PARTITIONS, 0, { type: 'cart.add', by: 100 }, null], // wrong partition
      ...good(10),
    ];
    regionOfA.send({ type: 'sharding.batch', version: 1, entityTypes: ['cart'], entries } as Message);
    // positive control: the good entries of the same batch reach the entity, in order (1 then 10)
    await eventually(async () => (await countOf(a.sharding.ref('cart', 'k1'))) === 11, {
      what: 'the good entries',
    });
    const metrics = a.node.transport.system.metrics;
    const dropped = (reason: string, type = 'cart') =>
      metrics.value('doyen_sharding_dropped_messages_total', { type, reason });
    expect(dropped('invalid-message') + dropped('invalid-message', 'invalid')).toBe(6);
    expect(dropped('wrong-partition')).toBe(1);
    expect(dead.filter((l) => l.reason === 'sharding-refused')).toHaveLength(7);
    expect(starts.get('k1')).toBe(1);
  });

  it('a batch whose layout is wrong is refused whole by the wire; the same entries well laid out pass', async () => {
    const { a, b } = await twoNodes();
    const regionOfA = b.node.transport.system.remoteRef(nodeOfKey(a.key), REGION_PATH);
    const p = partitionOf('k2', TEST_PARTITIONS);
    const refusedBefore = a.node.transport.system.metrics.total('doyen_wire_rejected_total');
    // one slot short, then too many messages
    regionOfA.send({
      type: 'sharding.batch',
      version: 1,
      entityTypes: ['cart'],
      entries: [0, 'k2', p, 0, { type: 'cart.add', by: 100 }],
    } as Message);
    const tooMany = Array.from({ length: MAX_BATCH_MESSAGES + 1 }, () => [
      0,
      'k2',
      p,
      0,
      { type: 'cart.add', by: 100 },
      null,
    ]).flat();
    regionOfA.send({
      type: 'sharding.batch',
      version: 1,
      entityTypes: ['cart'],
      entries: tooMany,
    } as Message);
    // positive control: a well-formed batch on the same connection, after them
    regionOfA.send({
      type: 'sharding.batch',
      version: 1,
      entityTypes: ['cart'],
      entries: [0, 'k2', p, 0, { type: 'cart.add', by: 3 }, null],
    } as Message);
    await eventually(async () => (await countOf(a.sharding.ref('cart', 'k2'))) === 3, {
      what: 'the good batch',
    });
    expect(a.node.transport.system.metrics.total('doyen_wire_rejected_total') - refusedBefore).toBe(2);
  });

  it('a new table sends what is batched for the old one first (routed by the table it names)', async () => {
    const { a, b, fromB } = await twoNodes();
    fromB.ref('t1').send({ type: 'cart.add' });
    fromB.ref('t2').send({ type: 'cart.add' });
    // control: batched, waiting for the end of the task
    expect(b.sharding.region.batchedCount()).toBe(2);
    const next = { ...tableOver([a]), version: 99 };
    b.partitions.adopt(next);
    // sent at adoption, before routing follows the new table
    expect(b.sharding.region.batchedCount()).toBe(0);
    a.partitions.adopt(next);
    await eventually(async () => (await countOf(fromB.ref('t1'))) === 1, { what: 't1 counted' });
    expect(await countOf(fromB.ref('t2'))).toBe(1);
  });
  it('a drain marker leaves behind what is batched for its receiver, so it arrives after them', async () => {
    const { a, b, fromB } = await twoNodes();
    // the test's keepers are stubs: A takes the real marker type, as a keeper's node does
    registerKeeperMessages(a.node.transport.system.messageTypes);
    // at the marker's arrival: whether the message batched before it was delivered already
    const deliveredFirst: boolean[] = [];
    a.sharding.region.listen({
      regionDrained: () => {},
      received: () => deliveredFirst.push(a.sharding.region.isRunning('cart', 'm1')),
    });
    fromB.ref('m1').send({ type: 'cart.add' });
    expect(b.sharding.region.batchedCount()).toBe(1);
    b.sharding.region.sendMarker(a.key, { from: b.key, version: 1, active: [] });
    expect(b.sharding.region.batchedCount()).toBe(0);
    await eventually(() => deliveredFirst.length === 1, { what: 'the marker' });
    expect(deliveredFirst).toEqual([true]);
  });
});
