import { afterEach, describe, expect, it } from 'vitest';
import { type DeadLetter, type Message, nodeOfKey, read, schema } from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import {
  InvalidEntityIdError,
  MAX_ENTITY_ID_BYTES,
  REGION_PATH,
  UnknownEntityTypeError,
  UnregisteredEntityMessageError,
} from '../../packages/sharding/src/index.js';
import {
  cartLogic,
  countOf,
  type ShardingNode,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  TEST_PARTITIONS,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

const MESSAGES = ['cart.add', 'cart.get'];

/** An envelope as a peer could send it, for the partition the id really hashes to unless told. */
function envelope(entityType: string, entityId: string, payload: Message, partition?: number) {
  return {
    type: 'sharding.envelope',
    entityType,
    entityId,
    partition: partition ?? partitionOf(entityId, TEST_PARTITIONS),
    version: 1,
    hops: 0,
    payload,
  } as Message;
}

async function twoNodes(): Promise<{ a: ShardingNode; b: ShardingNode; starts: Map<string, number> }> {
  const [a, b] = await startShardingCluster(2, nodes);
  const starts = new Map<string, number>();
  for (const n of [a!, b!]) n.sharding.register('cart', cartLogic(starts), { messages: MESSAGES });
  // every partition on A: B's envelopes all go there
  const table = tableOver([a!]);
  for (const n of [a!, b!]) n.partitions.adopt(table);
  return { a: a!, b: b!, starts };
}

describe('bad input to sharding', () => {
  it('local callers get typed errors: unknown type, id over the limit, message type not registered', async () => {
    const { a, starts } = await twoNodes();
    expect(() => a.sharding.ref('nope', 'x')).toThrow(UnknownEntityTypeError);
    expect(() => a.sharding.ref('cart', '')).toThrow(InvalidEntityIdError);
    expect(() => a.sharding.ref('cart', 'x'.repeat(MAX_ENTITY_ID_BYTES + 1))).toThrow(InvalidEntityIdError);
    // the limit is in UTF-8 bytes: 86 euro signs are 258 bytes, 85 are 255
    expect(() => a.sharding.ref('cart', '€'.repeat(86))).toThrow(/256 bytes/);
    const atLimit = a.sharding.ref('cart', 'x'.repeat(MAX_ENTITY_ID_BYTES));
    const euro = a.sharding.ref('cart', '€'.repeat(85));
    const ref = a.sharding.ref('cart', 'c1');
    expect(() => ref.send({ type: 'cart.explode' } as never)).toThrow(UnregisteredEntityMessageError);
    await expect(ref.ask(() => ({ type: 'cart.explode' }) as never)).rejects.toBeInstanceOf(
      UnregisteredEntityMessageError,
    );
    // positive control: the same refs with registered messages work
    for (const r of [ref, atLimit, euro]) r.send({ type: 'cart.add' });
    expect(await countOf(ref)).toBe(1);
    expect(await countOf(atLimit)).toBe(1);
    expect(await countOf(euro)).toBe(1);
    expect(starts.get('c1')).toBe(1);
  });

  it('envelopes from another node: each bad one is a logged dead letter with a reason, never a crash or a second activation', async () => {
    const { a, b, starts } = await twoNodes();
    const dead: DeadLetter[] = [];
    a.node.transport.system.deadLetters.subscribe((l) => dead.push(l));
    const regionOfA = b.node.transport.system.remoteRef(nodeOfKey(a.key), REGION_PATH);
    // the entity runs once
    b.sharding.ref('cart', 'c1').send({ type: 'cart.add' });
    expect(await countOf(b.sharding.ref('cart', 'c1'))).toBe(1);
    regionOfA.send(envelope('nope', 'c1', { type: 'cart.add' }));
    regionOfA.send(envelope('cart', 'é'.repeat(200), { type: 'cart.add' }));
    regionOfA.send(envelope('cart', 'c1', { type: 'cart.explode' }));
    regionOfA.send(
      envelope(
        'cart',
        'c1',
        { type: 'cart.add' },
        (partitionOf('c1', TEST_PARTITIONS) + 1) % TEST_PARTITIONS,
      ),
    );
    // positive control: a well-formed envelope from the same peer is delivered
    regionOfA.send(envelope('cart', 'c1', { type: 'cart.add', by: 10 } as Message));
    await eventually(async () => (await countOf(b.sharding.ref('cart', 'c1'))) === 11, {
      what: 'the good envelope',
    });
    const refused = dead.filter((l) => l.reason === 'sharding-refused');
    expect(refused.map((l) => l.message.type).sort()).toEqual([
      'cart.add',
      'cart.add',
      'cart.add',
      'cart.explode',
    ]);
    const metrics = a.node.transport.system.metrics;
    const dropped = (reason: string, type = 'cart') =>
      metrics.value('doyen_sharding_dropped_messages_total', { type, reason });
    expect(dropped('unknown-entity-type', 'nope')).toBe(1);
    expect(dropped('invalid-entity-id')).toBe(1);
    expect(dropped('unregistered-message')).toBe(1);
    expect(dropped('wrong-partition')).toBe(1);
    expect(starts.get('c1')).toBe(1);
    expect(a.sharding.region.activeCount('cart')).toBe(1);
  });

  it('a region that does not own the partition forwards, at most MAX_HOPS times (no loops)', async () => {
    const { a, b, starts } = await twoNodes();
    const dead: DeadLetter[] = [];
    b.node.transport.system.deadLetters.subscribe((l) => dead.push(l));
    // sent to B, which does not own c1's partition: B forwards to A (its table's owner)
    const regionOfB = a.node.transport.system.remoteRef(nodeOfKey(b.key), REGION_PATH);
    regionOfB.send({ ...envelope('cart', 'c1', { type: 'cart.add' }), hops: 2 } as Message);
    await eventually(async () => (await countOf(a.sharding.ref('cart', 'c1'))) === 1, {
      what: 'forwarded once',
    });
    regionOfB.send({ ...envelope('cart', 'c1', { type: 'cart.add' }), hops: 3 } as Message);
    await eventually(() => dead.some((l) => l.reason === 'sharding-refused'), { what: 'the hop cap' });
    expect(
      b.node.transport.system.metrics.value('doyen_sharding_dropped_messages_total', {
        type: 'cart',
        reason: 'hop-limit',
      }),
    ).toBe(1);
    expect(await countOf(a.sharding.ref('cart', 'c1'))).toBe(1);
    expect(starts.get('c1')).toBe(1);
  });

  it('a payload whose type the app registered with a schema is rebuilt from it; one that fails it is refused', async () => {
    const { a, b, starts } = await twoNodes();
    // the app's schema for cart.add: `by` must be a count (the entity would add a string otherwise)
    a.node.transport.system.messageTypes.register(
      'cart.add',
      schema<{ type: 'cart.add'; by?: number }>({ by: read.optional(read.count) }, undefined, 'member'),
    );
    const regionOfA = b.node.transport.system.remoteRef(nodeOfKey(a.key), REGION_PATH);
    regionOfA.send(envelope('cart', 'c2', { type: 'cart.add', by: 'lots' } as Message));
    // positive control: the same payload with a count passes
    regionOfA.send(envelope('cart', 'c2', { type: 'cart.add', by: 2 } as Message));
    await eventually(async () => (await countOf(b.sharding.ref('cart', 'c2'))) === 2, {
      what: 'the valid one',
    });
    expect(
      a.node.transport.system.metrics.value('doyen_sharding_dropped_messages_total', {
        type: 'cart',
        reason: 'invalid-message',
      }),
    ).toBe(1);
    expect(starts.get('c2')).toBe(1);
  });
});
