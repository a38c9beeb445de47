import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that run one at a time, alone, after every other file: each asserts wall-clock bounds on
 * real processes or a real event loop that a second test file on the same 2 cores would eat into.
 */
const ALONE = [
  // ten node processes in network namespaces; SIGSTOP pauses and CPU starvation exactly at the
  // host lease's pause bound, partitions judged against the failure detector's timing
  'test/netns/**/*.test.ts',
  // a minute of churn on five node processes judged on pauses within the bound and no false
  // downing: it passed alone and missed its targets twice beside CPU-bound simulations
  'test/bench/soak.test.ts',
  // the event loop's longest stall under a flood of 1 MiB frames must stay under 250 ms
  'test/security/flood-fairness.test.ts',
  'test/security/wire-system-flood.test.ts',
];

export default defineConfig({
  resolve: { conditions: ['@doyen/source'] },
  ssr: { resolve: { conditions: ['@doyen/source'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          // one file per core, not vitest's default of cores − 1 (1 on a 2-core runner): most
          // files wait on timers, sockets and child processes, so two share 2 cores well
          maxWorkers: '100%',
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          // vitest runs a project without file parallelism last, one file at a time
          fileParallelism: false,
        },
      },
    ],
  },
});
