import {
  type ActorRef,
  ActorRef as ActorRefClass,
  type ActorSystem,
  type DeadLetterReason,
  type Message,
  type MessageAdmission,
  type MessageRefusal,
  nodeOfKey,
  RateLimitedLog,
} from '@doyen/core';
import { partitionOf } from '@doyen/partitions';
import { type EntityType, entityIdProblem } from '../entity-type.js';
import type {
  DeactivationReason,
  DeliveryGuard,
  DrainMarkerPayload,
  HandOffCargo,
  KeeperHost,
} from '../partition-keeper/keeper-host.js';
import type { Farewell } from '../partition-keeper/keeper-messages.js';
import type { RememberChange } from '../remember/remember-store.js';
import { RememberedEntities, type RememberOptions } from '../remember/remembered-entities.js';
import { EntityBatches } from './entity-batches.js';
import { EntityHosting, type EntitySnapshot, type LeaseGate } from './entity-hosting.js';
import { PartitionBuffers } from './partition-buffers.js';
import {
  BATCH_SLOTS,
  type EntityBatch,
  type EntityEnvelope,
  MAX_HOPS,
  REGION_NAME,
  REGION_PATH,
  readPayload,
  registerRegionMessages,
} from './region-messages.js';
import type { RoutedMessage } from './routed-message.js';
import type { ShardingMetrics } from './sharding-metrics.js';

/** The newest table as the region routes by it: its version and the owner key per partition. */
export interface RoutingTable {
  readonly version: number;
  readonly owners: readonly string[];
}

/** Why a message for an entity was refused or dropped (the `reason` of `sharding.refused`). */
export type RefusalReason =
  | 'unknown-entity-type'
  | 'invalid-entity-id'
  | 'unregistered-message'
  | 'invalid-message'
  | 'wrong-partition'
  | 'hop-limit'
  | 'no-host';

/** Where a sender keeps an id's partition between sends (an EntityRef: its id never changes). */
export interface PartitionMemo {
  partition: number | undefined;
  /** The registration its type and id passed the checks against (opaque outside the region). */
  checked: unknown;
}

export interface RegionOptions {
  readonly partitionCount: number;
  /** This node's member key (`host:port#uid`): partitions owned by it in the table are its own. */
  readonly selfKey: string;
  /** Remember entities: the store and the restart rate (types with `remember` need it). */
  readonly remember?: RememberOptions;
  /**
   * Entities read the owner lease before each turn or event (`LeaseGate`; default true). False
   * only for positive controls and the cost A/B: what an entity had queued before a pause past the
   * lease then runs on waking.
   */
  readonly gateEntityTurns?: boolean;
  /** Machine entities carry their pending delayed events in hand-off snapshots (default true; false: positive controls). */
  readonly carryTimers?: boolean;
}

/** Where the region reports to the partition keeper (set once the keeper is started). */
export interface RegionListener {
  /** Every entity of `partition` stopped after `drain`: its cargo is ready (`takeCargo`). */
  regionDrained(partition: number): void;
  /** A keeper message that came on the entity path (a drain marker), in arrival order. */
  received(message: Message): void;
}

interface Draining {
  readonly forwarded: RoutedMessage[];
  readonly startedAt: number;
  timer: unknown;
  /** Set once every entity stopped: the cargo's snapshots. */
  snapshots: readonly EntitySnapshot[] | undefined;
}

/** A registered entity type and its hosting here (undefined: this node only routes it). */
interface RegisteredType {
  readonly type: EntityType;
  hosting: EntityHosting | undefined;
}

/** What a refused batch entry's dead letter carries when its payload was not readable. */
const INVALID_PAYLOAD: Message = { type: 'sharding.invalid-payload' };

/** How often a drain looks again whether its entities have worked off their mailboxes. */
const DRAIN_POLL_MS = 1;

/**
 * One node's sharding runtime: routes every entity message by `partitionOf(id)` and the newest
 * table this node holds (no lookup on the message path), hosts the entities of the partitions
 * active here, and keeps messages per partition while no active owner is known. Which
 * partitions are active is decided elsewhere (the partition keeper): it calls `activate`,
 * `drain`, `takeCargo`, `deactivate`, `startBuffering`, `flush` and `sendMarker` (KeeperHost).
 */
export class Region implements KeeperHost {
  private readonly types = new Map<string, RegisteredType>();
  private table: RoutingTable | undefined;
  private readonly active = new Set<number>();
  private readonly draining = new Map<number, Draining>();
  /** Partitions the keeper told this node to hold messages for (moving): not routed until flushed. */
  private readonly holding = new Set<number>();
  /** Deactivated with the token kept here: messages held until activate, drain or reroute. */
  private readonly suspended = new Set<number>();
  /**
   * Per suspended partition, its entities' persisted snapshots (types with `handOverSnapshot`)
   * taken when the owner lease lapsed: the token stayed here, so they are the partition's state,
   * restored on re-activation or carried by the next hand-off (a fenced node never resumes).
   */
  private readonly lapsed = new Map<number, EntitySnapshot[]>();
  /**
   * Owners in the table that are no longer members here (downed, removed: the incarnation is
   * over), usually none: messages for their partitions are held until a table names a live
   * owner, not sent to an incarnation that is gone (they would be dead letters there). When
   * every member that may host the allocator was downed at once, the next table came seconds
   * later and what the senders sent meanwhile was lost (sharding chaos, seed 39106).
   */
  private goneOwners: ReadonlySet<string> = new Set();
  /** The live member keys last told (`membersNow`); undefined before the first view. */
  private liveMembers: ReadonlySet<string> | undefined;
  private readonly buffers: PartitionBuffers;
  /** Envelopes on their way to each owner, sent as one batch at the end of the task. */
  private readonly batches: EntityBatches;
  private readonly refusedLog: RateLimitedLog;
  private readonly inbox: ActorRef;
  private readonly watcher: ActorRef;
  /** The region ref of each owner, made once (not per message); renewed with each table. */
  private regionRefs = new Map<string, ActorRef>();
  private activationSeq = 0;
  /** Per active partition, which activation it is: restarts of an earlier one are void. */
  private readonly partitionActivations = new Map<number, number>();
  private partitionActivationSeq = 0;
  /** Remembered ids and their restarts; undefined without a remember store. */
  readonly remembered: RememberedEntities | undefined;
  private closed = false;
  private listener: RegionListener | undefined;
  /** The owner lease read by the clock before entities here act on an arrival (see `stopIfLeaseLapsed`). */
  private guard: DeliveryGuard | undefined;
  /** The last payload type received, its admission, and the registrations it was taken at. */
  private readonly admitted: {
    type: string | undefined;
    admission: MessageAdmission | undefined;
    generation: number;
  } = { type: undefined, admission: undefined, generation: -1 };
  /** Why the payload being received was refused by its admission (set by `onInvalid`). */
  private invalidDetail: string | undefined;
  private readonly onInvalid = (refusal: MessageRefusal): void => {
    this.invalidDetail = refusal.detail;
  };

  constructor(
    readonly system: ActorSystem,
    private readonly metrics: ShardingMetrics,
    private readonly options: RegionOptions,
  ) {
    registerRegionMessages(system.messageTypes);
    this.refusedLog = new RateLimitedLog(system.logger, () => system.clock.now(), 5);
    this.buffers = new PartitionBuffers(
      (name) => this.types.get(name)?.type.bufferSize ?? 1000,
      (m) => this.dropped(m, 'sharding-buffer-full', 'buffer-full'),
    );
    this.inbox = system.functionRef(REGION_NAME, (m, sender) => this.onInbox(m, sender), 'user');
    this.batches = new EntityBatches(
      (owner, batch) => this.regionOf(owner).send(batch, this.inbox),
      () => this.table?.version ?? 0,
    );
    this.watcher = system.functionRef(`${REGION_NAME}-watch`, (m) => this.onTerminated(m), 'system');
    this.remembered = options.remember
      ? new RememberedEntities(system, options.remember, metrics, {
          isActive: (p, activation) => {
            // a restart after a pause runs in the timers phase, maybe before the lease-end report
            this.stopIfLeaseLapsed();
            return this.active.has(p) && this.partitionActivations.get(p) === activation;
          },
          restart: (type, p, id) => this.types.get(type)?.hosting?.restartRemembered(id, p) ?? false,
        })
      : undefined;
  }

  /** The partition keeper that drives this region (it is started after the region). */
  listen(listener: RegionListener): void {
    this.listener = listener;
  }

  /** The owner lease as the keeper gives it: read by the clock on the message path (DeliveryGuard). */
  guardDelivery(guard: DeliveryGuard): void {
    this.guard = guard;
  }

  /**
   * Before an arrival may reach an entity here: does this node still hold its owner lease by the
   * clock NOW? After a pause past the lease, Node runs the I/O callbacks that bring messages
   * before the timers that report the loss, and `active` is the keeper's view, not the clock's;
   * a stale entity must not act beside its successor (issue 29, chaos seeds 29 and 30). On a
   * lapse every partition stops here at once, in this task, as the keeper's lease loss stops
   * them (snapshots kept, unprocessed messages held in order, the token kept), so the arrival is
   * then held like any message for a suspended partition; the keeper is told at once. One clock
   * read per batch, envelope or local delivery; none while nothing is active here.
   */
  private stopIfLeaseLapsed(): void {
    const guard = this.guard;
    if (guard === undefined || (this.active.size === 0 && this.draining.size === 0) || guard.holdsOwn())
      return;
    this.lapseSeen(guard, 'arrival');
  }

  /**
   * What entities read before each turn or event (issue 29): messages already in an entity's
   * mailbox at a pause, and its due delayed events, would otherwise run on waking before any
   * arrival trips `stopIfLeaseLapsed`. A fast-path entity's cell reads it once per turn, other
   * logic once per event (EntityHosting's `spawnGate`).
   */
  private readonly leaseGate: LeaseGate = {
    holds: () => this.guard === undefined || this.guard.holdsOwn(),
    lapsed: () => {
      if (this.guard !== undefined) this.lapseSeen(this.guard, 'entity');
    },
  };

  /** The lease ran out by the clock: every partition stops here now, the keeper is told. */
  private lapseSeen(guard: DeliveryGuard, by: 'arrival' | 'entity'): void {
    if (this.active.size === 0 && this.draining.size === 0) return;
    const partitions = this.active.size + this.draining.size;
    this.system.logger.warn(
      { event: 'sharding.lease-lapse-seen', partitions, by },
      `the owner lease ran out before its report came (a pause?): ${partitions} partitions stopped before ${by === 'entity' ? 'an entity processed what it had queued' : 'delivering'}`,
    );
    this.deactivateAll('lease-lost');
    guard.lapsed();
  }

  // ---- registration and views -------------------------------------------------------------

  addType(type: EntityType, hosts: boolean): void {
    const activations = { next: () => ++this.activationSeq };
    const remembered = this.remembered;
    const context = {
      tableVersion: () => this.table?.version ?? 0,
      watcher: this.watcher,
      ...(remembered ? { remember: (c: RememberChange) => remembered.changed(c) } : {}),
      beforeStarting: () => this.stopIfLeaseLapsed(),
      ...(this.options.gateEntityTurns === false ? {} : { leaseGate: this.leaseGate }),
      ...(this.options.carryTimers === false ? { carryTimers: false } : {}),
    };
    const hosting = hosts
      ? new EntityHosting(this.system, type, context, this.metrics, activations)
      : undefined;
    this.types.set(type.name, { type, hosting });
    this.metrics.active(type.name, 0);
  }

  typeOf(name: string): EntityType | undefined {
    return this.types.get(name)?.type;
  }

  /** Per registered type: whether this node hosts it, and entities per partition held here. */
  view(): { type: EntityType; hosts: boolean; counts: Map<number, number> }[] {
    return [...this.types.values()].map(({ type, hosting }) => ({
      type,
      hosts: hosting !== undefined,
      counts: hosting?.countsByPartition() ?? new Map(),
    }));
  }

  activePartitions(): number[] {
    return [...this.active].sort((a, b) => a - b);
  }

  /** Partitions with messages held here (moving, or waiting for an activation), ascending. */
  bufferedPartitions(): number[] {
    return this.buffers.partitions().sort((a, b) => a - b);
  }

  /** Partitions whose hand-off is under way here (drain begun, cargo not yet taken). */
  drainingPartitions(): number[] {
    return [...this.draining.keys()].sort((a, b) => a - b);
  }

  tableVersion(): number {
    return this.table?.version ?? 0;
  }

  /** Messages held here now (every partition). */
  bufferedCount(): number {
    return this.buffers.size;
  }

  /** Messages batched for other nodes and not sent yet (they leave at the end of the task). */
  batchedCount(): number {
    return this.batches.size;
  }

  /** Whether the entity runs on this node now (tests and tools). */
  isRunning(entityType: string, entityId: string): boolean {
    return this.types.get(entityType)?.hosting?.has(entityId) ?? false;
  }

  /** Entities of `entityType` running here (tests and tools). */
  activeCount(entityType: string): number {
    return this.types.get(entityType)?.hosting?.size ?? 0;
  }

  // ---- the message path -------------------------------------------------------------------

  /**
   * Validates and routes a message from this node's app. Returns the refusal reason (the
   * caller turns it into a typed error) or undefined once the message is on its way.
   */
  send(
    entityType: string,
    entityId: string,
    payload: Message,
    sender: ActorRef | undefined,
    memo?: PartitionMemo,
  ): RefusalReason | undefined {
    // a ref's type and id were checked on its first send: they never change, nor does a type's registration
    let registered = memo?.checked as RegisteredType | undefined;
    if (registered === undefined) {
      registered = this.types.get(entityType);
      const refusal = this.refusalOf(registered, entityId, payload);
      if (refusal) return refusal;
      if (memo) memo.checked = registered;
    } else {
      const allowed = registered.type.messages;
      if (allowed && !allowed.has(payload.type)) return 'unregistered-message';
    }
    if (this.closed) {
      // after our farewell nothing may follow it: a stopped node's sends are counted dead letters
      this.dropped(
        { entityType, entityId, partition: -1, payload, sender, hops: 0 },
        'actor-stopped',
        'stopped',
      );
      return undefined;
    }
    let partition = memo?.partition;
    if (partition === undefined) {
      partition = partitionOf(entityId, this.options.partitionCount);
      if (memo) memo.partition = partition;
    }
    // the usual case, an active partition elsewhere: the envelope straight away, no RoutedMessage
    const owner = this.remoteOwnerOf(partition);
    if (owner !== undefined) {
      this.sendEnvelope(owner, entityType, entityId, partition, 0, payload, sender);
      return undefined;
    }
    this.stopIfLeaseLapsed();
    this.route({ entityType, entityId, partition, payload, sender, hops: 0 });
    return undefined;
  }

  /**
   * The owner `route` would send a message for `p` to now (another node's key), or undefined when
   * it would deliver, keep or hold it here: the conditions of `route`, in its order.
   */
  private remoteOwnerOf(p: number): string | undefined {
    // a proxy-only node (a load generator, a gateway) holds none of them: four sizes, no lookups
    if (
      (this.active.size > 0 && this.active.has(p)) ||
      (this.draining.size > 0 && this.draining.has(p)) ||
      (this.holding.size > 0 && this.holding.has(p)) ||
      (this.suspended.size > 0 && this.suspended.has(p))
    )
      return undefined;
    const owner = this.table?.owners[p];
    return !owner || owner === this.options.selfKey || this.isGone(owner) ? undefined : owner;
  }

  /** An owner whose incarnation is over here (see `goneOwners`): one size check when none is. */
  private isGone(owner: string): boolean {
    return this.goneOwners.size > 0 && this.goneOwners.has(owner);
  }

  /**
   * The members this node sees now, not down or removed: the table's owners among them are the
   * ones messages may go to. Held messages for an owner that was gone and is live again (a view
   * that lagged) go to it.
   */
  membersNow(live: ReadonlySet<string>): void {
    this.liveMembers = live;
    const before = this.goneOwners;
    const table = this.table;
    this.goneOwners = this.goneIn(table);
    if (before.size === 0 || !table) return;
    // back among the members: what was held for it goes there
    this.sendHeld((p, owner) => before.has(owner) && !this.active.has(p) && !this.draining.has(p));
  }

  /**
   * What is held for partitions whose owner in the table is another live node goes there, for the
   * partitions `release` names; not what the keeper holds (moving, suspended).
   */
  private sendHeld(release: (p: number, owner: string) => boolean): void {
    const table = this.table;
    if (!table) return;
    for (const p of this.buffers.partitions()) {
      const owner = table.owners[p];
      if (!owner || owner === this.options.selfKey || this.isGone(owner)) continue;
      if (this.holding.has(p) || this.suspended.has(p) || !release(p, owner)) continue;
      for (const m of this.buffers.take(p)) this.sendTo(owner, m);
    }
    this.metrics.buffered(this.buffers.size);
  }

  /** The owners of `table` that are not among the live members (none before the first view). */
  private goneIn(table: RoutingTable | undefined): ReadonlySet<string> {
    const live = this.liveMembers;
    const gone = new Set<string>();
    if (table && live) for (const o of table.owners) if (o !== '' && !live.has(o)) gone.add(o);
    return gone;
  }

  /** `registered`: the message's entity type as registered here (looked up once by the caller). */
  private refusalOf(
    registered: RegisteredType | undefined,
    entityId: unknown,
    payload: Message,
  ): RefusalReason | undefined {
    if (!registered) return 'unknown-entity-type';
    if (entityIdProblem(entityId) !== undefined) return 'invalid-entity-id';
    const allowed = registered.type.messages;
    if (allowed && !allowed.has(payload.type)) return 'unregistered-message';
    return undefined;
  }

  /** Local delivery, holding, or an envelope to the owner: decided per message from local state only. */
  private route(m: RoutedMessage): void {
    if (this.closed) {
      this.dropped(m, 'actor-stopped', 'stopped');
      return;
    }
    const p = m.partition;
    if (this.active.has(p)) {
      this.deliver(m);
      return;
    }
    const draining = this.draining.get(p);
    if (draining) {
      draining.forwarded.push(m);
      return;
    }
    const owner = this.table?.owners[p];
    if (
      this.holding.has(p) ||
      this.suspended.has(p) ||
      !owner ||
      owner === this.options.selfKey ||
      this.isGone(owner)
    ) {
      this.hold(m);
      return;
    }
    this.sendTo(owner, m);
  }

  private hold(m: RoutedMessage): void {
    this.buffers.push(m);
    this.metrics.buffered(this.buffers.size);
  }

  private sendTo(ownerKey: string, m: RoutedMessage): void {
    this.sendEnvelope(ownerKey, m.entityType, m.entityId, m.partition, m.hops, m.payload, m.sender);
  }

  private sendEnvelope(
    ownerKey: string,
    entityType: string,
    entityId: string,
    partition: number,
    hops: number,
    payload: Message,
    sender: ActorRef | undefined,
  ): void {
    if (this.batches.add(ownerKey, entityType, entityId, partition, hops, payload, sender)) return;
    // not batchable: alone, behind what is batched for the owner
    this.batches.flush(ownerKey);
    const version = this.table?.version ?? 0;
    // two literals, not a spread: one per message on the hot path
    const envelope: EntityEnvelope = sender
      ? { type: 'sharding.envelope', entityType, entityId, partition, version, hops, payload, sender }
      : { type: 'sharding.envelope', entityType, entityId, partition, version, hops, payload };
    this.regionOf(ownerKey).send(envelope, this.inbox);
  }

  private regionOf(memberKey: string): ActorRef {
    let ref = this.regionRefs.get(memberKey);
    if (!ref)
      this.regionRefs.set(memberKey, (ref = this.system.remoteRef(nodeOfKey(memberKey), REGION_PATH)));
    return ref;
  }

  private deliver(m: RoutedMessage): void {
    const hosting = this.types.get(m.entityType)?.hosting;
    if (!hosting) {
      // an owner without the type's role: the roles of the type and of the partitions disagree
      this.refuse(m, 'no-host', 'this node owns the partition but does not host the type (role)');
      return;
    }
    hosting.deliver(m.entityId, m.partition, m.payload, m.sender);
  }

  private onInbox(message: Message, sender: string | undefined): void {
    if (this.closed) return;
    if (message.type === 'sharding.batch') {
      this.stopIfLeaseLapsed();
      this.onBatch(message as unknown as EntityBatch, sender);
      return;
    }
    if (message.type !== 'sharding.envelope') {
      this.listener?.received(message);
      return;
    }
    this.stopIfLeaseLapsed();
    const e = message as unknown as EntityEnvelope;
    this.received(e.entityType, e.entityId, e.partition, e.version, e.hops, e.payload, e.sender, sender);
  }

  /**
   * Each message of a batch, checked alone (its schema checked only the layout): a malformed one
   * is refused alone (`invalid-message`), the others go on as envelopes would, in order.
   */
  private onBatch(batch: EntityBatch, sender: string | undefined): void {
    const { entries, entityTypes, version } = batch;
    for (let i = 0; i < entries.length && !this.closed; i += BATCH_SLOTS) {
      const typeIndex = entries[i];
      const entityType = typeof typeIndex === 'number' ? entityTypes[typeIndex] : undefined;
      const entityId = entries[i + 1];
      const partition = entries[i + 2];
      const hops = entries[i + 3];
      const from = entries[i + 5];
      let payload: Message | undefined;
      try {
        payload = readPayload(entries[i + 4], 'payload');
      } catch {
        payload = undefined;
      }
      if (
        entityType === undefined ||
        typeof entityId !== 'string' ||
        !Number.isSafeInteger(partition) ||
        (partition as number) < 0 ||
        !Number.isSafeInteger(hops) ||
        (hops as number) < 0 ||
        payload === undefined ||
        (from !== null && !(from instanceof ActorRefClass))
      ) {
        const m: RoutedMessage = {
          entityType: entityType ?? 'invalid',
          entityId: String(entityId),
          partition: -1,
          payload: payload ?? INVALID_PAYLOAD,
          sender: undefined,
          hops: 0,
        };
        this.refuse(m, 'invalid-message', `batch entry ${i / BATCH_SLOTS} is malformed`);
        continue;
      }
      this.received(
        entityType,
        entityId,
        partition as number,
        version,
        hops as number,
        payload,
        from === null ? undefined : (from as ActorRef),
        sender,
      );
    }
  }

  /**
   * The admission of a payload type, looked up again only when the type differs from the last one's
   * (a batch is mostly runs of one type) or a type was registered since: a decoded type is a new
   * string each time, and a lookup by it hashed it afresh per message.
   */
  private admissionOf(type: string): MessageAdmission | undefined {
    const types = this.system.messageTypes;
    if (type !== this.admitted.type || this.admitted.generation !== types.generation) {
      this.admitted.type = type;
      this.admitted.admission = types.admissionOf(type);
      this.admitted.generation = types.generation;
    }
    return this.admitted.admission;
  }

  /** One message for an entity from another node's region, its fields read: checked, then routed. */
  private received(
    entityType: string,
    entityId: string,
    p: number,
    version: number,
    hops: number,
    raw: Message,
    from: ActorRef | undefined,
    sender: string | undefined,
  ): void {
    // a payload type the app registered is admitted as any message is (a schema's rebuilt from it);
    // the type's lookup once per run of one type (as the wire does), no closure per message
    const admission = this.admissionOf(raw.type);
    this.invalidDetail = undefined;
    const payload = admission ? admission(raw, undefined, this.onInvalid) : raw;
    const invalid = this.invalidDetail;
    const registered = this.types.get(entityType);
    let refusal: RefusalReason | undefined =
      payload === undefined ? 'invalid-message' : this.refusalOf(registered, entityId, payload);
    // the id looked up once: a running entity's partition was checked when it started (only a new id
    // is hashed), and the message goes to that entity
    const hosting = registered?.hosting;
    const running = refusal === undefined ? hosting?.running(entityId) : undefined;
    if (
      refusal === undefined &&
      (running?.partition ?? partitionOf(entityId, this.options.partitionCount)) !== p
    )
      refusal = 'wrong-partition';
    // the usual case, an active partition hosted here: delivered without a RoutedMessage
    if (refusal === undefined && hosting !== undefined && this.active.has(p)) {
      hosting.deliverTo(running, entityId, p, payload!, from);
      return;
    }
    const m: RoutedMessage = {
      entityType,
      entityId,
      partition: p,
      payload: payload ?? raw,
      sender: from,
      hops,
    };
    if (refusal !== undefined) {
      const detail =
        refusal === 'invalid-message'
          ? (invalid ?? 'invalid')
          : refusal === 'wrong-partition'
            ? `partition ${p} is not the id's`
            : `from ${sender ?? 'unknown'}`;
      this.refuse(m, refusal, detail);
      return;
    }
    if (this.active.has(p) || this.draining.has(p) || this.suspended.has(p)) {
      this.route(m);
      return;
    }
    const owner = this.table?.owners[p];
    // ours, or the sender knows a newer table than ours: held until activation or our next table
    if (
      !owner ||
      owner === this.options.selfKey ||
      version > (this.table?.version ?? 0) ||
      this.isGone(owner)
    ) {
      this.hold(m);
      return;
    }
    if (hops >= MAX_HOPS) {
      this.refuse(m, 'hop-limit', `forwarded ${hops} times`);
      return;
    }
    this.sendTo(owner, { ...m, hops: hops + 1 });
  }

  // ---- the table --------------------------------------------------------------------------

  /**
   * A newer table: routing follows it from now on. Messages held only because no live owner was
   * known (no table yet, unassigned, or an owner gone from the members) go to their owner in the
   * new table; what this node held as the owner is the keeper's to move (`reroute`, `drain`).
   */
  adoptTable(table: RoutingTable): void {
    if (this.table && table.version <= this.table.version) return;
    // what is batched was routed by the table it names: sent before routing follows the new one
    this.batches.flushAll();
    const previous = this.table;
    const goneBefore = this.goneOwners;
    this.table = table;
    this.goneOwners = this.goneIn(table);
    // members gone from the table drop out of the cache
    this.regionRefs = new Map();
    // held for no owner or for one gone: to the new table's owner
    this.sendHeld((p) => {
      const before = previous?.owners[p];
      return !before || goneBefore.has(before);
    });
  }

  // ---- what the partition keeper tells the region (KeeperHost) ----------------------------

  /**
   * Partition `p` is active here: entities handed over start from their snapshots, the messages
   * the former owner kept come first, then what this node held, each in arrival order.
   */
  activate(partition: number, version: number, cargo: HandOffCargo): void {
    if (this.closed || this.active.has(partition)) return;
    this.active.add(partition);
    this.partitionActivations.set(partition, ++this.partitionActivationSeq);
    this.holding.delete(partition);
    this.suspended.delete(partition);
    for (const s of [...this.takeLapsed(partition), ...cargo.snapshots]) {
      const hosting = this.types.get(s.entityType)?.hosting;
      if (hosting && partitionOf(s.entityId, this.options.partitionCount) === partition)
        hosting.restore(s.entityId, partition, s.snapshot);
    }
    for (const m of cargo.forwarded) this.route(m);
    for (const m of this.buffers.take(partition)) this.route(m);
    this.metrics.buffered(this.buffers.size);
    // what was remembered restarts behind what came with the partition, paced
    const remembering = [...this.types.values()].filter((t) => t.type.remember && t.hosting);
    if (this.remembered && remembering.length > 0)
      this.remembered.partitionActivated(
        remembering.map((t) => t.type.name),
        partition,
        this.partitionActivationSeq,
      );
    // the keeper logs the partition's activation; this line says what came with it
    this.system.logger.debug(
      {
        event: 'sharding.cargo-restored',
        partition,
        version,
        snapshots: cargo.snapshots.length,
        forwarded: cargo.forwarded.length,
      },
      `partition ${partition}: ${cargo.snapshots.length} entities restored, ${cargo.forwarded.length} messages forwarded first`,
    );
  }

  /**
   * Stops taking messages for `p` (later ones are kept, in order, for the cargo), lets its
   * entities finish what they accepted, stops them (snapshots with `handOverSnapshot`), then
   * tells the keeper `regionDrained`.
   */
  drain(partition: number): void {
    if (this.closed || this.draining.has(partition)) return;
    this.active.delete(partition);
    this.suspended.delete(partition);
    // what was held for p here (owner, not active) goes first in the cargo
    const draining: Draining = {
      forwarded: this.buffers.take(partition),
      startedAt: this.system.clock.now(),
      timer: undefined,
      snapshots: undefined,
    };
    this.metrics.buffered(this.buffers.size);
    this.draining.set(partition, draining);
    this.finishDrain(partition, draining);
  }

  private finishDrain(partition: number, draining: Draining): void {
    draining.timer = undefined;
    if (this.draining.get(partition) !== draining) return;
    const hostings = this.hostings();
    if (!hostings.every((h) => h.settled(partition))) {
      draining.timer = this.system.clock.setTimeout(
        () => this.finishDrain(partition, draining),
        DRAIN_POLL_MS,
      );
      return;
    }
    draining.snapshots = [
      ...this.takeLapsed(partition),
      ...hostings.flatMap((h) => h.stopPartition(partition, 'hand-off').snapshots),
    ];
    this.metrics.handOff((this.system.clock.now() - draining.startedAt) / 1000);
    this.listener?.regionDrained(partition);
  }

  /** Snapshots leaving: their carried delayed events less the time they were held here (`EntityTimers`). */
  private leaving(snapshots: readonly EntitySnapshot[]): EntitySnapshot[] {
    return snapshots.map((s) => this.types.get(s.entityType)?.hosting?.leaving(s) ?? s);
  }

  /** The drained partition leaves: its snapshots and every message kept since the drain began. */
  takeCargo(partition: number): HandOffCargo {
    const draining = this.draining.get(partition);
    if (!draining) return { snapshots: this.leaving(this.takeLapsed(partition)), forwarded: [] };
    if (draining.timer !== undefined) this.system.clock.clearTimeout(draining.timer);
    this.draining.delete(partition);
    const cargo = { snapshots: this.leaving(draining.snapshots ?? []), forwarded: draining.forwarded };
    // the keeper logs the hand-off; this line says what goes with it
    this.system.logger.debug(
      {
        event: 'sharding.cargo-taken',
        partition,
        version: this.tableVersion(),
        snapshots: cargo.snapshots.length,
        forwarded: cargo.forwarded.length,
      },
      `partition ${partition}: ${cargo.snapshots.length} snapshots and ${cargo.forwarded.length} messages go with it`,
    );
    return cargo;
  }

  /**
   * Stops `p`'s entities at once, no hand-off, no snapshot. The token stays here: what a drain
   * kept and what arrives from now on is held, in order, until `activate`, `drain` or `reroute`.
   */
  deactivate(partition: number, reason: DeactivationReason): void {
    const wasActive = this.active.delete(partition);
    const draining = this.draining.get(partition);
    // a lapse keeps the partition's state with its token; a void token or a stopping node does not
    const keep = reason === 'lease-lost';
    const kept = keep ? this.takeLapsed(partition) : [];
    if (!keep) this.lapsed.delete(partition);
    if (!wasActive && !draining) {
      if (kept.length > 0) this.lapsed.set(partition, kept);
      return;
    }
    if (draining) {
      if (draining.timer !== undefined) this.system.clock.clearTimeout(draining.timer);
      this.draining.delete(partition);
      // a drain that finished took its entities' snapshots already
      if (keep) kept.push(...(draining.snapshots ?? []));
    }
    this.suspended.add(partition);
    const passivation = reason === 'stopped' ? 'stopped' : 'lease-lost';
    // on a lapse, what the entities had accepted and not processed is held too (not dropped)
    const unprocessed: RoutedMessage[] = [];
    for (const h of this.hostings()) {
      const stopped = h.stopPartition(partition, passivation);
      kept.push(...stopped.snapshots);
      unprocessed.push(...stopped.unprocessed);
    }
    // held in arrival order: what the entities accepted, what a drain kept, what came since
    const later = this.buffers.take(partition);
    for (const m of [...unprocessed, ...(draining?.forwarded ?? []), ...later]) this.buffers.push(m);
    this.metrics.buffered(this.buffers.size);
    if (kept.length > 0) this.lapsed.set(partition, kept);
    this.system.logger.warn(
      {
        event: 'sharding.deactivated',
        partition,
        reason,
        version: this.tableVersion(),
        kept: kept.length,
        held: unprocessed.length,
      },
      `partition ${partition} stopped here without hand-off (${reason})`,
    );
  }

  /** Every partition active or draining here stops at once (this node may no longer run any). */
  deactivateAll(reason: DeactivationReason): void {
    for (const p of new Set([...this.active, ...this.draining.keys()])) this.deactivate(p, reason);
  }

  /**
   * This incarnation was fenced: it never resumes a partition, so what lapses kept is dropped, and
   * so is what it held for its suspended partitions (accepted before a lapse, or come since): their
   * successors were recreated behind the fence, and these delivered late would come after newer
   * messages. Dead letters, counted (`reason: fenced`), rather than gone unseen with the process.
   */
  forgetLapsed(): void {
    this.lapsed.clear();
    for (const p of this.suspended)
      for (const m of this.buffers.take(p)) this.dropped(m, 'actor-stopped', 'fenced');
    this.metrics.buffered(this.buffers.size);
  }

  /** What a lapse kept of `partition` (see `lapsed`), forgotten here: it goes where the caller puts it. */
  private takeLapsed(partition: number): EntitySnapshot[] {
    const kept = this.lapsed.get(partition) ?? [];
    this.lapsed.delete(partition);
    return kept;
  }

  /** Held here as p's owner, which this node no longer is (no token): to the newest table's owner. */
  reroute(partition: number): void {
    this.suspended.delete(partition);
    const held = this.buffers.take(partition);
    this.metrics.buffered(this.buffers.size);
    for (const m of held) this.route(m);
  }

  /** This node's own sends for `p` are held (it moves) until `flush`. */
  startBuffering(partition: number): void {
    this.holding.add(partition);
  }

  /** `p` is active at `owner`: what this node held for it goes there, in order. */
  flush(partition: number, owner: string): void {
    this.holding.delete(partition);
    const held = this.buffers.take(partition);
    this.metrics.buffered(this.buffers.size);
    if (owner === this.options.selfKey) {
      for (const m of held) this.route(m);
      return;
    }
    for (const m of held) this.sendTo(owner, m);
  }

  /** The marker goes the way envelopes go (same lane, same actor), so it arrives behind them. */
  sendMarker(to: string, marker: DrainMarkerPayload): void {
    this.batches.flush(to);
    this.regionOf(to).send({ type: 'sharding.drain-marker', ...marker }, this.inbox);
  }

  private hostings(): EntityHosting[] {
    return [...this.types.values()].flatMap((t) => (t.hosting ? [t.hosting] : []));
  }

  /**
   * Stops routing and hosting. `farewellTo`: the members told `sharding.farewell` behind what we
   * sent them (this incarnation ends: its node stops or restarts as a new one): nothing follows it.
   */
  close(farewellTo: readonly string[] = []): void {
    // accepted before the close: on their way, as an envelope sent at once would be
    this.batches.flushAll();
    this.closed = true;
    const farewell: Farewell = { type: 'sharding.farewell', from: this.options.selfKey };
    for (const to of farewellTo)
      if (to !== this.options.selfKey) this.regionOf(to).send(farewell, this.inbox);
    this.remembered?.close();
    for (const [, d] of this.draining) if (d.timer !== undefined) this.system.clock.clearTimeout(d.timer);
    this.draining.clear();
    this.active.clear();
    this.lapsed.clear();
    for (const { hosting } of this.types.values()) hosting?.close();
    this.system.removeFunctionRef(this.inbox);
    this.system.removeFunctionRef(this.watcher);
  }

  // ---- refusals -----------------------------------------------------------------------------

  private onTerminated(message: Message): void {
    if (message.type !== 'doyen.terminated') return;
    const ref = (message as unknown as { ref: ActorRef }).ref;
    for (const { hosting } of this.types.values()) hosting?.terminated(ref);
  }

  private refuse(m: RoutedMessage, reason: RefusalReason, detail: string): void {
    this.metrics.dropped(m.entityType, reason);
    this.refusedLog.warn(
      `refused:${reason}`,
      {
        event: 'sharding.refused',
        reason,
        entityType: String(m.entityType).slice(0, 64),
        entityId: String(m.entityId).slice(0, 64),
        messageType: String(m.payload.type).slice(0, 100),
        detail,
      },
      `message for entity ${String(m.entityType).slice(0, 64)}/${String(m.entityId).slice(0, 64)} refused: ${reason}`,
    );
    this.system.deadLetter(this.inbox.id, m.payload, m.sender?.id, 'sharding-refused');
  }

  private dropped(m: RoutedMessage, deadLetter: DeadLetterReason, reason: string): void {
    this.metrics.dropped(m.entityType, reason);
    this.system.deadLetter(this.inbox.id, m.payload, m.sender?.id, deadLetter);
  }
}
