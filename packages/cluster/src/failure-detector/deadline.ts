import { requireNonNegative, requirePositive } from './errors.js';
import type { FailureDetector } from './failure-detector.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from './heartbeat-interval.js';

export interface DeadlineConfig {
  /** Extra silence tolerated beyond one heartbeat interval (GC, event-loop stalls). */
  readonly acceptableHeartbeatPauseMs: number;
  /** Interval at which the peer sends heartbeats. */
  readonly heartbeatIntervalMs: number;
}

/**
 * 200 ms heartbeats and 800 ms of pause: a silent peer is suspected 1 s after its last heartbeat,
 * the same ~1 s as the phi accrual defaults, tolerating stalls of up to 800 ms.
 */
export const DEFAULT_DEADLINE_CONFIG: DeadlineConfig = Object.freeze({
  acceptableHeartbeatPauseMs: 800,
  heartbeatIntervalMs: DEFAULT_HEARTBEAT_INTERVAL_MS,
});

/**
 * A plain timeout, as Akka's DeadlineFailureDetector and the TimeoutBasedFailureDetector of the
 * Emergent Leader seed: available while now < last heartbeat + acceptableHeartbeatPause +
 * heartbeatInterval, unavailable from that instant on. Predictable where the phi detector is
 * adaptive; useful when heartbeat timing is known to be irregular (e.g. piggy-backed on traffic).
 */
export class DeadlineFailureDetector implements FailureDetector {
  readonly kind = 'deadline';
  readonly config: DeadlineConfig;
  /** Silence after which the peer is suspected. */
  readonly deadlineMs: number;
  #lastHeartbeatMs: number | undefined;

  constructor(config: Partial<DeadlineConfig> = {}) {
    const d = DEFAULT_DEADLINE_CONFIG;
    this.config = Object.freeze({
      acceptableHeartbeatPauseMs: config.acceptableHeartbeatPauseMs ?? d.acceptableHeartbeatPauseMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs ?? d.heartbeatIntervalMs,
    });
    requireNonNegative('acceptableHeartbeatPauseMs', this.config.acceptableHeartbeatPauseMs);
    requirePositive('heartbeatIntervalMs', this.config.heartbeatIntervalMs);
    this.deadlineMs = this.config.acceptableHeartbeatPauseMs + this.config.heartbeatIntervalMs;
  }

  heartbeat(nowMs: number): void {
    const last = this.#lastHeartbeatMs;
    this.#lastHeartbeatMs = last === undefined ? nowMs : Math.max(last, nowMs);
  }

  isAvailable(nowMs: number): boolean {
    const last = this.#lastHeartbeatMs;
    return last === undefined || nowMs < last + this.deadlineMs;
  }

  get isMonitoring(): boolean {
    return this.#lastHeartbeatMs !== undefined;
  }

  get lastHeartbeatMs(): number | undefined {
    return this.#lastHeartbeatMs;
  }
}
