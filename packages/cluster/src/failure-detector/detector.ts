import { type DeadlineConfig, DeadlineFailureDetector } from './deadline.js';
import { FailureDetectorConfigError } from './errors.js';
import type { FailureDetector } from './failure-detector.js';
import { phiCrossingMs } from './phi.js';
import { type PhiAccrualConfig, PhiAccrualFailureDetector } from './phi-accrual.js';

export type { FailureDetector, FailureDetectorKind } from './failure-detector.js';

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
