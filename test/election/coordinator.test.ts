import { afterEach, describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import { ElectedCoordinator, MemoryVoteStore } from '../../packages/election/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { GREEK, SimCluster, type SimNode } from '../support/sim-cluster.js';
import { withNotebook } from '../support/sim-singletons.js';

const NAMES = GREEK.slice(0, 5) as unknown as string[];

let cluster: SimCluster | undefined;
afterEach(() => cluster?.sim.shutdown());

/** Five nodes under keep-majority, each with a quorum-elected coordinator that places the notebook singleton. */
async function quorumCluster(seed: number) {
  const c = new SimCluster({ seed });
  cluster = c;
  const coordinators = new Map<string, ElectedCoordinator>();
  const votes = new Map<string, MemoryVoteStore>();
  const nb = withNotebook(c, {
    placement: (node: SimNode) => {
      const voteStore = votes.get(node.name) ?? new MemoryVoteStore();
      votes.set(node.name, voteStore);
      const coordinator = new ElectedCoordinator(node.system, node.cluster, { mode: 'quorum', voteStore });
      coordinators.set(node.name, coordinator);
      return coordinator;
    },
  });
  for (const name of NAMES) c.start(name);
  await c.sim.runUntil(() => c.converged(NAMES), { timeoutMs: 20_000, description: 'five up' });
  const running = () =>
    [...c.nodes.values()]
      .filter((n) => !n.system.isTerminated && n.system.lookup('/user/singleton-notebook-instance'))
      .map((n) => n.name);
  const acting = () => [...c.nodes.keys()].filter((n) => coordinators.get(n)?.view().acting);
  return { c, nb, coordinators, running, acting };
}

describe("coordinator: 'quorum' places singletons on the acting generation-clock leader", () => {
  it('runs the singleton only on the one acting leader, and moves it when the leader crashes', async () => {
    await forEachSeed([1, 2, 3], async (seed) => {
      const { c, nb, coordinators, running, acting } = await quorumCluster(seed);
      await c.sim.runUntil(() => running().length === 1 && acting().length === 1, {
        timeoutMs: 10_000,
        description: 'one acting leader runs the notebook',
      });
      const leader = acting()[0]!;
      expect(running()).toEqual([leader]);
      // it acts once a majority follows: the rest hear of it moments later
      const address = c.get(leader).cluster.self.address;
      await c.sim.runUntil(() => NAMES.every((n) => coordinators.get(n)!.coordinator() === address), {
        timeoutMs: 2000,
        description: 'every node names the leader',
      });
      const crashedAt = c.sim.now;
      c.crash(leader);
      const took = await c.sim.runUntil(() => running().length === 1 && running()[0] !== leader, {
        timeoutMs: 15_000,
        description: 'the notebook runs on a new leader',
      });
      expect(acting()).toEqual(running());
      // the new leader starts once elected, without waiting for the crashed one to be downed
      expect(took).toBeLessThan(2_500);
      expect(c.sim.now - crashedAt).toBe(took);
      expect(nb.peak()).toBe(1);
      c.sim.shutdown();
    });
  });

  it('a leader cut off into the minority stops; the majority elects one leader; never two instances', async () => {
    await forEachSeed([4, 5, 6], async (seed) => {
      const { c, nb, running, acting } = await quorumCluster(seed);
      await c.sim.runUntil(() => running().length === 1 && acting().length === 1, {
        timeoutMs: 10_000,
        description: 'one acting leader',
      });
      const leader = acting()[0]!;
      const others = NAMES.filter((n) => n !== leader);
      const minority = [leader, others[0]!];
      const majority = others.slice(1);
      c.sim.partition(
        minority.map((n) => c.get(n).system),
        majority.map((n) => c.get(n).system),
      );
      // at most one acting leader at any moment
      c.sim.addInvariant(
        'at most one acting quorum leader',
        () => acting().length <= 1 || acting().join(','),
      );
      await c.sim.runUntil(
        () => running().length === 1 && majority.includes(running()[0]!) && acting()[0] === running()[0],
        { timeoutMs: 15_000, description: 'the majority runs the notebook' },
      );
      expect(nb.peak()).toBe(1);
      c.sim.shutdown();
    });
  });

  it("refuses downing 'auto', where both sides of a partition would shrink their majority", async () => {
    const c = new SimCluster({ seed: 7 }, { downing: 'auto' });
    cluster = c;
    const node = c.start('athens');
    expect(() => new ElectedCoordinator(node.system, node.cluster, { mode: 'quorum' })).toThrow(
      InvalidConfigError,
    );
    expect(() => new ElectedCoordinator(node.system, node.cluster, { mode: 'etcd' })).toThrow(/leader store/);
  });
});
