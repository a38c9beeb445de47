// The receiving region checks each entry of a batch with one lookup of its payload's admission and
// one of its entity type (session 37): what must still hold is every check those lookups feed —
// the app's schema rebuilt or refused per entry, an unknown entity type refused, the partition
// checked against the id — each refusal alone, the other entries delivered in order.
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DeadLetter,
  fromTransition,
  type Message,
  nodeOfKey,
  read,
  schema,
} from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { REGION_PATH } from '../../packages/sharding/src/index.js';
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

describe('a batch entry checked on the hot path', () => {
  it('the app schema, the entity type and the partition are each checked per entry; good entries go on in order', async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const starts = new Map<string, number>();
    for (const n of [a!, b!]) n.sharding.register('cart', cartLogic(starts));
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    const system = a!.node.transport.system;
    // the app's schema for cart.add on the receiver: `by` must be a count
    system.messageTypes.register(
      'cart.add',
      schema<{ type: 'cart.add'; by?: number }>({ by: read.optional(read.count) }, undefined, 'member'),
    );
    const dead: DeadLetter[] = [];
    system.deadLetters.subscribe((l) => dead.push(l));
    const p = partitionOf('h1', TEST_PARTITIONS);
    const entry = (by: unknown, typeIndex = 0, partition = p) => [
      typeIndex,
      'h1',
      partition,
      0,
      { type: 'cart.add', by },
      null,
    ];
    const entries = [
      ...entry(1),
      ...entry('lots'), // fails the app's schema
      ...entry(2),
      ...entry(100, 1), // entity type 'nope' is not registered
      ...entry(4),
      ...entry(1000, 0, (p + 1) % TEST_PARTITIONS), // not the id's partition
      ...entry(8),
    ];
    const regionOfA = b!.node.transport.system.remoteRef(nodeOfKey(a!.key), REGION_PATH);
    regionOfA.send({ type: 'sharding.batch', version: 1, entityTypes: ['cart', 'nope'], entries } as Message);
    // positive control: the good entries reach the entity (1 + 2 + 4 + 8), each refused one alone
    await eventually(async () => (await countOf(a!.sharding.ref('cart', 'h1'))) === 15, {
      what: 'the good entries',
    });
    const dropped = (type: string, reason: string) =>
      system.metrics.value('doyen_sharding_dropped_messages_total', { type, reason });
    expect(dropped('cart', 'invalid-message')).toBe(1);
    expect(dropped('nope', 'unknown-entity-type')).toBe(1);
    expect(dropped('cart', 'wrong-partition')).toBe(1);
    expect(dead.filter((l) => l.reason === 'sharding-refused')).toHaveLength(3);
    expect(starts.get('h1')).toBe(1);
  });

  it('an entry that passes the schema is rebuilt from it: a field the schema does not name is not delivered', async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const seen: Record<string, unknown>[] = [];
    const logic = fromTransition((n: number, e: Message) => {
      seen.push({ ...e });
      return n + 1;
    }, 0);
    for (const n of [a!, b!]) n.sharding.register('probe', logic);
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    a!.node.transport.system.messageTypes.register(
      'probe.hit',
      schema<{ type: 'probe.hit'; n: number }>({ n: read.count }, undefined, 'member'),
    );
    const p = partitionOf('q1', TEST_PARTITIONS);
    const regionOfA = b!.node.transport.system.remoteRef(nodeOfKey(a!.key), REGION_PATH);
    regionOfA.send({
      type: 'sharding.batch',
      version: 1,
      entityTypes: ['probe'],
      entries: [0, 'q1', p, 0, { type: 'probe.hit', n: 3, extra: 'smuggled' }, null],
    } as Message);
    await eventually(() => seen.length === 1, { what: 'the entry delivered' });
    expect(seen[0]).toEqual({ type: 'probe.hit', n: 3 });
  });
});
