import { describe, expect, it } from 'vitest';
import {
  FAULT_RUNS,
  type Fault,
  type FaultRunResult,
  faultRun,
  faultRuns,
  firstOverlap,
  healAtTakeover,
  minoritySideHost,
  oneWayCut,
  PAUSE_BOUND_MS,
  pausedHost,
  starvedHost,
  whileCutOff,
} from '../support/failover-faults.js';

/**
 * Issue 28's faults against the host of the emergent (leased) singleton, in the deterministic
 * simulation: 5 members, keep-majority, the default host lease. Every run checks after every
 * simulated step that no two instances are alive at one instant (a frozen host's instance counts
 * as alive), then that exactly one runs within BACK_WITHIN_MS of the fault's end and still
 * SETTLE_MS later. A failure names its seed; DOYEN_SEED=<n> replays it, DOYEN_FAULT_RUNS=<n>
 * changes the runs per fault.
 */

/** The liveness bound: exactly one instance this long after a fault is lifted, at the latest. */
const BACK_WITHIN_MS = 3000;
/** Faults that cut the host off must see a successor take over within this (simulated) time. */
const TAKEOVER_WITHIN_MS = 5000;
/** A pause or a starvation far beyond the bound: the positive controls. */
const FAR_BEYOND_MS = 4000;
const TIMEOUT = 900_000;

const options = { backWithinMs: BACK_WITHIN_MS };

/** One fault family over seeds, alternating between variants by seed. */
const alternating =
  (...variants: Fault[]): Fault =>
  (f) =>
    variants[f.c.sim.seed % variants.length]!(f);

function summary(name: string, results: readonly FaultRunResult[]): string {
  const takeovers = results.map((r) => r.takeoverMs).filter((t): t is number => t !== undefined);
  const max = (xs: number[]) => (xs.length ? Math.round(Math.max(...xs)) : '-');
  return `${name}: ${results.length} runs, ${takeovers.length} took over (slowest ${max(takeovers)} ms), slowest back after the fault ${max(results.map((r) => r.backAfterMs))} ms`;
}

async function expectOverlapCaught(name: string, firstSeed: number, fault: Fault): Promise<void> {
  const caught = await firstOverlap(firstSeed, fault, { ...options, maxRuns: 20 });
  expect(caught, `${name}: the invariant checker caught no overlap in 20 seeds`).toBeDefined();
  console.info(`${name}: overlap caught at seed ${caught!.seed}: ${caught!.error.message}`);
}

describe(`failover faults against the oldest (host lease, pause bound ${PAUSE_BOUND_MS} ms): ${FAULT_RUNS} seeded runs per fault`, () => {
  it(
    `a. the host paused (SIGSTOP) for up to exactly ${PAUSE_BOUND_MS} ms, then continued, alone or while cut off: never two instances`,
    async () => {
      const paused = pausedHost(PAUSE_BOUND_MS);
      const results = await faultRuns(28_000, alternating(paused, whileCutOff(paused)), options);
      console.info(summary('a. paused', results));
    },
    TIMEOUT,
  );

  it(
    `a. positive control: a pause of up to ${FAR_BEYOND_MS} ms is caught as two instances`,
    async () => {
      await expectOverlapCaught('a. paused far beyond the bound', 28_000, pausedHost(FAR_BEYOND_MS));
    },
    TIMEOUT,
  );

  it(
    'b. one-way partitions (host→others dropped; others→host dropped): never two instances, the others take over',
    async () => {
      const results = await faultRuns(
        28_500,
        alternating(oneWayCut('from-host'), oneWayCut('to-host')),
        options,
      );
      for (const r of results) expect(r.takeoverMs).toBeLessThanOrEqual(TAKEOVER_WITHIN_MS);
      console.info(summary('b. one-way', results));
    },
    TIMEOUT,
  );

  it(
    `c. CPU starvation: the host's timers up to ${PAUSE_BOUND_MS} ms late for 1.5 s, alone or while cut off: never two instances`,
    async () => {
      const starved = starvedHost(PAUSE_BOUND_MS);
      const results = await faultRuns(29_000, alternating(starved, whileCutOff(starved)), options);
      console.info(summary('c. starved', results));
    },
    TIMEOUT,
  );

  it(
    `c. positive control: timers up to ${FAR_BEYOND_MS} ms late are caught as two instances`,
    async () => {
      await expectOverlapCaught('c. starved far beyond the bound', 29_000, starvedHost(FAR_BEYOND_MS, 6000));
    },
    TIMEOUT,
  );

  it(
    'd. a partition that heals just as the new instance starts (its singleton.started or host-lease.acquired): never two instances',
    async () => {
      const results = await faultRuns(
        29_500,
        alternating(healAtTakeover('started'), healAtTakeover('acquired')),
        {
          ...options,
          captureLogs: true,
        },
      );
      console.info(summary('d. heal at takeover', results));
    },
    TIMEOUT,
  );

  it(
    'e. a 2 | 3 partition with the oldest in the 2: never two instances, the 3 take over',
    async () => {
      const results = await faultRuns(30_000, minoritySideHost, options);
      for (const r of results) expect(r.takeoverMs).toBeLessThanOrEqual(TAKEOVER_WITHIN_MS);
      console.info(summary('e. 2 | 3', results));
    },
    TIMEOUT,
  );

  it(
    'same seed, same logs: every fault replays identically',
    async () => {
      const faults: Record<string, Fault> = {
        paused: pausedHost(PAUSE_BOUND_MS),
        'paused while cut off': whileCutOff(pausedHost(PAUSE_BOUND_MS)),
        'cut from host': oneWayCut('from-host'),
        'cut to host': oneWayCut('to-host'),
        starved: starvedHost(PAUSE_BOUND_MS),
        'starved while cut off': whileCutOff(starvedHost(PAUSE_BOUND_MS)),
        'heal at started': healAtTakeover('started'),
        'heal at acquired': healAtTakeover('acquired'),
        '2 | 3': minoritySideHost,
      };
      for (const [name, fault] of Object.entries(faults)) {
        const replay = { ...options, captureLogs: true, logLevel: 'debug' };
        const once = await faultRun(28_007, fault, replay);
        const twice = await faultRun(28_007, fault, replay);
        expect(once.logs.length, `${name}: logs captured`).toBeGreaterThan(20);
        expect(twice.logs, `${name}: the replay's logs`).toEqual(once.logs);
      }
    },
    TIMEOUT,
  );
});
