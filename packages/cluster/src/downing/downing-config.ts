import type { FailureDetectorConfig } from '../failure-detector/detector.js';
import type { DowningStrategyName } from './resolver.js';

/** Anything that can arbitrate between sides (etcd, Kubernetes): see @doyen/lease. */
export interface SbrLease {
  acquire(owner: string): Promise<boolean>;
  release(owner: string): Promise<void>;
}

export interface SbrSettings {
  /** Count only members with this role (keep-majority, static-quorum, keep-oldest, lease-majority). */
  readonly role?: string;
  /** static-quorum: the smallest side that may keep running. */
  readonly quorumSize?: number;
  /** keep-oldest: an oldest member cut off from everyone downs itself instead of the rest. */
  readonly downIfAlone: boolean;
  /** No decision until membership and reachability were unchanged this long; default by cluster size. */
  readonly stableAfterMs?: number;
  /** Down everything if still undecided this long after stable-after (default 2× stable-after, at least 10 s); 'off' disables. */
  readonly downAllWhenUnstableMs?: number | 'off';
  /** lease-majority: the minority waits this long before trying the lease. */
  readonly acquireLeaseDelayForMinorityMs: number;
  readonly lease?: SbrLease;
  /** Singletons start on a new oldest only this long after the old one was removed; default stable-after. */
  readonly downRemovalMarginMs?: number;
}

/**
 * The part of the cluster's configuration (ClusterConfig) the split-brain resolver reads: downing
 * depends on these settings, not on the cluster module above it.
 */
export interface DowningConfig {
  readonly downing: DowningStrategyName;
  readonly sbr: SbrSettings;
  /** With the heartbeat interval: how long members downed lately are remembered. */
  readonly failureDetector: FailureDetectorConfig;
  readonly heartbeatIntervalMs: number;
}
