import { randomBytes } from 'node:crypto';

/** The secret of this test process's clusters (random, so no two runs share one). */
export const TEST_SECRET = randomBytes(16).toString('hex');

/**
 * The settings of members that a test downs, stops and restarts itself: manual downing, no
 * partition table, this process's secret.
 */
export function manualMembers(cluster: string) {
  return {
    cluster,
    secret: TEST_SECRET,
    partitions: { count: 0 },
    clusterOptions: { downing: 'manual' as const },
  };
}
