import { InvalidConfigError, type NodeAddress } from '@doyen/core';
import type { FailureDetectorConfig } from './failure-detector/detector.js';
import { DEFAULT_HEARTBEAT_RING_CONFIG, type HeartbeatRingConfig } from './heartbeat-ring.js';

/** How failed members are taken out. `auto` is the seed's: the coordinator downs what it cannot reach. */
export type DowningMode = 'auto' | 'manual';

/**
 * Everything the cluster protocol can be tuned with, one sentence per knob. Defaults aim at a
 * LAN: a killed node is detected in about a second and failover completes in a few.
 */
export interface ClusterConfig {
  /** Seed nodes; the node whose own address is the first seed may form the cluster. */
  readonly seeds: readonly NodeAddress[];
  /** Human-friendly name shown in /cluster (defaults to host:port). */
  readonly name?: string;
  readonly roles: readonly string[];
  readonly downing: DowningMode;
  /** How long one join attempt waits for a welcome. */
  readonly joinTimeoutMs: number;
  /** Attempts before giving up with JoinFailedError (the seed uses 5). Infinity retries forever. */
  readonly maxJoinAttempts: number;
  /** Pause between attempts: doubles from min to max. */
  readonly joinBackoffMinMs: number;
  readonly joinBackoffMaxMs: number;
  /** The seed's ResultsCollector timeout: the joiner is answered after this even without every ack. */
  readonly ackTimeoutMs: number;
  /** Members ask for a newer membership this often (missed-update catch-up). */
  readonly pullIntervalMs: number;
  /** The coordinator advances leaving/exiting members this often (Akka's leader actions). */
  readonly leaderActionsIntervalMs: number;
  /** A leaving node stops waiting for the coordinator after this long and exits anyway. */
  readonly leaveTimeoutMs: number;
  /** Heartbeats go out this often. */
  readonly heartbeatIntervalMs: number;
  readonly failureDetector: FailureDetectorConfig;
  readonly heartbeatRing: HeartbeatRingConfig;
}

export const defaultClusterConfig: Omit<ClusterConfig, 'seeds'> = {
  roles: [],
  downing: 'auto',
  joinTimeoutMs: 1000,
  maxJoinAttempts: 10,
  joinBackoffMinMs: 250,
  joinBackoffMaxMs: 4000,
  ackTimeoutMs: 2000,
  pullIntervalMs: 1000,
  leaderActionsIntervalMs: 100,
  leaveTimeoutMs: 10_000,
  heartbeatIntervalMs: 100,
  failureDetector: { kind: 'phi-accrual' },
  heartbeatRing: DEFAULT_HEARTBEAT_RING_CONFIG,
};

export function resolveClusterConfig(
  partial: Partial<ClusterConfig> & { seeds: readonly NodeAddress[] },
): ClusterConfig {
  const c: ClusterConfig = { ...defaultClusterConfig, ...partial };
  if (c.seeds.length === 0)
    throw new InvalidConfigError('cluster.seeds: at least one seed address is required');
  for (const key of [
    'joinTimeoutMs',
    'joinBackoffMinMs',
    'joinBackoffMaxMs',
    'ackTimeoutMs',
    'pullIntervalMs',
    'leaderActionsIntervalMs',
    'leaveTimeoutMs',
    'heartbeatIntervalMs',
  ] as const) {
    if (!(c[key] > 0)) throw new InvalidConfigError(`cluster.${key} must be > 0, got ${c[key]}`);
  }
  if (!(c.maxJoinAttempts >= 1)) throw new InvalidConfigError('cluster.maxJoinAttempts must be >= 1');
  if (c.downing !== 'auto' && c.downing !== 'manual') {
    throw new InvalidConfigError(`cluster.downing must be auto or manual, got ${String(c.downing)}`);
  }
  return c;
}
