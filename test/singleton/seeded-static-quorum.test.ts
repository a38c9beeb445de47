import { describe, it } from 'vitest';
import { SINGLETON_RUNS, singletonSeededRuns } from '../support/singleton-runs.js';

describe('singleton under static-quorum: seeded fault runs', () => {
  it(`never two instances alive at the same instant (${SINGLETON_RUNS} seeded runs)`, async () => {
    await singletonSeededRuns(
      {
        downing: 'static-quorum',
        sbr: { quorumSize: 3, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
      },
      21000,
    );
  }, 400_000);
});
