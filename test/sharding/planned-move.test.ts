import { afterEach, describe, expect, it } from 'vitest';
import { movedPartitions } from '../../packages/partitions/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import {
  cartLogic,
  countOf,
  type ShardingNode,
  shardingNodesClosedAfterEach,
  startShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { TableKeepers } from '../support/table-keeper.js';

const nodes = shardingNodesClosedAfterEach(afterEach);
const tick = () => new Promise((r) => setTimeout(r, 5));

/**
 * A node joins a running two-node cluster under load: the new table moves partitions to it,
 * adopted node by node while every node keeps sending. Returns each entity's count and how many
 * adds were sent to it.
 */
async function joinUnderLoad(handOverSnapshot: boolean) {
  const keepers = new TableKeepers();
  const ports = await freePorts(3);
  const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
  const a = await startShardingNode(ports[0]!, seeds, keepers);
  nodes.push(a);
  await a.node.cluster.whenUp();
  const b = await startShardingNode(ports[1]!, seeds, keepers);
  nodes.push(b);
  await b.node.cluster.whenUp();
  const starts = new Map<string, number>();
  const register = (n: ShardingNode) => n.sharding.register('cart', cartLogic(starts), { handOverSnapshot });
  const carts = [register(a), register(b)];
  const v1 = tableOver([a, b]);
  for (const n of [a, b]) n.partitions.adopt(v1);
  const ids = Array.from({ length: 40 }, (_, i) => `cart-${i}`);
  const sent = new Map<string, number>();
  const sendRound = (from: typeof carts) => {
    for (const c of from)
      for (const id of ids) {
        c.ref(id).send({ type: 'cart.add' });
        sent.set(id, (sent.get(id) ?? 0) + 1);
      }
  };
  for (let r = 0; r < 5; r++) {
    sendRound(carts);
    await tick();
  }
  const c = await startShardingNode(ports[2]!, seeds, keepers);
  nodes.push(c);
  await c.node.cluster.whenUp();
  carts.push(register(c));
  const v2 = tableOver([a, b, c], v1);
  // the move: each node adopts v2 in its own time while all keep sending
  for (const n of [c, a, b]) {
    n.partitions.adopt(v2);
    for (let r = 0; r < 3; r++) {
      sendRound(carts);
      await tick();
    }
  }
  for (let r = 0; r < 5; r++) {
    sendRound(carts);
    await tick();
  }
  // messages from the other nodes may still be on the wire: wait until settled (or until it is clear)
  const counts = new Map<string, number>();
  const deadline = Date.now() + 2000;
  for (const id of ids) {
    let count = await countOf(carts[0]!.ref(id));
    while (count !== sent.get(id) && Date.now() < deadline) {
      await tick();
      count = await countOf(carts[0]!.ref(id));
    }
    counts.set(id, count);
  }
  const moved = movedPartitions(v1, v2);
  return { counts, sent, starts, moved, nodes: [a, b, c], ids, v2 };
}

describe('planned move: a node joins', () => {
  it('with handOverSnapshot every entity count is exact: nothing lost, nothing twice, one activation', async () => {
    const {
      counts,
      sent,
      starts,
      moved,
      nodes: [a, b, c],
      ids,
      v2,
    } = await joinUnderLoad(true);
    expect(moved.length).toBeGreaterThan(0);
    for (const id of ids) expect(counts.get(id), id).toBe(sent.get(id));
    // fresh starts: one per id (moved entities restart from their snapshot, not from scratch)
    expect([...starts.values()].every((n) => n === 1)).toBe(true);
    for (const id of ids) {
      const running = [a!, b!, c!].filter((n) => n.sharding.region.isRunning('cart', id));
      expect(
        running.map((n) => n.key),
        id,
      ).toEqual([v2.owners[a!.partitions.partitionOf(id)]]);
    }
    expect(c!.sharding.shards().activePartitions.length).toBeGreaterThan(0);
    const handOffs = [a!, b!].map((n) =>
      n.node.transport.system.metrics.value('doyen_sharding_passivations_total', {
        type: 'cart',
        reason: 'hand-off',
      }),
    );
    expect(handOffs.reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    const dropped = [a!, b!, c!].map((n) =>
      n.node.transport.system.metrics.total('doyen_sharding_dropped_messages_total'),
    );
    expect(dropped).toEqual([0, 0, 0]);
  });

  it('positive control: without handOverSnapshot the moved entities start over (the check sees the loss)', async () => {
    const {
      counts,
      sent,
      moved,
      ids,
      nodes: [a],
    } = await joinUnderLoad(false);
    const movedIds = ids.filter((id) => moved.includes(a!.partitions.partitionOf(id)));
    expect(movedIds.length).toBeGreaterThan(0);
    expect(movedIds.some((id) => counts.get(id)! < sent.get(id)!)).toBe(true);
  });
});
