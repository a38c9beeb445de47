import { describe, it } from 'vitest';
import { SINGLETON_RUNS, singletonSeededRuns } from '../support/singleton-runs.js';

describe('singleton under keep-oldest: seeded fault runs', () => {
  it(`never two instances alive at the same instant (${SINGLETON_RUNS} seeded runs)`, async () => {
    await singletonSeededRuns({ downing: 'keep-oldest' }, 22000);
  }, 400_000);
});
