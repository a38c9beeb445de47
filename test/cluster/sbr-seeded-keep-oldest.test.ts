import { describe, it } from 'vitest';
import { SBR_RUNS, sbrSeededRuns } from '../support/sbr-runs.js';

describe('split-brain resolver under keep-oldest: seeded fault runs', () => {
  it(`one surviving side, then one cluster (${SBR_RUNS} seeded runs)`, async () => {
    await sbrSeededRuns({ downing: 'keep-oldest' }, 5000);
  }, 400_000);
});
