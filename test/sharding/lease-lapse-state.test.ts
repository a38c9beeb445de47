import { afterEach, describe, expect, it } from 'vitest';
import { allocate, PartitionService, type PartitionTable } from '../../packages/partitions/src/index.js';
import type { Sharding } from '../../packages/sharding/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { FakeOwnerLeases } from '../support/fake-owner-leases.js';
import {
  type CountReply,
  cartLogic,
  countOf,
  shardingWithLeases,
  TEST_PARTITIONS,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * A LAPSE of the owner lease (lost, not fenced) stops a node's entities at once, but the keeper
 * keeps the partitions' tokens there: nobody else may run them, and the lease may come back. The
 * region keeps each stopped entity's persisted snapshot (types with `handOverSnapshot`) with its
 * partition, so that re-activation after the lease returns, or a later hand-off, resumes every
 * entity where it stopped. The real partition keeper drives the runtime here; the owner lease is
 * the test's (FakeOwnerLeases), so the lapse comes exactly when the test says. Positive control:
 * a type without `handOverSnapshot` keeps nothing, and its counts restart from zero.
 */

interface LapsingNode {
  readonly node: ClusterNode;
  readonly partitions: PartitionService;
  readonly sharding: Sharding;
  readonly leases: FakeOwnerLeases;
  readonly key: string;
}

const nodes: LapsingNode[] = [];
afterEach(async () => {
  const closing = nodes.splice(0);
  for (const n of closing) n.sharding.stop();
  await Promise.all(closing.map((n) => n.node.transport.close(0)));
});

async function startLapsingNode(port: number, seedPort: number): Promise<LapsingNode> {
  const node = await startClusterNode(port, [{ host: '127.0.0.1', port: seedPort }]);
  const system = node.transport.system;
  system.messageTypes.register(['cart.count']);
  const partitions = new PartitionService(system, node.cluster, TEST_PARTITIONS);
  const leases = new FakeOwnerLeases();
  const sharding = shardingWithLeases(node, partitions, leases);
  const started = { node, partitions, sharding, leases, key: node.cluster.self.key };
  nodes.push(started);
  await node.cluster.whenUp();
  return started;
}

/** A table over `over` (the allocator's optimal moves from `previous`). */
const tableOver = (over: readonly LapsingNode[], previous?: PartitionTable): PartitionTable =>
  allocate(
    previous,
    over.map((n) => ({ key: n.key, roles: [] })),
    { partitionCount: TEST_PARTITIONS },
  );

const IDS = Array.from({ length: 24 }, (_, i) => `cart-${i}`);

async function addEach(carts: { ref(id: string): { send(m: { type: 'cart.add' }): void } }, times: number) {
  for (let r = 0; r < times; r++) for (const id of IDS) carts.ref(id).send({ type: 'cart.add' });
}

const allActive = (n: LapsingNode, count: number) =>
  eventually(() => n.sharding.region.activePartitions().length === count, {
    what: `${count} partitions active at ${n.key}`,
  });

/** One node: 5 adds, a lapse, 3 adds sent while lapsed (held), the lease back: the counts. */
async function lapseAndReturn(handOverSnapshot: boolean): Promise<Map<string, number>> {
  const [port] = await freePorts(1);
  const a = await startLapsingNode(port!, port!);
  const carts = a.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot });
  a.partitions.adopt(tableOver([a]));
  await allActive(a, TEST_PARTITIONS);
  await addEach(carts, 5);
  await eventually(async () => (await countOf(carts.ref(IDS[0]!))) === 5, { what: 'first adds counted' });
  for (const id of IDS) expect(await countOf(carts.ref(id))).toBe(5);

  a.leases.hold(false);
  await allActive(a, 0);
  expect(a.sharding.region.activeCount('cart')).toBe(0);
  await addEach(carts, 3);
  a.leases.hold(true);
  await allActive(a, TEST_PARTITIONS);
  const counts = new Map<string, number>();
  for (const id of IDS) counts.set(id, await countOf(carts.ref(id)));
  return counts;
}

/** A lapse at A while B joins and the table moves half of A's partitions to B; then A's lease returns. */
async function lapseThenHandOff(handOverSnapshot: boolean): Promise<Map<string, number>> {
  const ports = await freePorts(2);
  const a = await startLapsingNode(ports[0]!, ports[0]!);
  const cartsA = a.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot });
  const v1: PartitionTable = tableOver([a]);
  a.partitions.adopt(v1);
  await allActive(a, TEST_PARTITIONS);
  await addEach(cartsA, 4);
  for (const id of IDS) await eventually(async () => (await countOf(cartsA.ref(id))) === 4, { what: id });

  a.leases.hold(false);
  await allActive(a, 0);
  const b = await startLapsingNode(ports[1]!, ports[0]!);
  const cartsB = b.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot });
  const v2 = tableOver([a, b], v1);
  for (const n of [a, b]) n.partitions.adopt(v2);
  const atB = v2.owners.filter((o) => o === b.key).length;
  expect(atB).toBeGreaterThan(0);
  await addEach(cartsB, 2);
  // the tokens stay at A while it is lapsed: B cannot activate what moved to it
  await new Promise((r) => setTimeout(r, 300));
  expect(b.sharding.region.activePartitions()).toEqual([]);

  a.leases.hold(true);
  await allActive(b, atB);
  await allActive(a, TEST_PARTITIONS - atB);
  const counts = new Map<string, number>();
  for (const id of IDS) counts.set(id, await countOf(cartsB.ref(id)));
  return counts;
}

describe('a hand-off is counted unconfirmed until its receiver confirms it (a leaving node waits for none)', () => {
  it('stays counted while its receiver is gone, and goes once the receiver is fenced (hand-off abandoned)', async () => {
    const ports = await freePorts(2);
    const a = await startLapsingNode(ports[0]!, ports[0]!);
    a.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot: true });
    const v1 = tableOver([a]);
    a.partitions.adopt(v1);
    await allActive(a, TEST_PARTITIONS);
    // A lapses (it keeps its tokens) while B joins and the table moves partitions to B
    a.leases.hold(false);
    await allActive(a, 0);
    const b = await startLapsingNode(ports[1]!, ports[0]!);
    b.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot: true });
    const v2 = tableOver([a, b], v1);
    for (const n of [a, b]) n.partitions.adopt(v2);
    await new Promise((r) => setTimeout(r, 300));
    // B is gone before A may hand off: A's hand-offs to it can never be confirmed
    nodes.splice(nodes.indexOf(b), 1);
    b.sharding.stop();
    await b.node.transport.close(0);
    expect(a.sharding.unconfirmedHandOffs()).toBe(0);
    a.leases.hold(true);
    const moved = v2.owners.filter((o) => o === b.key).length;
    await eventually(() => a.sharding.unconfirmedHandOffs() === moved, {
      what: `${moved} hand-offs to the departed B unconfirmed`,
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(a.sharding.unconfirmedHandOffs()).toBe(moved);
    // B fenced: its hand-offs are abandoned (its partitions are recreated behind the fence)
    a.leases.completeFence(b.key);
    await eventually(() => a.sharding.unconfirmedHandOffs() === 0, { what: 'hand-offs abandoned' });
  }, 30_000);
});

describe('a lapse of the owner lease keeps entity state with the partition', () => {
  it('re-activation after the lease returns resumes every entity from its snapshot: counts exact', async () => {
    const counts = await lapseAndReturn(true);
    for (const id of IDS) expect(counts.get(id), id).toBe(8);
  }, 30_000);

  it('positive control: without handOverSnapshot nothing is kept, and the counts restart from zero', async () => {
    const counts = await lapseAndReturn(false);
    for (const id of IDS) expect(counts.get(id), id).toBe(3);
  }, 30_000);

  it('a hand-off after the lease returns carries what the lapse kept: counts exact on the new owner too', async () => {
    const counts = await lapseThenHandOff(true);
    for (const id of IDS) expect(counts.get(id), id).toBe(6);
  }, 30_000);

  it('positive control: without handOverSnapshot the moved and the staying entities restart from zero', async () => {
    const counts = await lapseThenHandOff(false);
    for (const id of IDS) expect(counts.get(id), id).toBe(2);
  }, 30_000);
});

/**
 * What the entities had ACCEPTED but not yet processed when the lease lapsed (their mailboxes)
 * is held with the partition, ahead of what arrives later, and delivered after the snapshots when
 * it resumes: a lapse loses nothing (it used to dead-letter those messages, `actor-stopped`: the
 * lost asks of the sharding bench's rolling restart on a starved machine). The adds are sent and
 * the partitions stopped in one synchronous turn, so every mailbox is non-empty at the stop (the
 * region is driven as the keeper drives it on a lapse; the keeper then hears the lapse too).
 */
describe('a lapse of the owner lease keeps what the entities had not yet processed', () => {
  const deadLettered = (n: LapsingNode) =>
    n.node.transport.system.metrics.value('doyen_dead_letters_total', { reason: 'actor-stopped' }) ?? 0;

  type Carts = ReturnType<Sharding['register']>;
  /** `times` adds to every cart, numbered per cart from `seq` (one sender, 't'): the cart checks their order. */
  const addNumbered = (carts: Carts, seq: number, times: number) => {
    for (let k = 0; k < times; k++)
      for (const id of IDS) carts.ref(id).send({ type: 'cart.add', from: 't', seq: seq + k });
  };
  const stateOf = (carts: Carts, id: string) =>
    carts.ref(id).ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));

  /** 5 adds processed, then 3 more queued and the partitions stopped at once for `reason`. */
  async function stopWithQueued(reason: 'lease-lost' | 'stopped') {
    const [port] = await freePorts(1);
    const a = await startLapsingNode(port!, port!);
    const carts = a.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot: true });
    a.partitions.adopt(tableOver([a]));
    await allActive(a, TEST_PARTITIONS);
    addNumbered(carts, 1, 5);
    for (const id of IDS) await eventually(async () => (await countOf(carts.ref(id))) === 5, { what: id });
    const before = deadLettered(a);
    // one turn (no await: the dispatcher runs in microtasks): queued in the entities' mailboxes,
    // then stopped before any is processed
    addNumbered(carts, 6, 3);
    for (const p of a.sharding.region.activePartitions()) a.sharding.region.deactivate(p, reason);
    return { a, carts, dropped: () => deadLettered(a) - before };
  }

  it('held in order, ahead of what comes during the lapse, delivered after the snapshots when the lease returns', async () => {
    const { a, carts, dropped } = await stopWithQueued('lease-lost');
    a.leases.hold(false);
    expect(a.sharding.region.bufferedCount()).toBe(3 * IDS.length);
    expect(dropped()).toBe(0);
    // sent during the lapse: held behind the 3 the entities had accepted
    addNumbered(carts, 9, 2);
    a.leases.hold(true);
    await allActive(a, TEST_PARTITIONS);
    for (const id of IDS) {
      const state = await stateOf(carts, id);
      expect({ count: state.count, outOfOrder: state.outOfOrder }, id).toEqual({ count: 10, outOfOrder: 0 });
    }
    expect(dropped()).toBe(0);
  }, 30_000);

  it('a lapse during a drain: what the entities accepted goes ahead of what the drain kept since', async () => {
    const [port] = await freePorts(1);
    const a = await startLapsingNode(port!, port!);
    const carts = a.sharding.register('cart', cartLogic(new Map()), { handOverSnapshot: true });
    a.partitions.adopt(tableOver([a]));
    await allActive(a, TEST_PARTITIONS);
    const region = a.sharding.region;
    const partitions = region.activePartitions();
    // one turn: 3 queued in the mailboxes, a drain begins (it waits for them), 2 more kept by the
    // drain, then the lease lapses
    addNumbered(carts, 1, 3);
    for (const p of partitions) region.drain(p);
    addNumbered(carts, 4, 2);
    for (const p of partitions) region.deactivate(p, 'lease-lost');
    a.leases.hold(false);
    expect(region.bufferedCount()).toBe(5 * IDS.length);
    a.leases.hold(true);
    await allActive(a, TEST_PARTITIONS);
    for (const id of IDS) {
      const state = await stateOf(carts, id);
      expect({ count: state.count, outOfOrder: state.outOfOrder }, id).toEqual({ count: 5, outOfOrder: 0 });
    }
  }, 30_000);

  it('fenced after the lapse (it never resumes): what it held is dropped as counted dead letters, not kept unseen', async () => {
    const { a, dropped } = await stopWithQueued('lease-lost');
    expect(a.sharding.region.bufferedCount()).toBe(3 * IDS.length);
    a.sharding.region.forgetLapsed();
    expect(a.sharding.region.bufferedCount()).toBe(0);
    expect(dropped()).toBe(3 * IDS.length);
    const metrics = a.node.transport.system.metrics;
    expect(metrics.value('doyen_sharding_dropped_messages_total', { type: 'cart', reason: 'fenced' })).toBe(
      3 * IDS.length,
    );
  }, 30_000);

  it('positive control: a stop that is not a lapse drops the same queued messages (actor-stopped)', async () => {
    const { a, dropped } = await stopWithQueued('stopped');
    expect(a.sharding.region.bufferedCount()).toBe(0);
    expect(dropped()).toBe(3 * IDS.length);
  }, 30_000);
});
