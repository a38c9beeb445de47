import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Cluster } from '@doyen/cluster';
import type { ActorSystem } from '@doyen/core';
import type { ElectedCoordinator } from '@doyen/election';
import type { PartitionService } from '@doyen/partitions';
import type { ShardRegionsView } from '@doyen/sharding';
import type { ClusterSingletons } from '@doyen/singleton';
import type { SeedNodesView } from './bootstrap/seed-nodes.js';
import type { HealthChecks } from './health-checks.js';

/** Extra routes other packages add (singletons, partitions, the inspector page). */
export type Route = (
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
) => boolean | Promise<boolean>;

/** Takes over an HTTP upgrade (WebSocket) request; returns true when it handled it. */
export type UpgradeRoute = (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** The node as the management endpoint reads it, on every request: it changes when the node restarts. */
export interface ManagedNode {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  readonly singletons?: ClusterSingletons;
  readonly partitions?: PartitionService | undefined;
  /** Sharded entities (`GET /cluster/shards`); absent with partitions off. */
  readonly sharding?: { shards(): ShardRegionsView } | undefined;
  readonly coordinator?: ElectedCoordinator | undefined;
  /**
   * True while the node is still looking for its cluster (discovery): it has no actor system or
   * cluster yet, so every route but the bootstrap's and the health checks answers 503.
   */
  readonly bootstrapping?: boolean;
  /** What `GET /bootstrap/seed-nodes` answers (absent: the route is not served). */
  seedNodes?(): SeedNodesView;
  /** The app's readiness checks: `/health/ready` needs every one to pass besides being up. */
  readonly health?: HealthChecks;
}
