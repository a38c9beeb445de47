import { describe, expect, it } from 'vitest';
import { nodeKey } from '../../packages/core/src/index.js';
import { LeasedOldestPlacement, OwnerLeases } from '../../packages/singleton/src/index.js';
import { SimCluster, type SimNode } from '../support/sim-cluster.js';

/**
 * OwnerLeases on whole nodes (actor systems, clusters, the host-lease actor and its wire
 * messages, batched) in the deterministic simulation, without a singleton placement (as in an
 * elected coordinator mode): every node holds its owner lease; a crashed or cut-off member is
 * fenced by the others, never while it still holds its lease; a member fenced never holds it again.
 */

const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];

async function ownersCluster(seed: number) {
  const c = new SimCluster({ seed });
  const owners = new Map<string, OwnerLeases>();
  c.onNodeStart = (node: SimNode) => {
    const o = new OwnerLeases(node.system, node.cluster);
    o.want(true);
    owners.set(node.name, o);
  };
  for (const n of NAMES) {
    c.start(n);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(NAMES), { description: 'convergence' });
  const keyOf = (name: string) => nodeKey(c.get(name).system.node);
  const of = (name: string) => owners.get(name)!;
  return { c, of, keyOf };
}

describe('OwnerLeases on simulated nodes', () => {
  it('every node holds its own owner lease; a fence of a reachable member is refused', async () => {
    const { c, of, keyOf } = await ownersCluster(1);
    await c.sim.runUntil(() => NAMES.every((n) => of(n).holdsOwn()), {
      description: 'all hold their owner lease',
    });
    of('athens').fence(keyOf('byzantium'));
    await c.sim.runFor(3000);
    expect(of('athens').isFenced(keyOf('byzantium'))).toBe(false);
    expect(NAMES.every((n) => of(n).holdsOwn())).toBe(true);
  });

  it('a crashed member is fenced after its lease and the pause bound; listeners are told', async () => {
    const { c, of, keyOf } = await ownersCluster(2);
    await c.sim.runUntil(() => NAMES.every((n) => of(n).holdsOwn()), {
      description: 'all hold their owner lease',
    });
    const ephesus = keyOf('ephesus');
    let told = 0;
    of('athens').subscribe(() => told++);
    c.crash('ephesus');
    const crashedAt = c.sim.now;
    await c.sim.runUntil(() => c.get('athens').cluster.unreachableHere().includes(ephesus), {
      description: 'ephesus unreachable at athens',
    });
    of('athens').fence(ephesus);
    await c.sim.runUntil(() => of('athens').isFenced(ephesus), { description: 'ephesus fenced' });
    // no sooner than a lease and the pause bound after its last grant (a renewal period at most
    // before the crash), and soon after that: ~1.3 s from a kill to the fence
    console.log(
      `[owner leases] a crashed member fenced ${Math.round(c.sim.now - crashedAt)} ms after the crash`,
    );
    expect(c.sim.now - crashedAt).toBeGreaterThanOrEqual(1000 + 500 - 250);
    expect(c.sim.now - crashedAt).toBeLessThan(3000);
    expect(told).toBeGreaterThan(0);
  });

  it('a member cut off is fenced only once it stopped holding its lease, and never holds it again', async () => {
    const { c, of, keyOf } = await ownersCluster(3);
    await c.sim.runUntil(() => NAMES.every((n) => of(n).holdsOwn()), {
      description: 'all hold their owner lease',
    });
    const byzantium = keyOf('byzantium');
    const others = NAMES.filter((n) => n !== 'byzantium');
    // checked after every simulation step: fenced anywhere while it holds its lease is the violation
    c.sim.addInvariant('no owner acts while fenced', () =>
      of('byzantium').holdsOwn() && others.some((n) => c.nodes.has(n) && of(n).isFenced(byzantium))
        ? 'byzantium holds its owner lease while fenced'
        : true,
    );
    c.cutOneWay(['byzantium'], others); // it hears everyone, nobody hears it
    await c.sim.runUntil(() => c.get('cyrene').cluster.unreachableHere().includes(byzantium), {
      description: 'byzantium unreachable at cyrene',
    });
    of('cyrene').fence(byzantium);
    await c.sim.runUntil(() => of('cyrene').isFenced(byzantium), { description: 'byzantium fenced' });
    expect(of('byzantium').holdsOwn()).toBe(false);
    // heal: as long as it lives, byzantium never holds its owner lease again
    c.sim.heal();
    await c.sim.runFor(3000);
    if (c.nodes.has('byzantium')) expect(of('byzantium').holdsOwn()).toBe(false);
  });

  it('one host lease per node: the singletons and the owner leases must agree on its settings', async () => {
    const c = new SimCluster({ seed: 4 });
    const node = c.start('athens');
    const owners = new OwnerLeases(node.system, node.cluster, { pauseBoundMs: 400 });
    expect(() => new LeasedOldestPlacement(node.system, node.cluster, { pauseBoundMs: 500 })).toThrow(
      /one host lease/,
    );
    // the same settings share the node's one host-lease actor
    const placement = new LeasedOldestPlacement(node.system, node.cluster, { pauseBoundMs: 400 });
    expect(placement.settings.pauseBoundMs).toBe(400);
    placement.stop();
    owners.stop();
  });
});
