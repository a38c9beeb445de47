/**
 * `GET /cluster/shards` (and `/cluster/shards/{type}`), in Akka Management's shape: per entity
 * type a region whose shards are the partitions held here with their entity counts
 * (`{ regions: [{ shards: [{ shardId, numEntities }] }] }`), plus what doyen knows beside it.
 */
export interface ShardInfo {
  /** The partition number, as a string (Akka's shard ids are strings). */
  readonly shardId: string;
  readonly numEntities: number;
}

export interface ShardRegionInfo {
  readonly typeName: string;
  /** False on a node without the type's role: it only routes. */
  readonly hosts: boolean;
  readonly role: string | null;
  readonly shards: readonly ShardInfo[];
}

export interface ShardRegionsView {
  readonly self: string;
  readonly tableVersion: number;
  /** Partitions active here (every entity type runs on the same partitions). */
  readonly activePartitions: readonly number[];
  readonly bufferedMessages: number;
  readonly regions: readonly ShardRegionInfo[];
}
