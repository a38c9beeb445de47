import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decide } from '../../packages/singleton/src/index.js';
import { faultArbitrary } from '../support/host-lease-faults.js';
import {
  type Decide,
  type Fault,
  SIM_POLICY,
  type SimOptions,
  type SimPlan,
  type SimResult,
  simulate,
} from '../support/host-lease-sim.js';

/**
 * The host lease's safety as a property: N = 3..7 nodes each running the pure decisions under a
 * seeded random schedule of delays, losses, reorders, one-way cuts, partitions, pauses up to the
 * pause bound, crashes and the cluster's membership changes (unreachable flags; keep-majority
 * downing: only the majority side downs, the minority exits soon or lives on with its old view
 * until late in the down-removal margin, the host lease's assumption).
 * After EVERY step: no two nodes act with a mandate at one real instant (a node resuming from a
 * pause acts on its stale mandate until its first step). Further properties aim at the edges:
 * crossed downing, stalls aimed at a lease's end with the old host on the slowest clock, and
 * no pause wait at all (only the voters' drift margin then fences). Each positive control turns
 * one defence off and shows the same checker catches the overlap (and fails for that reason),
 * so no property can pass vacuously; each prints the seed and the plan it caught.
 */

const POLICY = SIM_POLICY;
const DURATION_MS = 16_000;
const RUNS = 500;
const SEED = 20261127;

/** Stalls aimed at a lease's end last up to the full pause bound (real time). */
const EDGE_PAUSE_MS = POLICY.pauseBoundMs;

interface PlanShape {
  readonly pauseMs?: fc.Arbitrary<number>;
  readonly stallMs?: fc.Arbitrary<number>;
  /**
   * The pause bound's edge: node 0 (the first host) on the slowest clock, every other on the
   * fastest, a fast lossless network and a quick detector, so its successor is bidding the
   * moment its lease ends.
   */
  readonly edge?: boolean;
  readonly kinds?: readonly Fault['kind'][];
  readonly crossed?: SimPlan['crossed'];
  readonly roleScoped?: boolean;
}

function planArb(shape: PlanShape = {}): fc.Arbitrary<SimPlan> {
  const pauseMs =
    shape.pauseMs ??
    fc.oneof(fc.constant(POLICY.pauseBoundMs), fc.integer({ min: 1, max: POLICY.pauseBoundMs }));
  const stallMs =
    shape.stallMs ??
    fc.oneof(fc.constant(EDGE_PAUSE_MS), fc.integer({ min: POLICY.pauseBoundMs / 2, max: EDGE_PAUSE_MS }));
  const kinds = shape.kinds ?? ['crash', 'pause', 'partition', 'cut', 'stall', 'join'];
  const fast = 1 + POLICY.maxClockDrift;
  const rates = shape.edge
    ? fc.constant([1, fast, fast, fast, fast, fast, fast])
    : fc.option(fc.array(fc.constantFrom(1, fast), { minLength: 7, maxLength: 7 }), { nil: undefined });
  return fc.record({
    nodes: fc.integer({ min: 3, max: 7 }),
    seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    faults: fc.array(faultArbitrary({ durationMs: DURATION_MS, pauseMs, stallMs, kinds }), {
      minLength: 1,
      maxLength: 8,
    }),
    lossRate: shape.edge
      ? fc.constant(0)
      : fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.3, noNaN: true })),
    maxDelayMs: fc.integer({ min: 1, max: shape.edge ? 3 : 200 }),
    detectMs: fc.integer({ min: 100, max: shape.edge ? 600 : 1200 }),
    stableMs: fc.integer({ min: 300, max: 2000 }),
    minorityExits: fc.boolean(),
    extremeRates: fc.boolean(),
    crossed: fc.constant(shape.crossed),
    roleScoped: fc.constant(shape.roleScoped),
    rates,
  });
}

const OVERLAP = 'two nodes act with a mandate';

/** Simulates `plan`, throwing the violation (with the trace) if there is one. */
function run(options: SimOptions, plan: SimPlan): SimResult {
  const result = simulate(plan, options);
  if (result.violation) {
    const v = result.violation;
    throw new Error(
      `${OVERLAP} at ${v.at.toFixed(1)} ms: ${v.acting.join(', ')} (${v.note})\n${v.trace.join('\n')}`,
    );
  }
  return result;
}

/** The property's predicate; it returns nothing (fast-check fails a predicate that returns a value). */
const holds =
  (options: SimOptions) =>
  (plan: SimPlan): void => {
    run(options, plan);
  };

/** Runs the property expecting it to FAIL (a positive control); prints the seed and the case. */
function expectCaught(name: string, arb: fc.Arbitrary<SimPlan>, options: SimOptions): void {
  const details = fc.check(fc.property(arb, holds(options)), {
    seed: SEED,
    numRuns: RUNS,
    endOnFailure: true,
  });
  expect(details.failed, `${name}: the checker never saw an overlap`).toBe(true);
  // failed for the right reason: an overlap, not an error of the simulation
  expect(String(details.errorInstance)).toContain(OVERLAP);
  const plan = details.counterexample?.[0];
  console.log(
    `[positive control ${name}] overlap caught at run ${details.numRuns} (fast-check seed ${details.seed}, path ${details.counterexamplePath}); plan seed ${plan?.seed}: ${JSON.stringify(plan)}\n` +
      String(details.errorInstance).split('\n')[0],
  );
}

/** Partitions whose sides each down the other; the downed side exits within the down-removal margin. */
const crossedDowning = planArb({
  kinds: ['partition', 'crash'],
  crossed: { exitWithinMs: POLICY.downedCountsForMs },
});

/** Hosts cut off and stalled just before their lease ends, on the slowest clock (the pause bound's edge). */
const aimedStalls = planArb({ kinds: ['stall', 'stall', 'stall', 'crash', 'cut'], edge: true });

/**
 * The edge network with hosts cut off but never paused, and no pause-bound wait: only the
 * voters' drift margin keeps a successor out until the old lease ended (the pause wait would
 * otherwise hide a missing margin). The clocks stay 1 % apart whatever the policy says.
 */
const unpausedEdge = planArb({
  kinds: ['stall', 'stall', 'crash', 'cut'],
  stallMs: fc.constant(0),
  edge: true,
});
const NO_PAUSE_WAIT = { ...POLICY, pauseBoundMs: 0 };

/** A voter that ignores its promise: every request finds it bound to nobody. */
const promiseIgnored: Decide = (policy, ctx, event, now) =>
  event.type === 'host-lease.request'
    ? decide(policy, { ...ctx, grants: {} }, event, now)
    : decide(policy, ctx, event, now);

describe('host lease safety (seeded simulation of the pure decisions)', () => {
  it(`never lets two nodes act with a mandate at once, under every fault (${RUNS} runs)`, () => {
    let acquisitions = 0;
    let unclean = 0;
    let steps = 0;
    let servedMs = 0;
    fc.assert(
      fc.property(planArb(), (plan) => {
        const result = run({ policy: POLICY, durationMs: DURATION_MS }, plan);
        acquisitions += result.acquisitions;
        unclean += result.uncleanAcquisitions;
        steps += result.steps;
        servedMs += result.servedMs;
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(
      `[host lease safety] ${RUNS} runs, ${steps} steps, ${acquisitions} acquisitions (${unclean} unclean), a host served ${((100 * servedMs) / (RUNS * DURATION_MS)).toFixed(1)} % of the time`,
    );
    // the runs exercised failover, clean and unclean
    expect(acquisitions).toBeGreaterThan(RUNS);
    expect(unclean).toBeGreaterThan(RUNS / 10);
  });

  it('keeps the invariant for singletons of a role, whose host is not the coordinator (no joins)', () => {
    const roleScoped = planArb({ kinds: ['crash', 'pause', 'partition', 'cut', 'stall'], roleScoped: true });
    fc.assert(fc.property(roleScoped, holds({ policy: POLICY, durationMs: DURATION_MS })), {
      seed: SEED,
      numRuns: 300,
    });
  });

  it('keeps the invariant under crossed downing when the downed side exits within the margin', () => {
    fc.assert(fc.property(crossedDowning, holds({ policy: POLICY, durationMs: DURATION_MS })), {
      seed: SEED,
      numRuns: 200,
    });
  });

  it('keeps the invariant with stalls aimed at the lease end, the old host on the slowest clock', () => {
    fc.assert(fc.property(aimedStalls, holds({ policy: POLICY, durationMs: DURATION_MS })), {
      seed: SEED,
      numRuns: 300,
    });
  });

  it("with no pause wait and nothing paused, the voters' drift margin alone keeps the invariant", () => {
    fc.assert(fc.property(unpausedEdge, holds({ policy: NO_PAUSE_WAIT, durationMs: DURATION_MS })), {
      seed: SEED,
      numRuns: 300,
    });
  });

  it('positive control (a): a voter that grants whoever asks is caught', () => {
    expectCaught('voter ignores its promise', planArb(), {
      policy: POLICY,
      decide: promiseIgnored,
      durationMs: DURATION_MS,
    });
  });

  it('positive control (b): no pause-bound wait, with pauses longer than the lease, is caught', () => {
    expectCaught(
      'pauseBoundMs 0',
      planArb({
        pauseMs: fc.integer({ min: POLICY.leaseMs, max: 3 * POLICY.leaseMs }),
        kinds: ['pause', 'cut', 'partition'],
      }),
      { policy: { ...POLICY, pauseBoundMs: 0 }, durationMs: DURATION_MS },
    );
  });

  it('positive control (b2): no pause-bound wait, with stalls aimed at the lease end within the bound, is caught', () => {
    expectCaught('pauseBoundMs 0, aimed stalls', aimedStalls, {
      policy: { ...POLICY, pauseBoundMs: 0 },
      durationMs: DURATION_MS,
    });
  });

  it('positive control (d): voters without the drift margin (maxClockDrift 0, clocks 1 % apart) are caught', () => {
    expectCaught('maxClockDrift 0', unpausedEdge, {
      policy: { ...NO_PAUSE_WAIT, maxClockDrift: 0 },
      durationMs: DURATION_MS,
    });
  });

  it('positive control (c): a base that drops downed members at once, with both sides downing each other, is caught', () => {
    expectCaught('downedCountsForMs 0', crossedDowning, {
      policy: { ...POLICY, downedCountsForMs: 0 },
      durationMs: DURATION_MS,
    });
  });

  // two joiners made up in one version, then a partition before the news reaches the host's side
  //     (role-scoped singletons: the host is not the coordinator)
  const joinThenPartition = fc.record({
    nodes: fc.integer({ min: 5, max: 7 }),
    seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    faults: fc.tuple(
      fc.record({
        kind: fc.constant('join' as const),
        at: fc.integer({ min: 1000, max: 4000 }),
        count: fc.constant(2),
        upAfterMs: fc.integer({ min: 50, max: 1000 }),
        partitionAfterUp: fc.record({
          side: fc.integer({ min: 1, max: 126 }),
          forMs: fc.integer({ min: 2000, max: 8000 }),
          delayMs: fc.integer({ min: 0, max: 40 }),
        }),
      }),
    ),
    lossRate: fc.constant(0),
    maxDelayMs: fc.integer({ min: 1, max: 20 }),
    detectMs: fc.integer({ min: 300, max: 1200 }),
    stableMs: fc.integer({ min: 300, max: 2000 }),
    minorityExits: fc.constant(true),
    extremeRates: fc.boolean(),
    roleScoped: fc.constant(true),
  });

  it('keeps the invariant when two joiners are made up just before a partition cuts the host off the news', () => {
    fc.assert(fc.property(joinThenPartition, holds({ policy: POLICY, durationMs: 12_000 })), {
      seed: SEED,
      numRuns: 500,
    });
  });
});
