import { afterEach, describe, expect, it } from 'vitest';
import { ElectionConfigError, type LeaderStore } from '../../packages/election/src/index.js';
import { forEachSeed, SeededRandom } from '../../packages/testkit/src/index.js';
import { SimLeaderStoreServer } from '../../packages/testkit/src/simulated-stores.js';
import { forEachAgreedRun } from '../support/agreed-runs.js';
import { SimElectionCluster } from '../support/sim-election.js';

const TTL_MS = 600;

let cluster: SimElectionCluster | undefined;
afterEach(() => {
  cluster?.shutdown();
  cluster = undefined;
});

/** N simulated nodes running the etcd election against one simulated store. */
function start(seed: number, size = 5, ttlMs = TTL_MS) {
  let server: SimLeaderStoreServer | undefined;
  const c: SimElectionCluster = new SimElectionCluster({
    seed,
    size,
    algorithm: 'etcd',
    leaderStore: (index, sim): LeaderStore => {
      if (!server) {
        const jitter = sim.random.fork('store');
        server = new SimLeaderStoreServer({
          clock: sim.clock,
          ttlMs,
          latencyMs: 1,
          jitterMs: 4,
          random: () => jitter.next(),
        });
      }
      return server.client(c.peers[index]!.address);
    },
  });
  cluster = c;
  for (let i = 0; i < size; i++) c.startNode(i);
  const acting = () => c.leaders(undefined, true);
  // Every change of the acting leader (undefined while nobody acts), to check the faults bite.
  const history: (string | undefined)[] = [];
  c.sim.addInvariant('at most one acting leader', () => {
    const now = acting();
    if (history.at(-1) !== now[0] || history.length === 0) history.push(now[0]);
    return now.length <= 1 || `acting: ${now}`;
  });
  return {
    c,
    server: server!,
    acting,
    history,
    indexOf: (address: string) => c.peers.findIndex((p) => p.address === address),
  };
}

/** Per seed: the default run, agreed on a leader within 5 s, then `body` (see forEachAgreedRun). */
const agreedRuns = (seeds: number[], body: (run: ReturnType<typeof start>) => Promise<void>) =>
  forEachAgreedRun(seeds, (seed) => start(seed), body, 5_000);

describe('etcd election (simulated store)', () => {
  it('elects one acting leader that every node follows, with the key revision as term', async () => {
    await agreedRuns([1, 2, 3], async ({ c, server, acting }) => {
      const leader = c.agreedLeader()!;
      expect(acting()).toEqual([leader]);
      expect(server.holder()).toBe(leader);
      for (const n of c.live()) expect(n.election.view().term).toBe(server.keyRevision());
      // Nothing between the nodes: the store is both ballot box and failure detector.
      expect(c.messagesSent()).toBe(0);
      // Stays put while the leader renews.
      await c.sim.runFor(10 * TTL_MS);
      expect(c.agreedLeader()).toBe(leader);
      expect(server.stats.expiries).toBe(0);
    });
  });

  it('never has two acting leaders under random crashes, restarts and store cut-offs', async () => {
    await forEachSeed([11, 12, 13, 14, 15, 16], async (seed) => {
      const { c, server, history } = start(seed);
      const faults = new SeededRandom(seed * 7919 + 1);
      const cutOff = new Set<number>();
      for (let step = 0; step < 40; step++) {
        const i = faults.int(5);
        const node = c.nodes[i]!;
        const roll = faults.next();
        if (roll < 0.25 && node.alive) c.crash(i);
        else if (roll < 0.45 && !node.alive) c.startNode(i);
        else if (roll < 0.7) {
          server.setReachable(node.peer.address, cutOff.has(i));
          if (cutOff.has(i)) cutOff.delete(i);
          else cutOff.add(i);
        }
        await c.sim.runFor(faults.int(TTL_MS * 2));
      }
      // Everything restored: one leader again, followed by all.
      for (const i of cutOff) server.setReachable(c.peers[i]!.address, true);
      for (const n of c.nodes) if (!n.alive) c.startNode(n.index);
      await c.untilAgreed(undefined, 5 * TTL_MS);
      const leaders = history.filter((l) => l !== undefined);
      expect(leaders.length).toBeGreaterThanOrEqual(4);
      expect(new Set(leaders).size).toBeGreaterThanOrEqual(2);
      c.shutdown();
    });
  });

  it('a crashed leader is replaced within about one TTL', async () => {
    await agreedRuns([21, 22, 23], async ({ c, acting, indexOf }) => {
      const old = c.agreedLeader()!;
      c.crash(indexOf(old));
      const took = await c.untilAgreed(undefined, 5_000);
      expect(c.agreedLeader()).not.toBe(old);
      expect(acting()).toEqual([c.agreedLeader()]);
      expect(took).toBeLessThanOrEqual(TTL_MS + 50);
    });
  });

  it('a leader cut off from the store stops acting before its key can expire', async () => {
    await agreedRuns([31, 32, 33, 34], async ({ c, server, acting, indexOf }) => {
      const old = c.agreedLeader()!;
      const oldNode = c.nodes[indexOf(old)]!;
      const cutAt = c.sim.now;
      server.setReachable(old, false);
      const stoppedAfter = await c.sim.runUntil(() => !oldNode.election.isActing(), {
        timeoutMs: TTL_MS,
        description: 'the cut-off leader stops acting',
      });
      // Nobody else can get the key before it expires, at least one TTL after the last renewal.
      expect(acting()).toEqual([]);
      expect(server.holder()).toBe(old);
      await c.sim.runUntil(() => acting().length === 1, {
        timeoutMs: 2 * TTL_MS,
        description: 'a new leader',
      });
      const next = acting()[0]!;
      expect(next).not.toBe(old);
      expect(c.sim.now - cutAt).toBeGreaterThan(stoppedAfter);
      // The rest agree on it; the cut-off node still believes in nobody or the old key.
      const others = c.peers.map((p, i) => (p.address === old ? -1 : i)).filter((i) => i >= 0);
      await c.untilAgreed(others, 1_000);
      expect(c.agreedLeader(others)).toBe(next);
      // Reconnected, it follows the new leader.
      server.setReachable(old, true);
      await c.untilAgreed(undefined, 2 * TTL_MS);
      expect(c.agreedLeader()).toBe(next);
    });
  });

  it('a 60/40 network partition with the store reachable on both sides keeps exactly one leader', async () => {
    await agreedRuns([41, 42, 43], async ({ c, acting, indexOf }) => {
      const leader = c.agreedLeader()!;
      const li = indexOf(leader);
      // The leader on the minority side: the store, not the majority, decides.
      const others = [0, 1, 2, 3, 4].filter((i) => i !== li);
      const minority = [li, others[0]!];
      const majority = others.slice(1);
      c.partition(minority, majority);
      await c.sim.runFor(10 * TTL_MS);
      expect(c.leaders(minority)).toEqual([leader]);
      expect(c.leaders(majority)).toEqual([]);
      expect(acting()).toEqual([leader]);
      expect(c.agreedLeader()).toBe(leader);
      // The leader crashes while partitioned: the majority side takes over through the store.
      c.crash(li);
      await c.untilAgreed(undefined, 2 * TTL_MS);
      expect(acting()).toHaveLength(1);
      c.heal();
      await c.sim.runFor(5 * TTL_MS);
      expect(acting()).toHaveLength(1);
    });
  });

  it('at N=25 a crashed leader is replaced once, with one winner', async () => {
    const { c, acting, server, indexOf } = start(7, 25);
    await c.untilAgreed(undefined, 5_000);
    const old = c.agreedLeader()!;
    const before = server.stats.campaigns;
    c.crash(indexOf(old));
    await c.untilAgreed(undefined, 5_000);
    expect(acting()).toHaveLength(1);
    // About one compare-and-swap per survivor: the watch, not polling, triggers them.
    expect(server.stats.campaigns - before).toBeLessThanOrEqual(2 * 24);
  });

  it('removed from the peers, the leader resigns and another takes over at once', async () => {
    const { c, acting, server, indexOf } = start(8);
    await c.untilAgreed(undefined, 5_000);
    const old = c.agreedLeader()!;
    const rest = c.peers.filter((p) => p.address !== old);
    for (const n of c.live()) n.election.setPeers(rest);
    await c.sim.runUntil(() => acting().length === 1 && acting()[0] !== old, {
      timeoutMs: TTL_MS / 2,
      description: 'a new leader well before the TTL',
    });
    expect(server.stats.resigns).toBe(1);
    expect(c.nodes[indexOf(old)]!.election.view().role).toBe('looking');
  });

  it('accepts nothing from the network and validates its store', () => {
    const { c } = start(9);
    const types = c.nodes[0]!.system.messageTypes;
    // The watch event is internal: from a peer it is refused at the boundary.
    expect(types.check({ type: 'etcd.watch', holder: '10.1.0.2:2552', revision: 9 } as never)).toBeDefined();
    expect(types.check({ type: 'election.etcd.heartbeat', from: 42 } as never)).toBeDefined();
    const clock = c.sim.clock;
    expect(() => new SimLeaderStoreServer({ clock, ttlMs: 0 })).toThrow(ElectionConfigError);
    expect(() => new SimLeaderStoreServer({ clock, ttlMs: 100, latencyMs: -1 })).toThrow(ElectionConfigError);
    expect(() => new SimLeaderStoreServer({ clock, ttlMs: 100, jitterMs: 3 })).toThrow(ElectionConfigError);
  });
});
