export * from './cluster.js';
export * from './cluster-events.js';
export * from './downing/downing-config.js';
export * from './downing/downing-machine.js';
export * from './downing/indirectly-connected.js';
export * from './downing/resolver.js';
export * from './downing/sbr-view.js';
export * from './downing/strategies.js';
export {
  DEFAULT_DEADLINE_CONFIG,
  type DeadlineConfig,
  DeadlineFailureDetector,
} from './failure-detector/deadline.js';
export {
  createFailureDetector,
  type FailureDetector,
  type FailureDetectorConfig,
} from './failure-detector/detector.js';
export { FailureDetectorConfigError } from './failure-detector/errors.js';
export * from './failure-detector/failure-detector-machine.js';
export { HeartbeatHistory } from './failure-detector/heartbeat-history.js';
export { DEFAULT_HEARTBEAT_INTERVAL_MS } from './failure-detector/heartbeat-interval.js';
export * from './failure-detector/heartbeat-messages.js';
export * from './failure-detector/heartbeat-ring.js';
export { phi, phiCrossingMs } from './failure-detector/phi.js';
export {
  DEFAULT_PHI_ACCRUAL_CONFIG,
  type PhiAccrualConfig,
  PhiAccrualFailureDetector,
} from './failure-detector/phi-accrual.js';
export { FailureDetectorRegistry } from './failure-detector/registry.js';
export * from './membership/membership-authority.js';
export * from './membership/membership-decisions.js';
export * from './membership/membership-machine.js';
export * from './membership/membership-messages.js';
export * from './membership/membership-views.js';
export * from './messages.js';
export * from './model/config.js';
export * from './model/member.js';
export * from './model/membership.js';
export * from './model/system-actors.js';
export * from './quorum-protection.js';
export * from './receptionist/index.js';
export {
  type CheckerContext,
  type CheckerEffect,
  isOwnFinding,
  probeTargets,
  shouldMergeInto,
} from './split-brain-checker/split-brain-checker-decisions.js';
export * from './split-brain-checker/split-brain-checker-machine.js';
export * from './split-brain-checker/split-brain-checker-messages.js';
