import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FailureDetectorConfigError } from '../../packages/cluster/src/failure-detector/errors.js';
import { HeartbeatHistory } from '../../packages/cluster/src/failure-detector/heartbeat-history.js';
import { phi, phiCrossingMs } from '../../packages/cluster/src/failure-detector/phi.js';
import {
  DEFAULT_PHI_ACCRUAL_CONFIG,
  type PhiAccrualConfig,
  PhiAccrualFailureDetector,
} from '../../packages/cluster/src/failure-detector/phi-accrual.js';

/** Feeds heartbeats at the given times, returns the detector. */
function fed(times: readonly number[], config: Partial<PhiAccrualConfig> = {}): PhiAccrualFailureDetector {
  const detector = new PhiAccrualFailureDetector(config);
  for (const t of times) detector.heartbeat(t);
  return detector;
}

const every100ms = (count: number, start = 0): number[] =>
  Array.from({ length: count }, (_, i) => start + i * 100);

/** First time (1 ms steps, from `from`) at which the detector suspects the peer. */
function firstSuspicion(detector: PhiAccrualFailureDetector, from: number, until = from + 10_000): number {
  for (let t = from; t <= until; t++) if (!detector.isAvailable(t)) return t;
  return Number.POSITIVE_INFINITY;
}

/** Checks the detector at every ms in [from, to) and at each heartbeat, returns the largest phi seen. */
function maxPhiWhileFeeding(detector: PhiAccrualFailureDetector, times: readonly number[]): number {
  let max = 0;
  let next = 0;
  const end = times[times.length - 1] ?? 0;
  for (let t = times[0] ?? 0; t <= end; t++) {
    while (next < times.length && times[next]! <= t) detector.heartbeat(times[next++]!);
    max = Math.max(max, detector.phi(t));
  }
  return max;
}

describe('phi (the formula)', () => {
  // Expected values computed by hand with Akka's two-branch form:
  // y = (t - mean) / sd, e = exp(-y (1.5976 + 0.070566 y²)), phi = -log10(e / (1 + e)) if t > mean
  // else -log10(1 - 1 / (1 + e)).
  it.each([
    { t: 500, mean: 500, sd: 100, expected: 0.3010299956639812 }, // y = 0: -log10(1/2)
    { t: 600, mean: 500, sd: 100, expected: 0.7995083208395598 }, // y = 1
    { t: 400, mean: 500, sd: 100, expected: 0.0750330321409399 }, // y = -1
    { t: 700, mean: 500, sd: 100, expected: 1.6428278854871123 }, // y = 2
    { t: 800, mean: 500, sd: 100, expected: 2.9094753264849538 }, // y = 3
    { t: 1000, mean: 500, sd: 100, expected: 7.299947394460206 }, // y = 5
    { t: 200, mean: 500, sd: 100, expected: 0.0005352745494572701 }, // y = -3
    { t: 0, mean: 500, sd: 100, expected: 2.1768922219645073e-8 }, // y = -5
    { t: 150, mean: 100, sd: 25, expected: 1.6428278854871123 }, // y = 2 again: only y matters
    { t: 160, mean: 125, sd: 10, expected: 3.7424450636249356 }, // y = 3.5
    { t: 22, mean: 20, sd: 3, expected: 0.5979503147836113 },
  ])('phi($t, $mean, $sd) = $expected', ({ t, mean, sd, expected }) => {
    expect(phi(t, mean, sd)).toBeCloseTo(expected, 12);
  });

  // Akka's PhiAccrualFailureDetectorSpec: 1 - 10^-phi approximates the normal CDF.
  it.each([
    { t: 0, cdf: 0.5 },
    { t: 6, cdf: 0.7257 },
    { t: 15, cdf: 0.9332 },
    { t: 20, cdf: 0.97725 },
    { t: 25, cdf: 0.99379 },
    { t: 35, cdf: 0.99977 },
    { t: 40, cdf: 0.99997 },
  ])('approximates the normal CDF at $t (mean 0, sd 10)', ({ t, cdf }) => {
    expect(1 - 10 ** -phi(t, 0, 10)).toBeCloseTo(cdf, 3);
  });

  it('handles outliers without overflow (Akka: phi(10, 0, 1) ~ 38, phi(-25, 0, 1) = 0)', () => {
    expect(phi(10, 0, 1)).toBeCloseTo(37.58471305287122, 10);
    expect(phi(-25, 0, 1)).toBe(0);
    // Where Akka's form gives Infinity (e underflows), this one stays finite and larger.
    expect(Number.isFinite(phi(1e6, 0, 1))).toBe(true);
    expect(phi(1e6, 0, 1)).toBeGreaterThan(phi(1e5, 0, 1));
  });

  it('is strictly increasing in the time since the last heartbeat', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -1e4, max: 1e4, noNaN: true }),
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        fc.double({ min: 0, max: 1e4, noNaN: true }),
        fc.double({ min: 1, max: 1e3, noNaN: true }),
        (t, dt, mean, sd) => {
          const [a, b] = [phi(t, mean, sd), phi(t + dt, mean, sd)];
          expect(b).toBeGreaterThanOrEqual(a);
          if (a > 1e-12 && a < 300) expect(b).toBeGreaterThan(a);
        },
      ),
    );
  });

  it('phiCrossingMs inverts phi', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.5, max: 16, noNaN: true }),
        fc.double({ min: 0, max: 5000, noNaN: true }),
        fc.double({ min: 1, max: 1000, noNaN: true }),
        (threshold, mean, sd) => {
          expect(phi(phiCrossingMs(threshold, mean, sd), mean, sd)).toBeCloseTo(threshold, 8);
        },
      ),
    );
    // The default: mean 200 + pause 300, sd 100, threshold 8 -> y* = 5.226.
    expect(phiCrossingMs(8, 500, 100)).toBeCloseTo(1022.6, 1);
  });
});

describe('HeartbeatHistory', () => {
  it('keeps the latest maxSampleSize samples', () => {
    const history = new HeartbeatHistory(3);
    for (const x of [1000, 1000, 10, 20, 30]) history.add(x);
    expect(history.size).toBe(3);
    expect(history.mean).toBe(20);
    expect(history.variance).toBeCloseTo((100 + 0 + 100) / 3, 10);
  });

  it('running mean and std dev match a recomputation over the window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.double({ min: 0, max: 5000, noNaN: true }), { minLength: 1, maxLength: 200 }),
        (max, samples) => {
          const history = new HeartbeatHistory(max);
          for (const s of samples) history.add(s);
          const window = samples.slice(-max);
          const mean = window.reduce((a, b) => a + b, 0) / window.length;
          const variance = window.reduce((a, b) => a + (b - mean) ** 2, 0) / window.length;
          expect(history.size).toBe(window.length);
          expect(history.mean).toBeCloseTo(mean, 6);
          // running sums (as Akka's) lose what a recomputation keeps: each add and eviction rounds
          // the squares' sum (~1e-16 of it), evicted samples included, so the bound scales with
          // the largest square ever added and the number of samples
          const largestSquare = Math.max(...samples.map((x) => x * x));
          const bound = 1e-12 * (largestSquare + 1) * samples.length;
          expect(Math.abs(history.variance - variance)).toBeLessThanOrEqual(bound);
        },
      ),
    );
  });

  it('nearly equal samples: the variance stays within rounding of the squares (a case fast-check found)', () => {
    const history = new HeartbeatHistory(2);
    for (const s of [4999.9999914197315, 4999.999930582964]) history.add(s);
    const exact = ((4999.9999914197315 - 4999.999930582964) / 2) ** 2;
    expect(Math.abs(history.variance - exact)).toBeLessThanOrEqual(1e-12 * 2.5e7 * 2);
    // positive control: the old check, std dev to 4 decimals, fails here (sqrt magnifies the rounding)
    expect(Math.abs(history.stdDeviation - Math.sqrt(exact))).toBeGreaterThan(0.5e-4);
  });
});

describe('PhiAccrualFailureDetector', () => {
  it('uses the LAN defaults', () => {
    expect(new PhiAccrualFailureDetector().config).toEqual({
      threshold: 8,
      maxSampleSize: 1000,
      minStdDeviationMs: 100,
      acceptableHeartbeatPauseMs: 300,
      firstHeartbeatEstimateMs: 200,
    });
    expect(DEFAULT_PHI_ACCRUAL_CONFIG.acceptableHeartbeatPauseMs).toBe(300);
  });

  it('is available and not monitoring before the first heartbeat', () => {
    const detector = new PhiAccrualFailureDetector();
    expect(detector.isMonitoring).toBe(false);
    expect(detector.lastHeartbeatMs).toBeUndefined();
    expect(detector.phi(1e9)).toBe(0);
    expect(detector.isAvailable(1e9)).toBe(true);
  });

  it('seeds the history from firstHeartbeatEstimate (mean = estimate, sd = estimate / 4)', () => {
    const detector = fed([1000], { firstHeartbeatEstimateMs: 200 });
    expect(detector.isMonitoring).toBe(true);
    expect(detector.intervalStats).toEqual({ meanMs: 200, stdDeviationMs: 50, samples: 2 });
    // sd 50 is below the 100 ms floor: phi(t) = phi(t - 1000, 200 + 300, 100); y = 2
    expect(detector.phi(1700)).toBeCloseTo(1.6428278854871123, 12);
  });

  it('computes phi from mean + pause and the std dev (hand-computed table)', () => {
    // Intervals 100, 100, ... after the seed (75, 125): mean 100, sd < 100 -> clamped to 100;
    // with a 400 ms pause, mean + pause = 500.
    const detector = fed(every100ms(11), {
      maxSampleSize: 10,
      firstHeartbeatEstimateMs: 100,
      acceptableHeartbeatPauseMs: 400,
    });
    expect(detector.intervalStats.meanMs).toBe(100);
    const last = 1000;
    expect(detector.phi(last + 500)).toBeCloseTo(0.3010299956639812, 12);
    expect(detector.phi(last + 600)).toBeCloseTo(0.7995083208395598, 12);
    expect(detector.phi(last + 800)).toBeCloseTo(2.9094753264849538, 12);
    expect(detector.phi(last + 1000)).toBeCloseTo(7.299947394460206, 12);
    expect(detector.isAvailable(last + 1022)).toBe(true);
    expect(detector.isAvailable(last + 1023)).toBe(false);
  });

  it('uses the measured std dev when it exceeds the minimum', () => {
    // Intervals alternate 50 / 350: mean 200, sd 150 (window of 10 holds five of each).
    const times = [0];
    for (let i = 0; i < 10; i++) times.push(times[times.length - 1]! + (i % 2 === 0 ? 50 : 350));
    const detector = fed(times, { maxSampleSize: 10, acceptableHeartbeatPauseMs: 0 });
    expect(detector.intervalStats.meanMs).toBeCloseTo(200, 10);
    expect(detector.intervalStats.stdDeviationMs).toBeCloseTo(150, 10);
    const last = times[times.length - 1]!;
    expect(detector.phi(last + 500)).toBeCloseTo(phi(500, 200, 150), 12);
    expect(detector.phi(last + 500)).toBeCloseTo(1.6428278854871123, 12); // y = 2
  });

  it('respects the minimum std dev for a perfectly regular peer', () => {
    const hundredMs = { firstHeartbeatEstimateMs: 100, acceptableHeartbeatPauseMs: 400 };
    const detector = fed(every100ms(2000), hundredMs); // 1999 identical intervals evict the seed: sd = 0
    expect(detector.intervalStats.stdDeviationMs).toBe(0);
    const last = 199_900;
    for (const dt of [0, 150, 300, 500, 700, 1000]) {
      expect(detector.phi(last + dt)).toBeCloseTo(phi(dt, 500, 100), 12);
    }
    // With a 1 ms floor the same history would be hair-trigger.
    const tight = fed(every100ms(2000), { ...hundredMs, minStdDeviationMs: 1 });
    expect(tight.isAvailable(last + 510)).toBe(false);
    expect(detector.isAvailable(last + 510)).toBe(true);
  });

  it('detects a silent peer (200 ms heartbeats, the default) in about one second', () => {
    const times = every100ms(200).filter((t) => t % 200 === 0);
    const last = times[times.length - 1]!;
    const detector = fed(times);
    const detectedAfter = firstSuspicion(detector, last) - last;
    expect(detectedAfter).toBeGreaterThanOrEqual(500);
    expect(detectedAfter).toBeLessThanOrEqual(1500);
    expect(detectedAfter).toBeCloseTo(phiCrossingMs(8, 500, 100), -1); // 1022.6 ms
    // The same instant as 100 ms heartbeats with a 400 ms pause: the pause absorbs the longer mean.
    const hundredMs = fed(every100ms(100), {
      firstHeartbeatEstimateMs: 100,
      acceptableHeartbeatPauseMs: 400,
    });
    const lastAt100 = 9900;
    expect(firstSuspicion(hundredMs, lastAt100) - lastAt100).toBe(detectedAfter);
    // Crashed anywhere between two heartbeats: detected 0.82-1.02 s after the crash.
    for (const crashAfter of [1, 100, 199]) {
      const fromCrash = firstSuspicion(fed(times), last + crashAfter) - (last + crashAfter);
      expect(fromCrash).toBeGreaterThanOrEqual(500);
      expect(fromCrash).toBeLessThanOrEqual(1500);
    }
  });

  it('detects a silent peer right after its first heartbeat too', () => {
    const detectedAfter = firstSuspicion(fed([5000]), 5000) - 5000;
    expect(detectedAfter).toBeGreaterThanOrEqual(500);
    expect(detectedAfter).toBeLessThanOrEqual(1500);
  });

  it('does not suspect a peer for a single 100 ms extra delay', () => {
    const times = [...every100ms(50), ...every100ms(50, 5000)]; // one 200 ms interval at 4900 -> 5000
    const detector = new PhiAccrualFailureDetector();
    expect(maxPhiWhileFeeding(detector, times)).toBeLessThan(0.01);
  });

  it('does not suspect a peer under +-20 ms jitter, even with a 100 ms stall on top', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -20, max: 20 }), { minLength: 5, maxLength: 300 }),
        fc.nat(),
        (jitter, stallAt) => {
          const stall = stallAt % jitter.length;
          const times = jitter.map((j, i) => i * 100 + j + (i >= stall ? 100 : 0));
          const detector = new PhiAccrualFailureDetector();
          expect(maxPhiWhileFeeding(detector, times)).toBeLessThan(1);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('phi never decreases while no heartbeat arrives', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 1, maxLength: 50 }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 2, maxLength: 20 }),
        (intervals, probes) => {
          const times = [0];
          for (const dt of intervals) times.push(times[times.length - 1]! + dt);
          const detector = fed(times);
          const last = times[times.length - 1]!;
          const sorted = [...probes].sort((a, b) => a - b);
          for (let i = 1; i < sorted.length; i++) {
            expect(detector.phi(last + sorted[i]!)).toBeGreaterThanOrEqual(
              detector.phi(last + sorted[i - 1]!),
            );
          }
        },
      ),
    );
  });

  it('does not learn the gap that ended a suspicion (Akka)', () => {
    const detector = fed(every100ms(20));
    const before = detector.intervalStats;
    detector.heartbeat(1900 + 5000); // back after 5 s: suspected at that moment
    expect(detector.intervalStats).toEqual(before);
    expect(detector.isAvailable(6900 + 100)).toBe(true);
    detector.heartbeat(7000);
    expect(detector.intervalStats.samples).toBe(before.samples + 1);
  });

  it('treats a clock step backwards as no time passing', () => {
    const detector = fed([1000, 1100]);
    detector.heartbeat(1050);
    expect(detector.lastHeartbeatMs).toBe(1100);
    expect(detector.phi(900)).toBe(detector.phi(1100));
  });

  it.each<[keyof PhiAccrualConfig, number]>([
    ['threshold', 0],
    ['threshold', Number.NaN],
    ['maxSampleSize', 0],
    ['maxSampleSize', 1.5],
    ['minStdDeviationMs', 0],
    ['acceptableHeartbeatPauseMs', -1],
    ['acceptableHeartbeatPauseMs', Number.POSITIVE_INFINITY],
    ['firstHeartbeatEstimateMs', 0],
  ])('rejects %s = %s with a typed error', (field, value) => {
    const attempt = () => new PhiAccrualFailureDetector({ [field]: value });
    expect(attempt).toThrow(FailureDetectorConfigError);
    expect(attempt).toThrow(new RegExp(`^invalid failure detector config: ${field} must be`));
    try {
      attempt();
    } catch (error) {
      expect(error).toBeInstanceOf(Error);
      expect((error as FailureDetectorConfigError).field).toBe(field);
      expect((error as FailureDetectorConfigError).name).toBe('FailureDetectorConfigError');
    }
  });

  it('accepts a zero acceptable pause', () => {
    expect(
      new PhiAccrualFailureDetector({ acceptableHeartbeatPauseMs: 0 }).config.acceptableHeartbeatPauseMs,
    ).toBe(0);
  });
});
