import { describe, expect, it } from 'vitest';
import { ElectedCoordinator, MemoryVoteStore } from '../../packages/election/src/index.js';
import { SimLeaderStoreServer } from '../../packages/testkit/src/simulated-stores.js';
import type { SimCluster, SimNode } from '../support/sim-cluster.js';
import { singletonSeededRuns } from '../support/singleton-runs.js';

/** Seeded runs per placement; DOYEN_QUORUM_SINGLETON_RUNS overrides. */
const RUNS = Number(process.env.DOYEN_QUORUM_SINGLETON_RUNS ?? 25);

/** A quorum-elected coordinator per node incarnation; votes survive restarts (one store per name). */
function quorumPlacement() {
  const votes = new Map<string, MemoryVoteStore>();
  return (node: SimNode) => {
    let store = votes.get(node.name);
    if (!store) votes.set(node.name, (store = new MemoryVoteStore()));
    return new ElectedCoordinator(node.system, node.cluster, { mode: 'quorum', voteStore: store });
  };
}

/** An etcd-elected coordinator per node incarnation, all on one simulated etcd (TTL 2 s) per run. */
function etcdPlacement(c: SimCluster) {
  const store = new SimLeaderStoreServer({ clock: c.sim.clock, ttlMs: 2_000 });
  return (node: SimNode) =>
    new ElectedCoordinator(node.system, node.cluster, {
      mode: 'etcd',
      leaderStore: store.client(node.system.nodeName),
    });
}

/**
 * RUNS seeded keep-majority fault runs from `firstSeed` with coordinators from `placement`: never two
 * instances at once (checked inside), and most runs end with a cluster in which the singleton runs again.
 */
async function safeAndLiveUnder(
  placement: NonNullable<Parameters<typeof singletonSeededRuns>[2]>['placement'],
  firstSeed: number,
) {
  const { livenessChecked } = await singletonSeededRuns({ downing: 'keep-majority' }, firstSeed, {
    runs: RUNS,
    placement,
    runningAgainWithinMs: 20_000,
  });
  expect(livenessChecked).toBeGreaterThan(RUNS / 2);
}

describe("singleton under coordinator 'quorum' (keep-majority): seeded fault runs", () => {
  it(`never two instances alive at the same instant, and one again after the heal (${RUNS} seeded runs: crashes, pauses, partitions, leaves)`, async () => {
    await safeAndLiveUnder(quorumPlacement, 90_000);
  }, 400_000);
});

describe("singleton under coordinator 'etcd' (keep-majority): seeded fault runs", () => {
  it(`never two instances alive at the same instant, and one again after the heal (${RUNS} seeded runs)`, async () => {
    await safeAndLiveUnder(etcdPlacement, 95_000);
  }, 400_000);
});
