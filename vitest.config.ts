import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import AloneBesideSequencer from './test/support/alone-beside-sequencer.js';

/**
 * Files that run one at a time after every `shared` file, with nothing beside them but a niced
 * `beside` simulation: each asserts wall-clock bounds on real processes or a real event loop that
 * a second test file at the same priority on the same 2 cores would eat into.
 */
const ALONE = [
  // ten node processes in network namespaces; SIGSTOP pauses and CPU starvation exactly at the
  // host lease's pause bound, partitions judged against the failure detector's timing
  'test/netns/**/*.test.ts',
  // a minute of churn on five node processes judged on pauses within the bound and no false
  // downing: it passed alone and missed its targets twice beside CPU-bound simulations (at the
  // same priority)
  'test/bench/soak.test.ts',
  // the event loop's longest stall under a flood of 1 MiB frames must stay under 250 ms
  'test/security/flood-fairness.test.ts',
  'test/security/wire-system-flood.test.ts',
];

/**
 * Deterministic simulations (virtual time, no sockets, no processes, no wall-clock bound): CPU
 * only, about 400 s of it, at nice 19 (beside-nice.ts), so they use only the CPU the others leave
 * idle. `pnpm test` (test/support/run-suite.mjs) runs them in a vitest run of their own, one at a
 * time for the whole suite, beside the `shared` files and then the `alone` ones; a plain `vitest
 * run` runs them on the last group's second worker while the `alone` files run on the first.
 */
const BESIDE_FILES = [
  'test/singleton/failover-faults.test.ts',
  'test/singleton/host-lease-safety.test.ts',
  'test/singleton/host-lease-owner-safety.test.ts',
  'test/singleton/seeded-*.test.ts',
  'test/election/coordinator-seeded.test.ts',
  'test/sharding/keeper-safety.test.ts',
  'test/sharding/keeper-hand-off-gather.test.ts',
  'test/sharding/keeper-machine.test.ts',
  'test/sharding/keeper-farewell.test.ts',
  'test/cluster/total-downing-reform.test.ts',
  'test/cluster/sbr-seeded-*.test.ts',
  'test/cluster/sbr-one-decision.test.ts',
  'test/cluster/sbr-rolling-join.test.ts',
  'test/cluster/membership-chaos.test.ts',
  'test/cluster/scale-simulation.test.ts',
  'test/cluster/succession-pair.test.ts',
  'test/election/seeded-replay.test.ts',
  'test/election/quorum.test.ts',
  'test/partitions/backups.test.ts',
  'test/partitions/properties.test.ts',
  'test/partitions/allocator-simulation.test.ts',
];
/** DOYEN_TEST_BESIDE=off puts them back in `shared` (to compare, or if an `alone` bound ever suffers). */
const BESIDE = process.env.DOYEN_TEST_BESIDE === 'off' ? [] : BESIDE_FILES;
/**
 * Set by test/support/run-suite.mjs (`pnpm test`): the `beside` files run in a vitest run of their
 * own for the whole suite, one at a time, while this run has `shared` and then `alone`.
 */
const SPLIT = process.env.DOYEN_TEST_SPLIT === '1';

// one lock per vitest run, for alone-lock.ts in every worker (they inherit this environment)
if (!process.env.DOYEN_ALONE_LOCK) {
  const lock = join(tmpdir(), `doyen-vitest-alone-${process.pid}.lock`);
  process.env.DOYEN_ALONE_LOCK = lock;
  process.once('exit', () => rmSync(lock, { force: true }));
}

export default defineConfig({
  resolve: { conditions: ['@doyen/source'] },
  ssr: { resolve: { conditions: ['@doyen/source'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // interleaves the last group's `alone` and `beside` files (see the sequencer)
    sequence: { sequencer: AloneBesideSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE, ...BESIDE],
          // one file per core, not vitest's default of cores − 1 (1 on a 2-core runner): most
          // files wait on timers, sockets and child processes, so two share 2 cores well
          maxWorkers: '100%',
        },
      },
      // the last group: two workers, one `alone` file at a time (alone-lock.ts) and, in a plain
      // `vitest run`, a niced simulation beside it (beside-nice.ts); same groupOrder and
      // maxWorkers, so one group
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
          setupFiles: ['test/support/alone-lock.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'beside',
          include: BESIDE,
          sequence: { groupOrder: 1 },
          // in a run of their own: one simulation at a time beside whatever the other run has
          maxWorkers: SPLIT ? 1 : 2,
          setupFiles: ['test/support/beside-nice.ts'],
          // a simulation's bounds are on simulated time; niced beside a busy `alone` file it can
          // take several times its usual wall time (a guard against hangs, not a bound)
          // (beside the `shared` files, two at the default priority, for minutes at a time in a split run)
          testTimeout: SPLIT ? 600_000 : 120_000,
        },
      },
    ],
  },
});
