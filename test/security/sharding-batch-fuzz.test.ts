// A member's `sharding.batch` is checked entry by entry in the receiving region (its schema checks
// only the layout). Fuzzed entries from a real peer: the region never throws, refuses what is
// malformed alone, and delivers the well-formed entry each batch ends with.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type Message, nodeOfKey } from '../../packages/core/src/index.js';
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
const RUNS = 150;
const COUNTED = 'fz-counted';

/** A slot as a peer could fill it: right-looking values, wrong types, refs-free plain data. */
const slot = fc.oneof(
  fc.integer({ min: -2, max: 20 }),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.record({ type: fc.oneof(fc.constant('cart.add'), fc.string({ maxLength: 10 })), by: fc.anything() }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 4 }),
);
const entry = fc.tuple(slot, slot, slot, slot, slot, slot);

describe('sharding.batch entries from the network (fuzzed)', () => {
  it('each malformed entry is refused alone; the well-formed last entry of every batch is delivered', async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const starts = new Map<string, number>();
    for (const n of [a!, b!]) n.sharding.register('cart', cartLogic(starts));
    const table = tableOver([a!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    const regionOfA = b!.node.transport.system.remoteRef(nodeOfKey(a!.key), REGION_PATH);
    const good = [0, COUNTED, partitionOf(COUNTED, TEST_PARTITIONS), 0, { type: 'cart.add' }, null];
    const batches = fc.sample(fc.array(entry, { minLength: 1, maxLength: 12 }), { numRuns: RUNS, seed: 29 });
    const entityTypes = fc.sample(fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }), {
      numRuns: RUNS,
      seed: 7,
    });
    for (const [i, fuzzed] of batches.entries()) {
      const entries = [...fuzzed.flat(), ...good];
      regionOfA.send({
        type: 'sharding.batch',
        version: 1,
        // the counted entry's type is index 0
        entityTypes: ['cart', ...entityTypes[i]!],
        entries,
      } as Message);
    }
    // positive control: every batch reached A's region (its last entry counted once per batch)
    await eventually(async () => (await countOf(a!.sharding.ref('cart', COUNTED))) === RUNS, {
      what: `${RUNS} good entries`,
      timeoutMs: 20_000,
    });
    expect(starts.get(COUNTED)).toBe(1);
    const refused = a!.node.transport.system.metrics.total('doyen_sharding_dropped_messages_total');
    expect(refused).toBeGreaterThan(RUNS / 2);
    // A still routes and runs entities as before
    a!.sharding.ref('cart', 'after').send({ type: 'cart.add' });
    expect(await countOf(a!.sharding.ref('cart', 'after'))).toBe(1);
  });
});
