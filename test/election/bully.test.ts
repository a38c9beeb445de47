import { describe, expect, it } from 'vitest';
import { bullyElection } from '../../packages/election/src/bully.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import {
  itLeadsHighest,
  itSurvivesFaultsAndRefusesMalformed,
  rankElectionSims,
  RANK_ELECTION_SEEDS as SEEDS,
} from '../support/rank-election-suite.js';
import type { SimElectionCluster } from '../support/sim-election.js';

const { sims, start } = rankElectionSims('bully');

/** Crashes the agreed leader; returns the new one and the election messages it took. */
async function crashLeader(c: SimElectionCluster): Promise<{ leader: string; messages: number }> {
  const old = c.agreedLeader()!;
  const before = c.electionMessagesSent();
  c.crash(c.peers.findIndex((p) => p.address === old));
  await c.untilAgreed();
  return { leader: c.agreedLeader()!, messages: c.electionMessagesSent() - before };
}

describe('bully election (modified, next-in-line failover)', () => {
  itLeadsHighest(start, crashLeader, 'rank', 'after the leader crashes the next highest leads');

  it('next-in-line failover re-elects with fewer election messages than the full round', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const run = async (failoverListSize: number) => {
        const c = start(seed, { election: { failoverListSize } });
        await c.untilAgreed();
        await c.sim.runFor(1_000); // the leader has heard every ack: its list is settled
        return crashLeader(c);
      };
      const withList = await run(2);
      const without = await run(0);
      expect(withList.leader).toBe(sims.current!.peers[3]!.address);
      expect(without.leader).toBe(sims.current!.peers[3]!.address);
      expect(withList.messages).toBeLessThan(without.messages);
    });
  });

  it('falls back to the full round when no alternative of the list is alive', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed, { election: { failoverListSize: 1 } });
      await c.untilAgreed();
      await c.sim.runFor(1_000);
      c.crash(3); // the only alternative, before the leader notices it is gone
      c.crash(4);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[2]!.address);
    });
  });

  it('a 60/40 partition elects one leader per side; after the heal only the highest leads', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed);
      await c.untilAgreed();
      const [small, large] =
        seed % 2 === 0
          ? [
              [3, 4],
              [0, 1, 2],
            ]
          : [
              [0, 1],
              [2, 3, 4],
            ];
      c.partition(small, large);
      await c.untilAgreed(small);
      await c.untilAgreed(large);
      await c.sim.runFor(2_000);
      expect(c.leaders()).toHaveLength(2);
      expect(c.leaders(small)).toEqual([c.peers[Math.max(...small)]!.address]);
      expect(c.leaders(large)).toEqual([c.peers[Math.max(...large)]!.address]);
      c.heal();
      await c.untilAgreed();
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
      expect(c.agreedLeader()).toBe(c.peers[4]!.address);
    });
  });

  it('a restarted higher node bullies its way back to leadership', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed);
      await c.untilAgreed();
      await crashLeader(c);
      c.startNode(4);
      await c.sim.runUntil(() => c.agreedLeader() === c.peers[4]!.address, { timeoutMs: 5_000 });
      await c.sim.runFor(1_000);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
    });
  });

  itSurvivesFaultsAndRefusesMalformed(start, {
    converges: 'converges on the highest live rank despite lost and duplicated messages',
    refused: (from) => [
      { type: 'election.bully.election', from: 42 },
      { type: 'election.bully.alive', from, rank: -1, leader: null },
      { type: 'election.bully.alive', from, rank: 1 },
      { type: 'election.bully.takeover', from: 'no-port' },
      { type: 'election.bully.failover', from, failed: 7 },
      { type: 'election.bully.elected', from, failover: 'x:1' },
      { type: 'election.bully.elected', from, failover: Array(1_000).fill(from) },
      { type: 'election.bully.heartbeat', from, failover: [3] },
      { type: 'election.bully.heartbeat-ack' },
    ],
    accepted: (from) => [
      { type: 'election.bully.alive', from, rank: 1, leader: null },
      { type: 'election.bully.heartbeat', from, failover: [from] },
    ],
    singleLeader: bullyElection.singleLeader,
  });
});
