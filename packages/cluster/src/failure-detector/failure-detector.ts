/** The detectors there are (`createFailureDetector` in detector.ts picks one from its config). */
export type FailureDetectorKind = 'phi-accrual' | 'deadline';

/**
 * Watches one peer through the heartbeats received from it. Pure and clock-free: every call is given
 * the current time in ms, which must come from one monotonic clock (performance.now(), or the
 * simulated clock in tests); a step backwards is treated as no time having passed. This is Akka's
 * FailureDetector contract, minus the clock.
 */
export interface FailureDetector {
  readonly kind: FailureDetectorKind;
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
