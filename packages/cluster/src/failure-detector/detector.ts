import { type DeadlineConfig, DeadlineFailureDetector } from './deadline.js';
import { FailureDetectorConfigError } from './errors.js';
import { phiCrossingMs } from './phi.js';
import { type PhiAccrualConfig, PhiAccrualFailureDetector } from './phi-accrual.js';

/**
 * Watches one peer through the heartbeats received from it. Pure and clock-free: every call is given
 * the current time in ms, which must come from one monotonic clock (performance.now(), or the
 * simulated clock in tests); a step backwards is treated as no time having passed. This is Akka's
 * FailureDetector contract, minus the clock.
 */
export interface FailureDetector {
  readonly kind: FailureDetectorConfig['kind'];
  /** Records a heartbeat from the peer received at `nowMs`. */
  heartbeat(nowMs: number): void;
  /**
   * false once the peer is suspected. A detector that has not seen any heartbeat yet answers true:
   * a peer is only judged after it has been heard from once (Akka: "unmanaged connections are
   * healthy"), so a joining node is not marked unreachable before its first heartbeat arrives.
   */
  isAvailable(nowMs: number): boolean;
  /** true after the first heartbeat. */
  readonly isMonitoring: boolean;
  /** Time of the latest heartbeat, undefined before the first. */
  readonly lastHeartbeatMs: number | undefined;
}

/** Selects a detector; fields left out take the defaults of that detector. */
export type FailureDetectorConfig =
  | ({ readonly kind: 'phi-accrual' } & Partial<PhiAccrualConfig>)
  | ({ readonly kind: 'deadline' } & Partial<DeadlineConfig>);

export function createFailureDetector(
  config: FailureDetectorConfig = { kind: 'phi-accrual' },
): FailureDetector {
  switch (config.kind) {
    case 'phi-accrual':
      return new PhiAccrualFailureDetector(config);
    case 'deadline':
      return new DeadlineFailureDetector(config);
    default: {
      // Reachable from untyped input (a config file): say what was expected.
      const kind: unknown = (config as { kind: unknown }).kind;
      throw new FailureDetectorConfigError('kind', kind, "'phi-accrual' or 'deadline'");
    }
  }
}

/**
 * The longest silence before a steadily heartbeating peer is found unreachable: the detector's
 * crossing for the steady mean (one interval) plus one interval, as peers are judged once per
 * interval. A peer silent since before some instant is found unreachable by then + this.
 */
export function detectionTimeMs(config: FailureDetectorConfig, heartbeatIntervalMs: number): number {
  if (config.kind === 'deadline') return new DeadlineFailureDetector(config).deadlineMs + heartbeatIntervalMs;
  const c = new PhiAccrualFailureDetector(config).config;
  const mean = heartbeatIntervalMs + c.acceptableHeartbeatPauseMs;
  return phiCrossingMs(c.threshold, mean, c.minStdDeviationMs) + heartbeatIntervalMs;
}
