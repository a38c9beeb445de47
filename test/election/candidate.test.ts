import { describe, expect, it } from 'vitest';
import { candidateElection } from '../../packages/election/src/candidate.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import {
  itLeadsHighest,
  itSurvivesFaultsAndRefusesMalformed,
  rankElectionSims,
  RANK_ELECTION_SEEDS as SEEDS,
} from '../support/rank-election-suite.js';
import type { SimElectionCluster } from '../support/sim-election.js';

const { start } = rankElectionSims('candidate');

/** Messages of `types` sent so far by the given nodes. */
function sentOf(c: SimElectionCluster, indices: readonly number[], types: readonly string[]): number {
  let sum = 0;
  for (const i of indices) for (const t of types) sum += c.nodes[i]!.election.sentByType().get(t) ?? 0;
  return sum;
}

const PROBES = ['election.candidate.probe', 'election.candidate.alive'];

/** Crashes the agreed leader; returns the new one and what the re-election cost. */
async function crashLeader(c: SimElectionCluster) {
  const old = c.peers.findIndex((p) => p.address === c.agreedLeader());
  const survivors = c
    .live()
    .map((n) => n.index)
    .filter((i) => i !== old);
  const before = c.electionMessagesSent();
  const probesBefore = sentOf(c, survivors, PROBES);
  c.crash(old);
  await c.untilAgreed();
  return {
    leader: c.agreedLeader()!,
    messages: c.electionMessagesSent() - before,
    probes: sentOf(c, survivors, PROBES) - probesBefore,
  };
}

describe('candidate/ordinary election', () => {
  itLeadsHighest(
    start,
    crashLeader,
    'candidate',
    'after the leader crashes the highest live candidate leads',
  );

  it('with no candidate alive it falls back to the highest live ordinary peer', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed, { election: { candidates: 2 } });
      await c.untilAgreed();
      c.crash(3);
      c.crash(4);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[2]!.address);
    });
  });

  it('re-election messages grow with the candidates, not with N', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const run = async (size: number, candidates: number) => {
        const c = start(seed, { size, election: { candidates } });
        await c.untilAgreed();
        await c.sim.runFor(1_000);
        const r = await crashLeader(c);
        expect(r.leader).toBe(c.peers[size - 2]!.address);
        return r;
      };
      const small = await run(5, 3);
      const large = await run(25, 3);
      const manyCandidates = await run(25, 12);
      // Probes and answers go to candidates only: five times the nodes, no more of them.
      expect(large.probes).toBeLessThanOrEqual(small.probes + 3);
      expect(manyCandidates.probes).toBeGreaterThan(large.probes);
      // Only the announcement grows with N: about one message per extra node (the full bully
      // round would add hundreds here).
      expect(large.messages - small.messages).toBeLessThanOrEqual(2 * (25 - 5));
    });
  });

  it('a 60/40 partition with a candidate on each side elects one leader per side; one after the heal', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed);
      await c.untilAgreed();
      const small = [3, 4];
      const large = [0, 1, 2];
      c.partition(small, large);
      await c.untilAgreed(small);
      await c.untilAgreed(large);
      await c.sim.runFor(2_000);
      expect(c.leaders()).toHaveLength(2);
      expect(c.leaders(small)).toEqual([c.peers[4]!.address]);
      expect(c.leaders(large)).toEqual([c.peers[2]!.address]);
      c.heal();
      await c.untilAgreed();
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
      expect(c.agreedLeader()).toBe(c.peers[4]!.address);
    });
  });

  itSurvivesFaultsAndRefusesMalformed(start, {
    converges: 'converges on the highest live candidate despite lost and duplicated messages',
    refused: (from) => [
      { type: 'election.candidate.probe', from: 42 },
      { type: 'election.candidate.alive' },
      { type: 'election.candidate.elected', from, leader: null },
      { type: 'election.candidate.elected', from: 'x'.repeat(400), leader: from },
      { type: 'election.candidate.heartbeat', from: 'no-port' },
    ],
    accepted: (from) => [{ type: 'election.candidate.elected', from, leader: from }],
    singleLeader: candidateElection.singleLeader,
  });
});
