// The sharded tell to many entities, cheaper per message (issue 29, session 39): an entity ref's
// type and id are checked on its first send only, a batch's entries are made at the last batch's
// size, and the receiving region looks a payload type's admission up once per run of that type.
// What must hold: every later send still has its message type checked (an invalid id gets no ref),
// a batch carries exactly its messages in order whatever the last one's size, and a payload type
// registered again (with a schema) is checked by the new registration from the next message on.
// Each with a control.
import { afterEach, describe, expect, it } from 'vitest';
import { FieldError, type Message, nodeOfKey, read, schema } from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import {
  InvalidEntityIdError,
  REGION_PATH,
  UnregisteredEntityMessageError,
} from '../../packages/sharding/src/index.js';
import { EntityBatches } from '../../packages/sharding/src/region/entity-batches.js';
import { BATCH_SLOTS, type EntityBatch } from '../../packages/sharding/src/region/region-messages.js';
import {
  cartLogic,
  countOf,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  TEST_PARTITIONS,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

describe('entity batches made at the last batch’s size', () => {
  it('a batch carries exactly its messages, in order, smaller or larger than the last one', async () => {
    const tell = { type: 't' } as Message;
    const sent: EntityBatch[] = [];
    const batches = new EntityBatches(
      (_, batch) => sent.push(batch),
      () => 1,
    );
    const ids = (batch: EntityBatch) => batch.entries.filter((_, i) => i % BATCH_SLOTS === 1);
    for (const count of [10, 3, 1, 12]) {
      for (let i = 0; i < count; i++) batches.add('a', 'cart', `c${count}-${i}`, 0, 0, tell, undefined);
      await Promise.resolve();
      const batch = sent.at(-1)!;
      // no empty slot travels: a smaller batch than the last is trimmed to its messages
      expect(batch.entries).toHaveLength(count * BATCH_SLOTS);
      expect(batch.entries.includes(undefined)).toBe(false);
      expect(ids(batch)).toEqual(Array.from({ length: count }, (_, i) => `c${count}-${i}`));
    }
    // control: the pending count follows the messages added, not the slots made
    batches.add('a', 'cart', 'p', 0, 0, tell, undefined);
    expect(batches.size).toBe(1);
    await Promise.resolve();
    expect(sent).toHaveLength(5);
  });
});

describe('an entity ref checked on its first send', () => {
  async function twoNodes() {
    const [a, b] = await startShardingCluster(2, nodes);
    const starts = new Map<string, number>();
    const options = { messages: ['cart.add', 'cart.get'] };
    const carts = [a!, b!].map((n) => n.sharding.register('cart', cartLogic(starts), options));
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    return { a: a!, b: b!, fromB: carts[1]! };
  }

  it('every later send still has its message type checked', async () => {
    const { fromB } = await twoNodes();
    const ref = fromB.ref('m1');
    // control: the ref's first sends pass (its type and id are checked and remembered)
    ref.send({ type: 'cart.add', by: 2 } as never);
    ref.send({ type: 'cart.add', by: 3 } as never);
    expect(() => ref.send({ type: 'cart.nope' } as never)).toThrow(UnregisteredEntityMessageError);
    ref.send({ type: 'cart.add', by: 5 } as never);
    await eventually(async () => (await countOf(ref)) === 10, { what: 'the good sends' });
    // an id the checks refuse never gets a ref to remember anything on
    expect(() => fromB.ref('')).toThrow(InvalidEntityIdError);
  });
});

describe('a payload type’s admission looked up once per run of it', () => {
  it('a type registered again with a schema checks the next entries by the new registration', async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const starts = new Map<string, number>();
    for (const n of [a!, b!]) n.sharding.register('cart', cartLogic(starts));
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    const system = a!.node.transport.system;
    const p = partitionOf('r1', TEST_PARTITIONS);
    const regionOfA = b!.node.transport.system.remoteRef(nodeOfKey(a!.key), REGION_PATH);
    const batch = (...bys: unknown[]) =>
      regionOfA.send({
        type: 'sharding.batch',
        version: 1,
        entityTypes: ['cart'],
        entries: bys.flatMap((by) => [0, 'r1', p, 0, { type: 'cart.add', by }, null]),
      } as Message);
    const ref = a!.sharding.ref('cart', 'r1');
    // control: before the schema, a `by` of 100 passes (cart.add as first registered)
    batch(1, 100);
    await eventually(async () => (await countOf(ref)) === 101, { what: 'the first batch' });
    // now `by` must be at most 10: the same payload type, registered again
    system.messageTypes.register(
      'cart.add',
      schema<{ type: 'cart.add'; by?: number }>(
        {
          by: read.optional((v, path) => {
            const n = read.count(v, path);
            if (n > 10) throw new FieldError(path, 'over 10');
            return n;
          }),
        },
        undefined,
        'member',
      ),
    );
    batch(2, 100, 4);
    await eventually(async () => (await countOf(ref)) === 107, { what: 'the second batch' });
    const dropped = system.metrics.value('doyen_sharding_dropped_messages_total', {
      type: 'cart',
      reason: 'invalid-message',
    });
    expect(dropped).toBe(1);
  });
});
