import { InvalidConfigError, type NodeAddress } from '@doyen/core';
import type { SbrSettings } from '../downing/downing-config.js';
import type { DowningStrategyName } from '../downing/resolver.js';
import type { FailureDetectorConfig } from '../failure-detector/detector.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from '../failure-detector/heartbeat-interval.js';
import {
  DEFAULT_HEARTBEAT_RING_CONFIG,
  type HeartbeatRingConfig,
} from '../failure-detector/heartbeat-ring.js';

/**
 * How failed members are taken out. `auto` is the seed's availability-first mode (the
 * coordinator downs what it cannot reach; split brains heal later by merging); `manual` leaves
 * it to an operator; the rest are the Akka split-brain resolver strategies.
 */
export type DowningMode = DowningStrategyName;

/** Every downing mode, for validation at the edges (config files, flags). */
export const DOWNING_MODES: readonly DowningMode[] = [
  'auto',
  'manual',
  'keep-majority',
  'static-quorum',
  'keep-oldest',
  'down-all',
  'lease-majority',
];

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
  readonly sbr: SbrSettings;
  /**
   * Whether this node may form a new cluster when it is the first seed and nobody answers.
   * false for a restarted incarnation: it rejoins the cluster it knew, never forms an island.
   */
  readonly mayFormCluster: boolean;
  /**
   * The operator's seed list, kept across incarnations (a restart joins through the members it
   * knew, `seeds`, but the first node of this list stays the one that may form). Its first node
   * forms a new cluster, even as a restarted incarnation, once every other node of the list and
   * a strict majority of `lastMembers` have asked it to join within the last two attempts and no
   * member answered: positive evidence that no cluster is left (a total downing), where silence
   * alone could be a partition. Defaults to `seeds` where `mayFormCluster` holds, else to none
   * (the rule off).
   */
  readonly formingSeeds?: readonly NodeAddress[];
  /**
   * The members the previous incarnation last knew (its last membership's members and failed
   * ones, downed included: those are the ones that may be restarting), by address. The first
   * forming seed re-forms only when it and the nodes of this list that asked it to join are a
   * strict majority of this list plus itself: a live side holding half of them or more is made
   * of members, which never ask, so it cannot be outvoted. Unset (a first start): no re-forming.
   */
  readonly lastMembers?: readonly NodeAddress[];
  /** How long one join attempt waits for a welcome. */
  readonly joinTimeoutMs: number;
  /** Attempts before giving up with JoinFailedError (the seed uses 5). Infinity retries forever. */
  readonly maxJoinAttempts: number;
  /** Pause between attempts: doubles from min to max. */
  readonly joinBackoffMinMs: number;
  readonly joinBackoffMaxMs: number;
  /** The seed's ResultsCollector timeout: the joiner is answered after this even without every ack. */
  readonly ackTimeoutMs: number;
  /**
   * Members ask the coordinator for a newer membership this often: only a backstop, since every
   * heartbeat carries its sender's membership version and a member that sees a newer one pulls
   * at once. At 5 s, the coordinator of 50 idle nodes receives ~10 pulls a second, not ~49.
   */
  readonly pullIntervalMs: number;
  /**
   * `membership.pull`s each peer may have answered per second (a token bucket on the system's
   * clock, bursts of as many): each is answered with the whole membership, so a peer pulling in
   * a loop made this node send hundreds of thousands of them. Beyond: dropped and counted
   * (`doyen_remote_rate_limited_total`). Infinity turns the limit off.
   */
  readonly pullsPerPeerPerSecond: number;
  /**
   * While some member is leaving, exiting or stuck joining, the coordinator advances it this
   * often (Akka's leader actions); with nothing to do, no timer runs.
   */
  readonly leaderActionsIntervalMs: number;
  /** A leaving node stops waiting for the coordinator after this long and exits anyway. */
  readonly leaveTimeoutMs: number;
  /** Hazelcast's minimum cluster size: `requireQuorum()` refuses work below it (1 = off). */
  readonly minimumClusterSize: number;
  /** Under `auto`, the coordinator probes failed members' addresses this often (split-brain checker). */
  readonly splitBrainProbeIntervalMs: number;
  /** Heartbeats go out this often. */
  readonly heartbeatIntervalMs: number;
  /**
   * A member not heard from yet (just admitted, still starting, its connections still being made)
   * is judged this much later than one already heard (Akka's expected-response-after): on a loaded
   * host a newcomer's first heartbeat can take seconds, and it must not look dead for that. A
   * member that never heartbeats is found unreachable this long after a normal detection.
   */
  readonly firstHeartbeatGraceMs: number;
  readonly failureDetector: FailureDetectorConfig;
  readonly heartbeatRing: HeartbeatRingConfig;
}

export const defaultClusterConfig: Omit<ClusterConfig, 'seeds'> = {
  roles: [],
  downing: 'keep-majority',
  sbr: { downIfAlone: true, acquireLeaseDelayForMinorityMs: 2000 },
  mayFormCluster: true,
  joinTimeoutMs: 1000,
  maxJoinAttempts: 10,
  joinBackoffMinMs: 250,
  joinBackoffMaxMs: 4000,
  ackTimeoutMs: 2000,
  pullIntervalMs: 5000,
  pullsPerPeerPerSecond: 10,
  leaderActionsIntervalMs: 100,
  leaveTimeoutMs: 10_000,
  heartbeatIntervalMs: DEFAULT_HEARTBEAT_INTERVAL_MS,
  firstHeartbeatGraceMs: 3000,
  splitBrainProbeIntervalMs: 1000,
  minimumClusterSize: 1,
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
    'splitBrainProbeIntervalMs',
  ] as const) {
    if (!(c[key] > 0)) throw new InvalidConfigError(`cluster.${key} must be > 0, got ${c[key]}`);
  }
  if (!(c.pullsPerPeerPerSecond >= 1))
    throw new InvalidConfigError(
      `cluster.pullsPerPeerPerSecond must be >= 1 (or Infinity), got ${c.pullsPerPeerPerSecond}`,
    );
  if (!(c.firstHeartbeatGraceMs >= 0))
    throw new InvalidConfigError(
      `cluster.firstHeartbeatGraceMs must be >= 0, got ${c.firstHeartbeatGraceMs}`,
    );
  if (!(Number.isInteger(c.minimumClusterSize) && c.minimumClusterSize >= 1)) {
    throw new InvalidConfigError('cluster.minimumClusterSize must be an integer >= 1');
  }
  if (!(c.maxJoinAttempts >= 1)) throw new InvalidConfigError('cluster.maxJoinAttempts must be >= 1');
  const modes = DOWNING_MODES;
  if (!modes.includes(c.downing)) {
    throw new InvalidConfigError(
      `cluster.downing must be one of ${modes.join(', ')}; got ${String(c.downing)}`,
    );
  }
  const sbr = { ...defaultClusterConfig.sbr, ...partial.sbr };
  if (c.downing === 'static-quorum' && !(Number.isInteger(sbr.quorumSize) && (sbr.quorumSize ?? 0) >= 1)) {
    throw new InvalidConfigError('static-quorum needs sbr.quorumSize >= 1');
  }
  if (c.downing === 'lease-majority' && !sbr.lease) {
    throw new InvalidConfigError(
      'lease-majority needs sbr.lease (for example an EtcdLease from @doyen/lease)',
    );
  }
  return { ...c, sbr };
}
