import { describe, it } from 'vitest';
import { SBR_RUNS, sbrSeededRuns } from '../support/sbr-runs.js';

describe('split-brain resolver under static-quorum: seeded fault runs', () => {
  it(`one surviving side, then one cluster (${SBR_RUNS} seeded runs)`, async () => {
    await sbrSeededRuns(
      {
        downing: 'static-quorum',
        sbr: { quorumSize: 3, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
      },
      5000,
    );
  }, 400_000);
});
