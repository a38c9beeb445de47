import { expect, it } from 'vitest';
import {
  convergesThroughLossAndDuplication,
  expectRefused,
  highestLeadsAfterStart,
  nextHighestLeadsAfterCrashes,
  replacesLeaderDroppedFromPeers,
} from './election-scenarios.js';
import { type SimElectionCluster, type SimElectionOptions, simElectionPerTest } from './sim-election.js';

/**
 * What the suites of the rank elections without quorum (bully, candidate) share: five simulated
 * nodes per run, the same seeds, and the tests both algorithms pass alike, each under its suite's
 * own title.
 */
export const RANK_ELECTION_SEEDS = [1, 2, 3];

/** Per-test simulations of a 5-node `algorithm` election, and `start(seed, extra)` for one. */
export function rankElectionSims(algorithm: 'bully' | 'candidate') {
  const sims = simElectionPerTest();
  const start = (seed: number, extra: Partial<SimElectionOptions> = {}) =>
    sims.start({ seed, size: 5, algorithm, ...extra });
  return { sims, start };
}

type Start = ReturnType<typeof rankElectionSims>['start'];

/**
 * `the highest <highest> leads after start, and only it`; then `afterCrash`: the next highest leads
 * after each crash of the leader (by `crashLeader`).
 */
export function itLeadsHighest(
  start: Start,
  crashLeader: (c: SimElectionCluster) => Promise<{ leader: string }>,
  highest: 'rank' | 'candidate',
  afterCrash: string,
): void {
  it(`the highest ${highest} leads after start, and only it`, () =>
    highestLeadsAfterStart(RANK_ELECTION_SEEDS, start));
  it(afterCrash, () => nextHighestLeadsAfterCrashes(RANK_ELECTION_SEEDS, start, crashLeader));
}

/**
 * Converges through lost and duplicated messages; replaces a leader dropped from the peers; refuses
 * each of `refused(from)` at the boundary and passes each of `accepted(from)` (from: a peer's address).
 */
export function itSurvivesFaultsAndRefusesMalformed(
  start: Start,
  o: {
    readonly converges: string;
    readonly refused: (from: string) => readonly object[];
    readonly accepted: (from: string) => readonly object[];
    readonly singleLeader: boolean;
  },
): void {
  it(o.converges, () => convergesThroughLossAndDuplication(RANK_ELECTION_SEEDS, start));

  it('a leader dropped from the peers is replaced; its messages are ignored from then on', () =>
    replacesLeaderDroppedFromPeers(RANK_ELECTION_SEEDS, start));

  it('refuses malformed messages of every type at the boundary', () => {
    const c = start(1);
    const from = c.peers[1]!.address;
    expectRefused(c.nodes[0]!.system.messageTypes, o.refused(from), o.accepted(from));
    expect(o.singleLeader).toBe(false);
  });
}
