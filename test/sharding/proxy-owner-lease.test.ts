import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DoyenNode, ShardedEntities } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { type CartEvent, type CountReply, cartLogic } from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();
const LEASE_CHANGES = 'doyen_singleton_lease_changes_total';
const ownerAcquired = (n: DoyenNode) =>
  n.system.metrics.value(LEASE_CHANGES, { scope: 'owner', change: 'acquired' });

/**
 * Every member votes on owner leases, and every bidder renews with every member four times a
 * lease: a node that can never own a partition (it lacks partitions.role) must not bid, or each
 * proxy-only node adds two messages per member per round to the cluster's idle traffic.
 */
describe('a proxy-only doyen node', () => {
  it('routes to the owners without ever holding an owner lease of its own', async () => {
    const ports = await freePorts(2);
    const secret = randomBytes(8).toString('hex');
    const carts = new Map<DoyenNode, ShardedEntities<CartEvent>>();
    const config = (roles: string[]) => ({
      cluster: 'proxy-lease',
      secret,
      roles,
      partitions: { count: 16, role: 'shard' },
      setup: (node: DoyenNode) => {
        node.system.messageTypes.register(['cart.count']);
        carts.set(node, node.sharding!.register('cart', cartLogic(new Map()), { role: 'shard' }));
      },
    });
    const owner = await startMemberNode(ports[0]!, ports[0]!, config(['shard']), {}, nodes);
    const proxy = await startMemberNode(ports[1]!, ports[0]!, config([]), {}, nodes);
    const ask = (id: string) =>
      carts
        .get(proxy)!
        .ref(id)
        .ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }), { timeout: 1000 })
        .catch(() => undefined);
    await eventually(async () => (await ask('cart-0'))?.count === 0, {
      timeoutMs: 20_000,
      what: 'an answer via the proxy',
    });
    // four renewal periods more: a bid sent with the proxy's first view would have been granted by now
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(ownerAcquired(owner)).toBeGreaterThanOrEqual(1); // positive control: the metric counts a holder
    expect(ownerAcquired(proxy)).toBe(0);
    expect(proxy.sharding!.region.activeCount('cart')).toBe(0);
  });
});
