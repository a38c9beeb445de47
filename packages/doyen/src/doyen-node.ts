import type { Cluster, ClusterEvent } from '@doyen/cluster';
import type { ActorRef, ActorSystem, Logger, Message } from '@doyen/core';
import type { ElectedCoordinator } from '@doyen/election';
import type { PartitionService } from '@doyen/partitions';
import type { Sharding } from '@doyen/sharding';
import type { ClusterSingletons } from '@doyen/singleton';
import type { WsTransport } from '@doyen/wire';
import type { CoordinatedShutdown } from './coordinated-shutdown.js';
import type { HealthChecks } from './health-checks.js';
import type { NodeReceptionist } from './incarnation-subscriptions.js';
import type { ManagementServer } from './management-http.js';

/** Why a node stopped: asked to (signal, API, HTTP), downed with `onDowned: 'exit'`, or closed. */
export type StopReason = 'shutdown' | 'downed' | 'closed';

export interface DoyenNode {
  /** The current incarnation's transport, system and cluster (they change when the node restarts). */
  readonly transport: WsTransport;
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  /** Register cluster singletons here (on every node); `register` returns the proxy ref. */
  readonly singletons: ClusterSingletons;
  /**
   * Finding actors by `ServiceKey` across the cluster: `register` (in `setup`, so registrations
   * come back with each incarnation), `find`, `subscribe` (kept across incarnations).
   */
  readonly receptionist: NodeReceptionist;
  /**
   * A ref from an actor address. `doyen://c@host:port/user/inbox` (no `#uid`) follows the node at
   * host:port: each send goes to the incarnation that is a member there now, or becomes a dead
   * letter (`no-member-at-address`). With `#uid`, that incarnation only (as `system.refFor`).
   */
  refFor<M extends Message = Message>(address: string): ActorRef<M>;
  /**
   * Cluster events of this node in every incarnation (re-attached after a restart), unlike
   * `node.cluster.subscribe`, whose cluster ends with its incarnation. Returns the unsubscribe.
   */
  subscribe(listener: (event: ClusterEvent) => void): () => void;
  /** The partition table and key routing (undefined with `partitions: { count: 0 }`). */
  readonly partitions: PartitionService | undefined;
  /**
   * Sharded entities (undefined with `partitions: { count: 0 }`): `register` a type in `setup`
   * (on every node, so it comes back with each incarnation), then `ref(id).send` / `.ask`.
   */
  readonly sharding: Sharding | undefined;
  /** The elected coordinator with `coordinator: 'quorum' | 'etcd'` (undefined: the oldest coordinates). */
  readonly coordinator: ElectedCoordinator | undefined;
  readonly http: ManagementServer | undefined;
  /** The app's readiness checks (`addReadinessCheck`): `/health/ready` needs them all to pass. */
  readonly health: HealthChecks;
  readonly logger: Logger;
  /** How many incarnations this node has run (1 until it restarts after a downing or a merge). */
  readonly incarnations: number;
  /**
   * The coordinated shutdown: add tasks to its phases (`before-leave`, `leave`, `hand-over`,
   * `drain`, `stop-actors`, `close`); `shutdown()` runs them.
   */
  readonly coordinatedShutdown: CoordinatedShutdown;
  /**
   * Stops gracefully through the coordinated shutdown's phases: leaves the cluster (its
   * singletons handed over), drains and stops the app's actors, then closes everything. Each
   * phase is bounded by its timeout.
   */
  shutdown(reason?: string): Promise<void>;
  /** Closes at once, without leaving: what a crash looks like to the others. */
  close(): Promise<void>;
  /** Resolves once the node has stopped for good, with the reason. */
  readonly closed: Promise<StopReason>;
}
