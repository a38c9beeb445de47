import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DoyenNode, ShardedEntities } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { type CartEvent, type CountReply, cartLogic } from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

/**
 * `node.sharding` on real doyen nodes (startNode): the partition keeper with owner leases,
 * the allocator's tables. The app registers its type in `setup`, as on every node.
 */
describe('node.sharding on doyen nodes', () => {
  it('entities answer from every node, and a node joining keeps every count exact', async () => {
    const ports = await freePorts(3);
    const secret = randomBytes(8).toString('hex');
    const starts = new Map<string, number>();
    const carts = new Map<DoyenNode, ShardedEntities<CartEvent>>();
    const config = {
      cluster: 'shard',
      secret,
      partitions: { count: 32 },
      setup: (node: DoyenNode) => {
        node.system.messageTypes.register(['cart.count']);
        carts.set(node, node.sharding!.register('cart', cartLogic(starts), { handOverSnapshot: true }));
      },
    };
    const a = await startMemberNode(ports[0]!, ports[0]!, config, {}, nodes);
    const b = await startMemberNode(ports[1]!, ports[0]!, config, {}, nodes);
    const ids = Array.from({ length: 20 }, (_, i) => `cart-${i}`);
    const ask = (n: DoyenNode, id: string) =>
      carts
        .get(n)!
        .ref(id)
        .ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }), { timeout: 2000 });
    // the first table and the keeper's recovery activate every partition
    await eventually(async () => (await ask(b, 'cart-0').catch(() => undefined))?.count === 0, {
      timeoutMs: 20_000,
      what: 'a first answer',
    });
    const sent = new Map<string, number>();
    let seq = 0;
    const sendAll = (from: readonly DoyenNode[]) => {
      seq++;
      for (const n of from)
        for (const id of ids) {
          carts.get(n)!.ref(id).send({ type: 'cart.add', from: n.cluster.self.key, seq });
          sent.set(id, (sent.get(id) ?? 0) + 1);
        }
    };
    sendAll([a, b]);
    const version = a.partitions!.table()!.version;
    const c = await startMemberNode(ports[2]!, ports[0]!, config, {}, nodes);
    for (let r = 0; r < 20; r++) {
      sendAll([a, b, c]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await eventually(
      () =>
        (a.partitions!.table()?.version ?? 0) > version && c.sharding!.shards().activePartitions.length > 0,
      {
        timeoutMs: 20_000,
        what: 'partitions active on the joined node',
      },
    );
    for (const id of ids) {
      const reply = await eventually(
        async () => {
          const r = await ask(c, id).catch(() => undefined);
          return r && r.count === sent.get(id) ? r : undefined;
        },
        { timeoutMs: 10_000, what: `${id} counted ${sent.get(id)}` },
      );
      expect(reply.count).toBe(sent.get(id));
      expect(reply.outOfOrder, `${id} in per-sender order`).toBe(0);
    }
    expect([...starts.values()].every((n) => n === 1)).toBe(true);
    const running = (id: string) => [a, b, c].filter((n) => n.sharding!.region.isRunning('cart', id)).length;
    for (const id of ids) expect(running(id), id).toBe(1);
  }, 60_000);
});

describe('node.sharding across a graceful leave', () => {
  it('a node that shuts down hands its partitions over: every count exact on the node that stays', async () => {
    const ports = await freePorts(2);
    const secret = randomBytes(8).toString('hex');
    const carts = new Map<DoyenNode, ShardedEntities<CartEvent>>();
    const config = {
      cluster: 'leave',
      secret,
      partitions: { count: 16 },
      setup: (node: DoyenNode) => {
        node.system.messageTypes.register(['cart.count']);
        carts.set(node, node.sharding!.register('cart', cartLogic(new Map()), { handOverSnapshot: true }));
      },
    };
    const a = await startMemberNode(ports[0]!, ports[0]!, config, {}, nodes);
    const b = await startMemberNode(ports[1]!, ports[0]!, config, {}, nodes);
    const ask = (id: string) =>
      carts
        .get(a)!
        .ref(id)
        .ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }), { timeout: 2000 });
    await eventually(
      () =>
        b.sharding!.shards().activePartitions.length > 0 && a.sharding!.shards().activePartitions.length > 0,
      { timeoutMs: 20_000, what: 'partitions on both nodes' },
    );
    const ids = Array.from({ length: 20 }, (_, i) => `cart-${i}`);
    for (const id of ids) for (let k = 0; k < 3; k++) carts.get(a)!.ref(id).send({ type: 'cart.add' });
    for (const id of ids) await eventually(async () => (await ask(id)).count === 3, { what: `${id} at 3` });
    await b.shutdown();
    expect(a.sharding!.shards().activePartitions.length).toBe(16);
    for (const id of ids) expect((await ask(id)).count, id).toBe(3);
  }, 60_000);
});
