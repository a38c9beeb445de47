import { requireNonNegative, requirePositive, requirePositiveInteger } from './errors.js';
import type { FailureDetector } from './failure-detector.js';
import { HeartbeatHistory } from './heartbeat-history.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from './heartbeat-interval.js';
import { phi } from './phi.js';

export interface PhiAccrualConfig {
  /** Suspect the peer once phi reaches this (phi = 8: odds of 1e-8 that the peer is only late). */
  readonly threshold: number;
  /** Inter-arrival samples kept; older ones are forgotten. */
  readonly maxSampleSize: number;
  /** Floor for the standard deviation, so a very regular history does not make phi hair-trigger. */
  readonly minStdDeviationMs: number;
  /** Added to the mean interval: pauses this long (GC, event-loop stalls) are expected, not suspect. */
  readonly acceptableHeartbeatPauseMs: number;
  /** Assumed mean interval before any has been measured (use the heartbeat interval). */
  readonly firstHeartbeatEstimateMs: number;
}

/**
 * LAN defaults for heartbeats every 200 ms. Once heartbeats flow steadily the measured deviation of a
 * LAN (a few ms) is below the floor, so the detector sees mean 200 ms and std dev = min 100 ms, and a
 * silent peer is suspected when (t - (200 + pause)) / 100 reaches y* = 5.226, the root of
 * y (1.5976 + 0.070566 y²) = ln(10^8 - 1) = 18.42 for threshold 8. With pause 300 ms that is
 * t = 200 + 300 + 522.6 = 1022.6 ms after the last heartbeat, i.e. 0.82-1.02 s after a crash: the
 * same instant as 100 ms heartbeats with a 400 ms pause, for half the frames (the interval moves the
 * mean, the pause moves it back). A 100 ms event-loop stall turns one interval into 300 ms:
 * y = (300 - 500) / 100 = -2 gives phi = 0.01, far from 8; a stall must exceed ~820 ms to be
 * suspected. Threshold 8 and the 100 ms floor are Akka's cluster defaults; Akka's 3 s pause is for
 * its 1 s interval, scaled down here. 1000 samples is Akka's window, 200 s of history.
 */
export const DEFAULT_PHI_ACCRUAL_CONFIG: PhiAccrualConfig = Object.freeze({
  threshold: 8,
  maxSampleSize: 1000,
  minStdDeviationMs: 100,
  acceptableHeartbeatPauseMs: 300,
  firstHeartbeatEstimateMs: DEFAULT_HEARTBEAT_INTERVAL_MS,
});

/**
 * The phi accrual failure detector (Hayashibara et al. 2004) as in Akka's
 * PhiAccrualFailureDetector: instead of a yes/no timeout it reports how unlikely the current silence
 * is given the inter-arrival times seen so far, so it adapts to each peer's network and load.
 */
export class PhiAccrualFailureDetector implements FailureDetector {
  readonly kind = 'phi-accrual';
  readonly config: PhiAccrualConfig;
  readonly #history: HeartbeatHistory;
  #lastHeartbeatMs: number | undefined;

  constructor(config: Partial<PhiAccrualConfig> = {}) {
    const d = DEFAULT_PHI_ACCRUAL_CONFIG;
    this.config = Object.freeze({
      threshold: config.threshold ?? d.threshold,
      maxSampleSize: config.maxSampleSize ?? d.maxSampleSize,
      minStdDeviationMs: config.minStdDeviationMs ?? d.minStdDeviationMs,
      acceptableHeartbeatPauseMs: config.acceptableHeartbeatPauseMs ?? d.acceptableHeartbeatPauseMs,
      firstHeartbeatEstimateMs: config.firstHeartbeatEstimateMs ?? d.firstHeartbeatEstimateMs,
    });
    requirePositive('threshold', this.config.threshold);
    requirePositiveInteger('maxSampleSize', this.config.maxSampleSize);
    requirePositive('minStdDeviationMs', this.config.minStdDeviationMs);
    requireNonNegative('acceptableHeartbeatPauseMs', this.config.acceptableHeartbeatPauseMs);
    requirePositive('firstHeartbeatEstimateMs', this.config.firstHeartbeatEstimateMs);
    this.#history = new HeartbeatHistory(this.config.maxSampleSize);
  }

  heartbeat(nowMs: number): void {
    const last = this.#lastHeartbeatMs;
    if (last === undefined) {
      // Akka's seed: two samples at estimate ± estimate/4 give mean = estimate, std dev = estimate/4,
      // so phi is meaningful from the first heartbeat on.
      const estimate = this.config.firstHeartbeatEstimateMs;
      this.#history.add(estimate - estimate / 4);
      this.#history.add(estimate + estimate / 4);
    } else if (this.isAvailable(nowMs)) {
      this.#history.add(Math.max(0, nowMs - last));
    }
    // Otherwise (Akka): the gap that ends a suspicion is an outage, not a sample; learning it would
    // inflate mean and deviation and slow down the next detection.
    this.#lastHeartbeatMs = last === undefined ? nowMs : Math.max(last, nowMs);
  }

  /** The suspicion level at `nowMs`; 0 before the first heartbeat. */
  phi(nowMs: number): number {
    const last = this.#lastHeartbeatMs;
    if (last === undefined) return 0;
    const { acceptableHeartbeatPauseMs, minStdDeviationMs } = this.config;
    const stdDeviation = Math.max(this.#history.stdDeviation, minStdDeviationMs);
    return phi(Math.max(0, nowMs - last), this.#history.mean + acceptableHeartbeatPauseMs, stdDeviation);
  }

  isAvailable(nowMs: number): boolean {
    return this.phi(nowMs) < this.config.threshold;
  }

  get isMonitoring(): boolean {
    return this.#lastHeartbeatMs !== undefined;
  }

  get lastHeartbeatMs(): number | undefined {
    return this.#lastHeartbeatMs;
  }

  /** Mean and (unclamped) standard deviation of the recorded intervals, for logs and metrics. */
  get intervalStats(): {
    readonly meanMs: number;
    readonly stdDeviationMs: number;
    readonly samples: number;
  } {
    const h = this.#history;
    return { meanMs: h.mean, stdDeviationMs: h.stdDeviation, samples: h.size };
  }
}
