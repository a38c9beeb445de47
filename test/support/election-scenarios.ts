import { expect } from 'vitest';
import type { MessageTypes } from '../../packages/core/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import type { SimElectionCluster, SimElectionOptions } from './sim-election.js';

/** Starts a 5-node simulated election for a seed (network options passed through). */
export type StartElection = (seed: number, extra?: Partial<SimElectionOptions>) => SimElectionCluster;

/** Rank-based algorithms: the highest rank (node 4 of 5) leads after start, and only it, for good. */
export async function highestLeadsAfterStart(seeds: number[], start: StartElection): Promise<void> {
  await forEachSeed(seeds, async (seed) => {
    const c = start(seed);
    await c.untilAgreed();
    expect(c.agreedLeader()).toBe(c.peers[4]!.address);
    await c.sim.runFor(2_000);
    expect(c.leaders()).toEqual([c.peers[4]!.address]);
    expect(c.nodes[4]!.election.view()).toMatchObject({ role: 'leading', acting: true, term: 0 });
  });
}

/** Rank-based algorithms: crash the leader twice (with `crashLeader`); the next highest leads each time. */
export async function nextHighestLeadsAfterCrashes(
  seeds: number[],
  start: StartElection,
  crashLeader: (c: SimElectionCluster) => Promise<{ leader: string }>,
): Promise<void> {
  await forEachSeed(seeds, async (seed) => {
    const c = start(seed);
    await c.untilAgreed();
    expect((await crashLeader(c)).leader).toBe(c.peers[3]!.address);
    expect((await crashLeader(c)).leader).toBe(c.peers[2]!.address);
    await c.sim.runFor(2_000);
    expect(c.leaders()).toEqual([c.peers[2]!.address]);
  });
}

/** Cuts nodes 0-2 from 3-4 (60/40) and runs until each side agrees on a leader of its own. */
export async function splitSixtyForty(
  c: SimElectionCluster,
): Promise<{ majority: number[]; minority: number[] }> {
  const majority = [0, 1, 2];
  const minority = [3, 4];
  c.partition(majority, minority);
  await c.sim.runUntil(
    () => c.agreedLeader(majority) !== undefined && c.agreedLeader(minority) !== undefined,
    {
      timeoutMs: 20_000,
      description: 'each side agrees',
    },
  );
  return { majority, minority };
}

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
