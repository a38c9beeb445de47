import type { Cluster } from '@doyen/cluster';
import type { ActorSystem } from '@doyen/core';
import type { PartitionService } from '@doyen/partitions';
import { type HostLeaseSettings, OwnerLeases } from '@doyen/singleton';
import { stopWhenOwnerFenced } from './owner-fenced.js';
import { startPartitionKeeper } from './partition-keeper/keeper-machine.js';
import type { RememberOptions } from './remember/remembered-entities.js';
import { Sharding } from './sharding.js';

export interface StartShardingOptions {
  /** The role partitions are owned by (`partitions.role`); entity types with a role must name it. */
  readonly partitionRole?: string;
  /** The host lease's timing (the node's `hostLease` settings): the owner lease runs on it. */
  readonly hostLease?: HostLeaseSettings;
  /** Drains running at once on this node (default 16). */
  readonly maxConcurrentHandOffs?: number;
  /** Remember entities: the store and the restart rate. */
  readonly remember?: RememberOptions;
  /**
   * This incarnation's owner lease was fenced: every entity has stopped; the node should leave
   * and restart (a doyen node does what its `onDowned` policy says).
   */
  readonly onOwnerFenced?: () => void;
}

/**
 * Sharding as a node runs it: the runtime, this node's owner lease and the partition keeper
 * that decides, from both and the agreed table, which partitions are active here.
 * `stop()` ends all three.
 */
export function startSharding(
  system: ActorSystem,
  cluster: Cluster,
  partitions: PartitionService,
  options: StartShardingOptions = {},
): Sharding {
  const leases = new OwnerLeases(system, cluster, options.hostLease);
  const sharding = new Sharding(system, cluster, partitions, {
    ...(options.partitionRole !== undefined ? { partitionRole: options.partitionRole } : {}),
    ...(options.remember ? { remember: options.remember } : {}),
    startKeeper: (host) =>
      startPartitionKeeper({
        system,
        cluster,
        tables: partitions,
        partitionCount: partitions.partitionCount,
        leases,
        // the allocator names only members with the partitions' role
        mayOwn: options.partitionRole === undefined || cluster.self.roles.includes(options.partitionRole),
        host,
        ...(options.maxConcurrentHandOffs !== undefined
          ? { maxConcurrentHandOffs: options.maxConcurrentHandOffs }
          : {}),
      }),
    onStop: () => {
      stopWatching();
      leases.stop();
    },
  });
  const stopWatching = stopWhenOwnerFenced(leases, sharding.region, system.logger, () =>
    options.onOwnerFenced?.(),
  );
  return sharding;
}
