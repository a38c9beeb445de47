export {
  type ClusterEvent,
  InvalidServiceKeyError,
  JoinFailedError,
  type ListingListener,
  NotEnoughMembersError,
  Receptionist,
  ReceptionistRefNotLocalError,
  ServiceKey,
} from '@doyen/cluster';
// The batteries-included entry also re-exports what users of a node touch most.
export * from '@doyen/core';
export { PartitionService, partitionOf } from '@doyen/partitions';
export {
  type EntityInput,
  EntityRef,
  type EntityTypeOptions,
  type ShardedEntities,
  Sharding,
  type ShardRegionsView,
} from '@doyen/sharding';
export { ClusterSingletons, type SingletonOptions } from '@doyen/singleton';
export {
  type BootstrapDecision,
  type BootstrapSettings,
  type BootstrapState,
  decide as decideBootstrap,
} from './bootstrap/bootstrap-decision.js';
export * from './bootstrap/discovery.js';
export { SEED_NODES_PATH, type SeedNodesView } from './bootstrap/seed-nodes.js';
export { ConfigProblemsError, type LoadNodeConfigOptions, loadNodeConfig } from './config-loader.js';
export * from './coordinated-shutdown.js';
export * from './doyen-node.js';
export * from './fault-injection.js';
export * from './health-checks.js';
export * from './http-json.js';
export * from './incarnation-subscriptions.js';
export * from './inspector/index.js';
export * from './management-guard.js';
export * from './management-http.js';
export * from './management-route.js';
export * from './member-path-ref.js';
export * from './members-api.js';
export { MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_CLIENT, membersRoute } from './members-routes.js';
export * from './node-config.js';
export * from './node-logger.js';
export * from './secret-sources.js';
export * from './signal-handlers.js';
export * from './start-node.js';
