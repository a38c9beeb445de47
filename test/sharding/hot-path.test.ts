// The entity hot path's choices that a later change could undo without a failing figure: the
// per-activation log line's level (debug unless the type asks for info), and an entity type
// without idle timeout or cap keeping no recency order (still one activation per id, in order).
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CountReply,
  cartLogic,
  shardingNodesClosedAfterEach,
  startLoggedShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

const oneNodeAtInfo = () => startLoggedShardingNode(nodes, 'info');

describe('entity hot path', () => {
  it('activations and stops are not logged at info by default; activationLog: info writes them (the witness)', async () => {
    const { node, lines } = await oneNodeAtInfo();
    const quiet = node.sharding.register('cart', cartLogic(new Map()), { passivateAfterMs: 30 });
    // positive control: the same node, logger and events with the witness's level
    const witnessed = node.sharding.register('witnessed', cartLogic(new Map()), {
      passivateAfterMs: 30,
      activationLog: 'info',
    });
    node.partitions.adopt(tableOver([node]));
    quiet.ref('q').send({ type: 'cart.add' });
    witnessed.ref('w').send({ type: 'cart.add' });
    await eventually(
      () => node.sharding.region.activeCount('cart') + node.sharding.region.activeCount('witnessed') === 0,
      {
        what: 'both passivated',
      },
    );
    const entityLines = (event: string) =>
      lines.filter((l) => l.event === event).map((l) => `${l.entityType}/${l.entityId}`);
    expect(entityLines('sharding.activated')).toEqual(['witnessed/w']);
    expect(entityLines('sharding.passivated')).toEqual(['witnessed/w']);
  });

  it('without idle timeout or cap, messages reach one activation per id, in order, counts exact', async () => {
    const { node } = await oneNodeAtInfo();
    const starts = new Map<string, number>();
    const carts = node.sharding.register('cart', cartLogic(starts));
    node.partitions.adopt(tableOver([node]));
    for (let round = 0; round < 20; round++)
      for (let k = 0; k < 50; k++) carts.ref(`c-${k}`).send({ type: 'cart.add', from: 'me', seq: round + 1 });
    for (let k = 0; k < 50; k++) {
      const reply = await carts.ref(`c-${k}`).ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
      expect({ count: reply.count, outOfOrder: reply.outOfOrder }).toEqual({ count: 20, outOfOrder: 0 });
    }
    expect([...starts.values()].every((n) => n === 1)).toBe(true);
    expect(starts.size).toBe(50);
    expect(node.sharding.region.activeCount('cart')).toBe(50);
  });
});
