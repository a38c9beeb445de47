export { EntityRef } from './entity-ref.js';
export {
  type EntityInput,
  type EntityTypeOptions,
  MAX_ENTITY_ID_BYTES,
} from './entity-type.js';
export {
  EntityTypeTakenError,
  InvalidEntityIdError,
  InvalidEntityTypeNameError,
  UnknownEntityTypeError,
  UnregisteredEntityMessageError,
} from './errors.js';
export { type OwnerFencedPort, stopWhenOwnerFenced } from './owner-fenced.js';
export type * from './partition-keeper/keeper-host.js';
export type { EntitySnapshot, PassivationReason } from './region/entity-hosting.js';
export {
  ACTIVATED_EVENT,
  PARTITION_PASSIVATED_EVENT,
  PASSIVATED_EVENT,
  perEntityLines,
} from './region/entity-log-lines.js';
export { type RefusalReason, Region, type RegionListener } from './region/region.js';
export { type EntityEnvelope, MAX_HOPS, REGION_PATH } from './region/region-messages.js';
export type { RoutedMessage } from './region/routed-message.js';
export { EtcdRememberStore, type EtcdRememberStoreOptions } from './remember/etcd-remember-store.js';
export { MemoryRememberStore, type RememberChange, type RememberStore } from './remember/remember-store.js';
export {
  DEFAULT_RESTARTS_PER_SECOND,
  RememberedEntities,
  type RememberOptions,
} from './remember/remembered-entities.js';
export type { ShardInfo, ShardRegionInfo, ShardRegionsView } from './shard-regions-view.js';
export { type KeeperStarter, type ShardedEntities, Sharding, type ShardingOptions } from './sharding.js';
export { type StartShardingOptions, startSharding } from './start-sharding.js';
