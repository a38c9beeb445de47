export * from './cluster.js';
export * from './cluster-events.js';
export * from './config.js';
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
export { HeartbeatHistory } from './failure-detector/heartbeat-history.js';
export { DEFAULT_HEARTBEAT_INTERVAL_MS } from './failure-detector/heartbeat-interval.js';
export { phi, phiCrossingMs } from './failure-detector/phi.js';
export {
  DEFAULT_PHI_ACCRUAL_CONFIG,
  type PhiAccrualConfig,
  PhiAccrualFailureDetector,
} from './failure-detector/phi-accrual.js';
export { FailureDetectorRegistry } from './failure-detector/registry.js';
export * from './failure-detector-machine.js';
export * from './heartbeat-ring.js';
export * from './member.js';
export * from './membership.js';
export * from './membership-authority.js';
export * from './membership-machine.js';
export * from './membership-protocol.js';
export * from './membership-views.js';
export * from './messages.js';
export * from './quorum-protection.js';
export * from './receptionist/index.js';
export * from './split-brain-checker.js';
