import { describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import type { Envelope, UniqueNodeAddress } from '../../packages/core/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { SimCluster, type SimNode } from '../support/sim-cluster.js';

/**
 * The soak's finding (issue 28): n0, the first seed of every node, restarted (same address, new
 * incarnation) heard no welcome within its join timeout, because the welcome waits for every
 * member's ack, and formed a cluster of its own beside the four others: two clusters, two
 * singletons. Now every live member that receives a join answers at once with
 * `membership.join-seen`, and a first seed that heard it keeps joining instead of forming.
 * Each scenario runs with the answer and, as its positive control, with the answer dropped at
 * the restarted node's boundary: then the same run forms the second cluster.
 */

const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];

interface Scenario {
  readonly name: string;
  readonly config: Partial<ClusterConfig>;
  /** Takes the first seed down and makes the welcome its restart will get slow. */
  readonly before: (c: SimCluster) => Promise<void>;
}

const SCENARIOS: readonly Scenario[] = [
  {
    // the soak's case: SIGTERM (a graceful leave), then a restart while one member is slow to ack
    name: 'a graceful restart while a member is slow to acknowledge',
    // A stall the detector tolerates (as a loaded host's is): the member is slow, not
    // unreachable, so nothing but its ack can end the wait (no update naming the joiner either).
    config: { failureDetector: { kind: 'phi-accrual', acceptableHeartbeatPauseMs: 3000 } },
    before: async (c) => {
      void c.get('athens').cluster.leave();
      await c.sim.runUntil(() => c.get('athens').cluster.state().status === 'removed', {
        description: 'athens left',
      });
      c.crash('athens');
      await c.sim.runUntil(() => c.converged(NAMES.slice(1)), { description: 'the four converged' });
      // delphi's traffic is held 1.8 s: the coordinator's welcome waits for its ack that long,
      // past the joiner's 1 s join timeout
      c.sim.pause(c.get('delphi').system, 1800);
    },
  },
  {
    // kill -9 and an immediate restart: the members still send the joiner to the dead incarnation
    // (their coordinator) until it is downed, seconds later
    name: 'a kill -9 and an immediate restart',
    config: {},
    before: async (c) => {
      c.crash('athens');
      await c.sim.runFor(50);
    },
  },
];

/** Five nodes, each with every node as its seeds (athens first), run until they agree. */
async function fiveNodes(seed: number, config: Partial<ClusterConfig>): Promise<SimCluster> {
  const c = new SimCluster({ seed, captureLogs: true }, config);
  for (const n of NAMES) {
    c.start(n, NAMES);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(NAMES), { description: 'initial convergence', timeoutMs: 30_000 });
  return c;
}

/** Drops every `membership.join-seen` arriving at `node`: the defence off, for the positive control. */
function deafToJoinSeen(node: SimNode): void {
  const system = node.system;
  const receive = system.receiveRemote.bind(system);
  system.receiveRemote = (envelope: Envelope, origin: UniqueNodeAddress) => {
    if ((envelope.message as { type?: unknown }).type === 'membership.join-seen') return;
    receive(envelope, origin);
  };
}

/**
 * Restarts athens (the first seed) after `scenario.before`, checking at every step of the run
 * whether the new incarnation ever holds a membership without the others: a cluster of its own.
 */
async function restartFirstSeed(
  seed: number,
  scenario: Scenario,
  options: { readonly deaf: boolean },
): Promise<{ readonly c: SimCluster; readonly formedOwn: () => boolean; readonly restartedAt: number }> {
  const c = await fiveNodes(seed, scenario.config);
  await scenario.before(c);
  let formedOwn = false;
  c.sim.addInvariant('the restarted first seed forms no cluster of its own', () => {
    const m = c.nodes.get('athens')?.cluster.state().membership;
    if (m && !m.members.some((x) => x.name === 'byzantium')) formedOwn = true;
    return true;
  });
  c.onNodeStart = (node) => {
    if (options.deaf && node.name === 'athens') deafToJoinSeen(node);
  };
  const restartedAt = c.sim.now;
  c.start('athens', NAMES);
  return { c, formedOwn: () => formedOwn, restartedAt };
}

describe('a restarted first seed joins the live cluster, never forms a second one', () => {
  for (const scenario of SCENARIOS) {
    it(`${scenario.name}: athens joins the four, and forms nothing of its own`, async () => {
      await forEachSeed([1, 2, 3, 4, 5], async (seed) => {
        const { c, formedOwn, restartedAt } = await restartFirstSeed(seed, scenario, { deaf: false });
        await c.sim.runUntil(() => c.converged(NAMES), {
          description: 'athens rejoined the four',
          timeoutMs: 60_000,
        });
        expect(formedOwn()).toBe(false);
        expect(c.coordinatorOf('athens')).toBe('byzantium');
        // it heard a member answer, and took it as a reason not to form
        const heard = c.sim
          .logEntries('membership.join-seen')
          .filter((e) => e.node === c.get('athens').system.nodeName && (e.time as number) >= restartedAt);
        expect(heard).toHaveLength(1);
        // still one cluster a while later
        await c.sim.runFor(5000);
        expect(formedOwn()).toBe(false);
        expect(c.converged(NAMES)).toBe(true);
      });
    });

    it(`${scenario.name}, positive control: with join-seen dropped, athens forms a second cluster`, async () => {
      const { c, formedOwn } = await restartFirstSeed(1, scenario, { deaf: true });
      await c.sim.runUntil(formedOwn, { description: 'athens formed its own cluster', timeoutMs: 10_000 });
      expect(c.upMembers('athens')).toEqual(['athens']);
      expect(c.coordinatorOf('athens')).toBe('athens');
      // and the four go on under another coordinator (byzantium, or the dead incarnation until
      // it is downed): two clusters
      const restarted = c.get('athens').system.node.uid;
      expect(c.get('byzantium').cluster.state().coordinator?.uid).not.toBe(restarted);
    });
  }
});
