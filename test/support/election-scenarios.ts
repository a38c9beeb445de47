import { expect } from 'vitest';
import type { MessageTypes } from '../../packages/core/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import type { SimElectionCluster, SimElectionOptions } from './sim-election.js';

/** Starts a 5-node simulated election for a seed (network options passed through). */
export type StartElection = (seed: number, extra?: Partial<SimElectionOptions>) => SimElectionCluster;

/** Rank-based algorithms: the highest rank leads, and the next after it crashes, through 5 % loss and duplication. */
export async function convergesThroughLossAndDuplication(
  seeds: number[],
  start: StartElection,
): Promise<void> {
  await forEachSeed(seeds, async (seed) => {
    const c = start(seed, { network: { dropRate: 0.05, duplicateRate: 0.05 } });
    await c.sim.runUntil(() => c.agreedLeader() === c.peers[4]!.address, { timeoutMs: 10_000 });
    c.crash(4);
    await c.sim.runUntil(() => c.agreedLeader() === c.peers[3]!.address, { timeoutMs: 10_000 });
  });
}

/** The leader (rank 4) is dropped from everyone else's peers: they elect rank 3 and ignore it from then on. */
export async function replacesLeaderDroppedFromPeers(seeds: number[], start: StartElection): Promise<void> {
  await forEachSeed(seeds, async (seed) => {
    const c = start(seed);
    await c.untilAgreed();
    const rest = [0, 1, 2, 3];
    for (const i of rest) c.nodes[i]!.election.setPeers(c.peers.slice(0, 4));
    await c.untilAgreed(rest);
    expect(c.agreedLeader(rest)).toBe(c.peers[3]!.address);
    await c.sim.runFor(2_000); // node 4 still heartbeats as leader, to no effect
    expect(c.agreedLeader(rest)).toBe(c.peers[3]!.address);
    expect(c.leaders(rest)).toEqual([c.peers[3]!.address]);
  });
}

/** Every message in `bad` is refused at the boundary with a reason; every one in `good` passes. */
export function expectRefused(
  types: MessageTypes,
  bad: readonly object[],
  good: readonly object[] = [],
): void {
  for (const m of bad) expect(types.check(m as never), JSON.stringify(m).slice(0, 80)).toBeTypeOf('string');
  for (const m of good) expect(types.check(m as never), JSON.stringify(m).slice(0, 80)).toBeUndefined();
}
