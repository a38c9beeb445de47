import { describe, it } from 'vitest';
import { ElectedCoordinator, MemoryVoteStore } from '../../packages/election/src/index.js';
import type { SimNode } from '../support/sim-cluster.js';
import { singletonSeededRuns } from '../support/singleton-runs.js';

/** Seeded runs per placement; DOYEN_QUORUM_SINGLETON_RUNS overrides. */
const RUNS = Number(process.env.DOYEN_QUORUM_SINGLETON_RUNS ?? 80);

/** A quorum-elected coordinator per node incarnation; votes survive restarts (one store per name). */
function quorumPlacement() {
  const votes = new Map<string, MemoryVoteStore>();
  return (node: SimNode) => {
    let store = votes.get(node.name);
    if (!store) votes.set(node.name, (store = new MemoryVoteStore()));
    return new ElectedCoordinator(node.system, node.cluster, { mode: 'quorum', voteStore: store });
  };
}

describe("singleton under coordinator 'quorum' (keep-majority): seeded fault runs", () => {
  it(`never two instances alive at the same instant, and one again after the heal (${RUNS} seeded runs: crashes, pauses, partitions, leaves)`, async () => {
    await singletonSeededRuns({ downing: 'keep-majority' }, 90_000, {
      runs: RUNS,
      placement: quorumPlacement,
    });
  }, 400_000);
});
