import { forEachSeed } from '../../packages/testkit/src/index.js';
import type { SimElectionCluster } from './sim-election.js';

/**
 * Per seed: the run `start` makes, run until its cluster agrees on one leader (`timeoutMs` of
 * simulated time at most, the cluster's default when absent), then `body`, then the cluster shut down.
 */
export async function forEachAgreedRun<R extends { readonly c: SimElectionCluster }>(
  seeds: readonly number[],
  start: (seed: number) => R,
  body: (run: R) => Promise<void>,
  timeoutMs?: number,
): Promise<void> {
  await forEachSeed(seeds, async (seed) => {
    const run = start(seed);
    await run.c.untilAgreed(undefined, timeoutMs);
    await body(run);
    run.c.shutdown();
  });
}
