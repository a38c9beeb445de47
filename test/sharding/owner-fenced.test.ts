// A node whose owner lease was fenced stops every entity at once and leaves its incarnation
// (start-sharding wires this to the node's onDowned policy): never an entity here again.
import { afterEach, describe, expect, it } from 'vitest';
import { stopWhenOwnerFenced } from '../../packages/sharding/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { jsonLogCapture } from '../support/json-log.js';
import {
  cartLogic,
  shardingNodesClosedAfterEach,
  startShardingNode,
  tableOver,
} from '../support/sharding-nodes.js';
import { TableKeepers } from '../support/table-keeper.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

/** The owner lease as far as fencing goes, in the test's hand. */
class FencedSwitch {
  fenced = false;
  private readonly listeners = new Set<() => void>();
  ownerFenced(): boolean {
    return this.fenced;
  }
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  /** Any lease change (held, fences) reaches the listeners; `fenced` says whether this node's was. */
  change(fenced: boolean): void {
    this.fenced = fenced;
    for (const l of [...this.listeners]) l();
  }
}

describe('owner lease fenced', () => {
  it('stops every entity at once, no hand-off, and leaves the incarnation once', async () => {
    const [port] = await freePorts(1);
    const log = jsonLogCapture('info');
    const a = await startShardingNode(
      port!,
      [{ host: '127.0.0.1', port: port! }],
      new TableKeepers(),
      {},
      log.logger,
    );
    nodes.push(a);
    await a.node.cluster.whenUp();
    const carts = a.sharding.register('cart', cartLogic(new Map()));
    a.partitions.adopt(tableOver([a]));
    const ids = Array.from({ length: 20 }, (_, i) => `cart-${i}`);
    for (const id of ids) carts.ref(id).send({ type: 'cart.add' });
    await eventually(() => a.sharding.region.activeCount('cart') === ids.length, {
      what: '20 entities running',
    });

    const lease = new FencedSwitch();
    let left = 0;
    stopWhenOwnerFenced(lease, a.sharding.region, a.node.transport.system.logger, () => left++);
    // control: lease changes that are not a fence leave the entities alone
    lease.change(false);
    expect(a.sharding.region.activeCount('cart')).toBe(ids.length);
    expect(left).toBe(0);

    lease.change(true);
    expect(a.sharding.region.activeCount('cart')).toBe(0);
    expect(a.sharding.region.activePartitions()).toEqual([]);
    expect(left).toBe(1);
    expect(
      a.node.transport.system.metrics.value('doyen_sharding_passivations_total', {
        type: 'cart',
        reason: 'lease-lost',
      }),
    ).toBe(ids.length);
    await eventually(() => log.lines.some((l) => l.event === 'sharding.owner-fenced'), {
      what: 'the log line',
    });

    // later messages start nothing here; another change does not leave twice
    carts.ref('cart-1').send({ type: 'cart.add' });
    await new Promise((r) => setTimeout(r, 50));
    expect(a.sharding.region.isRunning('cart', 'cart-1')).toBe(false);
    lease.change(true);
    expect(left).toBe(1);
  });
});
