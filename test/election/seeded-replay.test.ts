import { describe, expect, it } from 'vitest';
import {
  ELECTION_ALGORITHMS,
  type ElectionAlgorithm,
  MemoryVoteStore,
} from '../../packages/election/src/index.js';
import { SimLeaderStoreServer } from '../../packages/testkit/src/simulated-stores.js';
import { SimElectionCluster } from '../support/sim-election.js';

/**
 * Replay: a seed decides a whole election run (the decisions draw ids and jitter only from the
 * node's seeded source, time only from the simulated clock), so the same seed gives the same
 * log, line for line, through start, a leader crash, a partition, a heal and a restart, and a
 * peer change. Under 5 % loss and duplication too.
 */
async function logOf(algorithm: ElectionAlgorithm, seed: number, lossy: boolean): Promise<string[]> {
  let server: SimLeaderStoreServer | undefined;
  const c = SimElectionCluster.start({
    seed,
    size: 5,
    algorithm,
    captureLogs: true,
    ...(lossy ? { network: { dropRate: 0.05, duplicateRate: 0.05 } } : {}),
    voteStore: () => new MemoryVoteStore(),
    leaderStore: (_index, sim, address) => {
      if (!server) {
        const jitter = sim.random.fork('store');
        server = new SimLeaderStoreServer({
          clock: sim.clock,
          ttlMs: 600,
          latencyMs: 1,
          jitterMs: 4,
          random: () => jitter.next(),
        });
      }
      return server.client(address);
    },
  });
  await c.sim.runFor(3_000);
  const leader = c.peers.findIndex((p) => p.address === c.agreedLeader());
  if (leader >= 0) c.crash(leader);
  await c.sim.runFor(3_000);
  c.partition([0, 1], [2, 3, 4]);
  await c.sim.runFor(3_000);
  c.heal();
  if (leader >= 0) c.startNode(leader);
  await c.sim.runFor(3_000);
  for (const n of c.live()) n.election.setPeers(c.peers.slice(0, 4));
  await c.sim.runFor(3_000);
  const logs = [...c.sim.logs];
  c.shutdown();
  return logs;
}

describe('elections replay from their seed', () => {
  it.each(ELECTION_ALGORITHMS)('%s: the same seed gives the same log, line for line', async (algorithm) => {
    for (const [seed, lossy] of [
      [1, false],
      [3, true],
    ] as const) {
      const first = await logOf(algorithm, seed, lossy);
      // positive control: the run logged its election (not an empty log equal to another)
      expect(first.some((line) => line.includes('"event":"election.leader"'))).toBe(true);
      expect(await logOf(algorithm, seed, lossy)).toEqual(first);
    }
  });

  it('positive control: another seed gives another log', async () => {
    expect(await logOf('ring', 2, true)).not.toEqual(await logOf('ring', 3, true));
  });
});
