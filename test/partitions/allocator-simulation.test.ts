import { describe, expect, it } from 'vitest';
import {
  ALLOCATOR_SINGLETON,
  allocatorLogic,
  optimalMoves,
  PartitionService,
} from '../../packages/partitions/src/index.js';
import { ClusterSingletons } from '../../packages/singleton/src/index.js';
import { forEachSeed, SeededRandom } from '../../packages/testkit/src/index.js';
import { GREEK, SimCluster, type SimNode } from '../support/sim-cluster.js';

const FIVE = GREEK.slice(0, 5) as unknown as string[];
const P = 271;

function withAllocator(c: SimCluster) {
  const services = new Map<SimNode, PartitionService>();
  c.onNodeStart = (node) => {
    const service = new PartitionService(node.system, node.cluster, P);
    const singletons = new ClusterSingletons(node.system, node.cluster);
    singletons.register(
      ALLOCATOR_SINGLETON,
      allocatorLogic({
        system: node.system,
        cluster: node.cluster,
        service,
        options: { partitionCount: P },
        ackTimeoutMs: 2000,
      }),
    );
    services.set(node, service);
  };
  for (const node of c.nodes.values()) c.onNodeStart(node);
  return (name: string) => services.get(c.get(name))!;
}

/** Every up member holds the same table, every partition has exactly one owner among them, balanced. */
function tableConverged(c: SimCluster, service: (n: string) => PartitionService): string | undefined {
  const up = [...c.nodes.keys()].filter((n) => c.get(n).cluster.state().status === 'up');
  const tables = up.map((n) => service(n).table());
  const first = tables[0];
  if (!first) return 'no table';
  if (tables.some((t) => t?.version !== first.version))
    return `versions ${tables.map((t) => t?.version).join(',')}`;
  const live = new Set(up.map((n) => c.get(n).cluster.self.key));
  const counts = new Map<string, number>();
  for (const owner of first.owners) {
    if (!live.has(owner)) return `partition owned by ${owner || 'nobody'}, not a live member`;
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  const n = live.size;
  for (const [owner, k] of counts)
    if (k < Math.floor(P / n) || k > Math.ceil(P / n)) return `${owner} owns ${k}`;
  return undefined;
}

describe('fixed-partition allocator (a singleton) on the simulated network', () => {
  it('balances on join and leave with the optimum number of moves, and every member holds the table', async () => {
    const c = new SimCluster({ seed: 301, captureLogs: true });
    c.start('athens');
    const service = withAllocator(c);
    await c.sim.runFor(300);
    for (const n of FIVE.slice(1)) {
      c.start(n);
      await c.sim.runUntil(
        () => tableConverged(c, service) === undefined && c.get(n).cluster.state().status === 'up',
        {
          timeoutMs: 10_000,
        },
      );
    }
    await c.sim.runUntil(() => c.converged(FIVE) && tableConverged(c, service) === undefined);
    const before = service('athens').table()!;
    const allocations = c.sim.logEntries('partitions.allocated');
    // each join moved exactly what balance requires
    expect(allocations.map((a) => a.moved)).toEqual([271, 135, 90, 67, 54]);
    void c.get('cyrene').cluster.leave();
    await c.sim.runUntil(
      () =>
        !c
          .get('athens')
          .cluster.state()
          .membership!.members.some((m) => m.name === 'cyrene') && tableConverged(c, service) === undefined,
      { timeoutMs: 10_000 },
    );
    const after = service('athens').table()!;
    const survivors = after.owners.filter((o, i) => o !== before.owners[i]).length;
    const optimum = optimalMoves(
      before,
      [...new Set(after.owners)].map((key) => ({ key, roles: [] })),
      { partitionCount: P },
    );
    expect(survivors).toBe(optimum);
    expect(c.sim.logEntries('partitions.table').length).toBeGreaterThan(0);
  });

  it('after crashes and partitions, every partition has exactly one live owner and all members hold the same version', async () => {
    await forEachSeed([311, 312, 313, 314, 315, 316], async (seed) => {
      const c = new SimCluster({ seed });
      c.restartDowned = true;
      for (const n of FIVE) {
        c.start(n);
        await c.sim.runFor(100);
      }
      await c.sim.runUntil(() => c.converged(FIVE));
      const service = withAllocator(c);
      await c.sim.runUntil(() => tableConverged(c, service) === undefined, { timeoutMs: 10_000 });
      const rnd = new SeededRandom(seed).fork('allocator');
      for (let step = 0; step < 3; step++) {
        const names = [...c.nodes.keys()];
        if (rnd.chance(0.5)) c.crash(rnd.pick(names));
        else {
          const side = names.filter(() => rnd.chance(0.5));
          const other = names.filter((n) => !side.includes(n));
          if (side.length && other.length) {
            c.split(side, other);
          }
        }
        await c.sim.runFor(1000 + rnd.int(4000));
        c.sim.heal();
      }
      for (const n of FIVE) if (!c.nodes.has(n)) c.start(n, FIVE, { mayFormCluster: false });
      await c.sim.runFor(5000);
      // a down-all outcome (everyone down, nobody may form an island) has no table to check
      const anyUp = [...c.nodes.values()].some((n) => n.cluster.state().status === 'up');
      if (!anyUp) return;
      await c.sim.runUntil(() => c.converged(FIVE) && tableConverged(c, service) === undefined, {
        timeoutMs: 40_000,
        description: 'one cluster and one table',
      });
    });
  });
});
