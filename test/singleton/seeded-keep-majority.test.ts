import { describe, it } from 'vitest';
import { SINGLETON_RUNS, singletonSeededRuns } from '../support/singleton-runs.js';

describe('singleton under keep-majority: seeded fault runs', () => {
  it(`never two instances alive at the same instant (${SINGLETON_RUNS} seeded runs)`, async () => {
    await singletonSeededRuns({ downing: 'keep-majority' }, 20000);
  }, 400_000);
});
