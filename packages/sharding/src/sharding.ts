import { type Cluster, type Membership, memberKey } from '@doyen/cluster';
import { type ActorRef, type ActorSystem, InvalidConfigError, type Message } from '@doyen/core';
import type { PartitionService, PartitionTable } from '@doyen/partitions';
import type { AnyActorLogic, EventFromLogic } from 'xstate';
import { EntityRef, entityRefHost } from './entity-ref.js';
import { ENTITY_TYPE_NAME, type EntityTypeOptions, entityIdProblem, entityTypeOf } from './entity-type.js';
import {
  EntityTypeTakenError,
  InvalidEntityIdError,
  InvalidEntityTypeNameError,
  UnknownEntityTypeError,
  UnregisteredEntityMessageError,
} from './errors.js';
import type { KeeperHost, KeeperInbox } from './partition-keeper/keeper-host.js';
import { Region } from './region/region.js';
import { REGION_PATH } from './region/region-messages.js';
import { ShardingMetrics } from './region/sharding-metrics.js';
import type { RememberOptions } from './remember/remembered-entities.js';
import type { ShardRegionInfo, ShardRegionsView } from './shard-regions-view.js';

/** Starts the partition keeper that decides which partitions are active here, driving `host`. */
export type KeeperStarter = (host: KeeperHost) => KeeperInbox;

export interface ShardingOptions {
  /** The role the partition allocator assigns owners from (`partitions.role`): a type's role must match it. */
  readonly partitionRole?: string;
  /** Starts the partition keeper (tokens, hand-offs, owner leases). */
  readonly startKeeper: KeeperStarter;
  /** Remember entities: the store and the restart rate (a type registered with `remember` needs it). */
  readonly remember?: RememberOptions;
  /** Called once the keeper and the region stopped (what was started beside them ends too). */
  readonly onStop?: () => void;
}

/** The entities of one registered type: `ref(id)` is the entity with that id, wherever it runs. */
export interface ShardedEntities<M extends Message = Message> {
  readonly name: string;
  ref(entityId: string): EntityRef<M>;
}

/**
 * Sharded entities on this node: `register` a type (in `setup`, on every node), then
 * `ref(id).send(...)` / `.ask(...)` from anywhere. An entity runs on the owner of its id's
 * partition in this node's newest table, at most once cluster-wide (the partition keeper's
 * rule), is passivated when idle or over the cap, and moves with its partition.
 */
export class Sharding {
  readonly region: Region;
  private readonly keeper: KeeperInbox;
  private readonly refHost;
  private readonly unsubscribe: () => void;
  private stopped = false;

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    readonly partitions: PartitionService,
    private readonly options: ShardingOptions,
  ) {
    this.region = new Region(system, new ShardingMetrics(system.metrics), {
      partitionCount: partitions.partitionCount,
      selfKey: cluster.self.key,
      ...(options.remember ? { remember: options.remember } : {}),
    });
    this.refHost = entityRefHost(system, {
      sendToEntity: (target, message, sender) => this.sendToEntity(target, message, sender),
    });
    const adopt = (t: PartitionTable) => this.region.adoptTable(t);
    const table = partitions.table();
    if (table) adopt(table);
    const stopTables = partitions.subscribe(adopt);
    // the members this node sees: an owner gone from them gets no messages (held for the next table)
    const tellMembers = (m: Membership) =>
      this.region.membersNow(
        new Set(m.members.filter((x) => x.status !== 'down' && x.status !== 'removed').map(memberKey)),
      );
    const view = cluster.state().membership;
    if (view) tellMembers(view);
    const stopMembers = cluster.subscribeMembership(tellMembers);
    this.unsubscribe = () => {
      stopTables();
      stopMembers();
    };
    this.keeper = options.startKeeper(this.region);
    this.region.listen(this.keeper);
  }

  /**
   * Registers an entity type; returns its entities (`ref(id)`). Entities get `{ entityId }` as
   * input. A node without the type's `role` only routes to the nodes that have it.
   */
  register<TLogic extends AnyActorLogic>(
    name: string,
    logic: TLogic,
    options: EntityTypeOptions = {},
  ): ShardedEntities<EventFromLogic<TLogic> & Message> {
    if (!ENTITY_TYPE_NAME.test(name)) throw new InvalidEntityTypeNameError(name);
    if (this.region.typeOf(name)) throw new EntityTypeTakenError(name);
    if (options.role !== undefined && options.role !== this.options.partitionRole)
      throw new InvalidConfigError(
        `entity type ${name} has role ${options.role}, but partitions are owned by ${
          this.options.partitionRole === undefined ? 'every member' : `role ${this.options.partitionRole}`
        }: set partitions.role to the same role`,
      );
    if (options.remember && !this.options.remember)
      throw new InvalidConfigError(
        `entity type ${name} has remember: true, but this node has no remember store: configure sharding.remember.store (a MemoryRememberStore or an EtcdRememberStore)`,
      );
    const hosts = options.role === undefined || this.cluster.self.roles.includes(options.role);
    this.region.addType(entityTypeOf(name, logic, options), hosts);
    return { name, ref: (id) => this.ref(name, id) };
  }

  /** The entity `entityId` of a registered type. Throws on an unknown type or an invalid id. */
  ref<M extends Message = Message>(entityType: string, entityId: string): EntityRef<M> {
    if (!this.region.typeOf(entityType)) throw new UnknownEntityTypeError(entityType);
    const problem = entityIdProblem(entityId);
    if (problem !== undefined) throw new InvalidEntityIdError(entityType, problem);
    const address = { cluster: this.system.cluster, node: this.system.node, path: REGION_PATH };
    return new EntityRef<M>(this.refHost, address, entityType, entityId);
  }

  private sendToEntity(target: EntityRef, message: Message, sender: ActorRef | undefined): void {
    const { entityType, entityId } = target;
    // the ref remembers its id's partition (see EntityRef.partition)
    const refusal = this.region.send(entityType, entityId, message, sender, target);
    if (refusal === undefined) return;
    if (refusal === 'unknown-entity-type') throw new UnknownEntityTypeError(entityType);
    if (refusal === 'invalid-entity-id')
      throw new InvalidEntityIdError(entityType, entityIdProblem(entityId) ?? 'invalid');
    throw new UnregisteredEntityMessageError(entityType, String(message?.type));
  }

  /** `GET /cluster/shards`: per type, the partitions active here and their entity counts. */
  shards(): ShardRegionsView {
    const active = this.region.activePartitions();
    const regions: ShardRegionInfo[] = this.region.view().map(({ type, hosts, counts }) => ({
      typeName: type.name,
      hosts,
      role: type.role ?? null,
      shards: hosts ? active.map((p) => ({ shardId: String(p), numEntities: counts.get(p) ?? 0 })) : [],
    }));
    return {
      self: this.cluster.self.key,
      tableVersion: this.region.tableVersion(),
      activePartitions: active,
      bufferedMessages: this.region.bufferedCount(),
      regions,
    };
  }

  /** Hand-offs sent from here not yet confirmed by their receivers (a leaving node waits for none). */
  unconfirmedHandOffs(): number {
    return this.keeper.unconfirmedHandOffs?.() ?? 0;
  }

  /** Partitions whose token this node's keeper holds, active or not (the retire step waits for 0). */
  tokensHeld(): number {
    return this.keeper.tokensHeld?.() ?? 0;
  }

  /**
   * Stops the keeper and every entity (the incarnation ends). Every member in our view is told
   * `sharding.farewell` behind what we sent it: their drains need not wait for our fence.
   */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe();
    this.keeper.stop();
    const self = this.cluster.self.key;
    const members = this.cluster.state().membership?.members ?? [];
    this.region.close(members.map(memberKey).filter((k) => k !== self));
    this.options.onStop?.();
  }
}
