import type { ActorRef, ActorSystem, LocalActorRef, Message } from '@doyen/core';
import { fromTransition } from '@doyen/core';
import type { EntityInput, EntityType } from '../entity-type.js';
import type { RememberChange } from '../remember/remember-store.js';
import type { RoutedMessage } from './routed-message.js';
import type { ShardingMetrics } from './sharding-metrics.js';

/** Why an entity stopped (the `reason` of `sharding.passivated` and of the passivations metric). */
export type PassivationReason = 'idle' | 'cap' | 'hand-off' | 'lease-lost' | 'stopped';

/** A persisted xstate snapshot of one entity, carried with its partition to the next owner. */
export interface EntitySnapshot {
  readonly entityType: string;
  readonly entityId: string;
  readonly snapshot: unknown;
}

interface Entity {
  readonly id: string;
  readonly partition: number;
  readonly ref: LocalActorRef;
  readonly activation: number;
  /** Clock reading of its last message: the idle timeout counts from here. */
  lastMessageAt: number;
}

/** The partitions' table version and this node's incarnation, for the log lines the checker reads. */
export interface HostingContext {
  tableVersion(): number;
  /** Told when an entity stopped on its own (final state, failure): the region forgets it. */
  readonly watcher: ActorRef;
  /** Types with `remember`: where an id's activation and passivation are written. */
  readonly remember?: (change: RememberChange) => void;
}

/** How soon an over-the-cap burst is looked at again. */
const CAP_RETRY_MS = 1;

const idle = fromTransition((state: null) => state, null);

/**
 * The running entities of one type on this node. Entities start on their first message (or
 * from a handed-over snapshot), keep a least-recently-used order (a Map re-inserted on every
 * message, so the oldest entry is the LRU one), and are stopped when idle past
 * `passivateAfterMs` (one timer, set for the LRU entity's deadline, on the actor clock) or when
 * over `maxActiveEntities`. Only an entity with an empty mailbox is stopped, and stopping is
 * synchronous, so no message it accepted is lost; the next message starts it again.
 */
export class EntityHosting {
  private readonly entities = new Map<string, Entity>();
  private readonly byPartition = new Map<number, Set<string>>();
  private readonly parent: LocalActorRef;
  private seq = 0;
  /** Whether the least-recently-used order is kept (an idle timeout or a cap reads it). */
  private readonly recency: boolean;
  private timer: unknown;
  private timerAt = Number.POSITIVE_INFINITY;
  private capTimer: unknown;

  constructor(
    private readonly system: ActorSystem,
    readonly type: EntityType,
    private readonly context: HostingContext,
    private readonly metrics: ShardingMetrics,
    private readonly activations: { next(): number },
  ) {
    this.recency =
      type.passivateAfterMs !== Number.POSITIVE_INFINITY ||
      type.maxActiveEntities !== Number.POSITIVE_INFINITY;
    // a parent per type: the entities show as /user/sharding-<type>/<n> in inspectors
    this.parent = system.spawn(idle, { name: `sharding-${type.name}` });
  }

  get size(): number {
    return this.entities.size;
  }

  /** Entity count per partition held here. */
  countsByPartition(): Map<number, number> {
    return new Map([...this.byPartition].map(([p, ids]) => [p, ids.size]));
  }

  has(entityId: string): boolean {
    return this.entities.has(entityId);
  }

  /** The partition of a running entity (checked when it started), or undefined when none runs. */
  partitionOfRunning(entityId: string): number | undefined {
    return this.entities.get(entityId)?.partition;
  }

  /** Delivers to the entity, starting it first when it is not running. */
  deliver(entityId: string, partition: number, payload: Message, sender: ActorRef | undefined): void {
    let entity = this.entities.get(entityId);
    if (!this.recency) {
      // no idle timeout and no cap: the recency order is never read, so a message only delivers
      if (!entity) this.entities.set(entityId, (entity = this.start(entityId, partition, undefined)));
      entity.ref.send(payload, sender);
      return;
    }
    if (entity) this.entities.delete(entityId);
    else entity = this.start(entityId, partition, undefined);
    entity.lastMessageAt = this.system.clock.now();
    this.entities.set(entityId, entity);
    entity.ref.send(payload, sender);
    this.enforceCap(entityId);
    this.schedulePassivation();
  }

  /** Starts a remembered entity (no message, no snapshot) unless it runs here already; true if started. */
  restartRemembered(entityId: string, partition: number): boolean {
    if (this.entities.has(entityId)) return false;
    const entity = this.start(entityId, partition, undefined, true);
    entity.lastMessageAt = this.system.clock.now();
    this.entities.set(entityId, entity);
    this.enforceCap(entityId);
    this.schedulePassivation();
    return true;
  }

  /** Starts an entity from a handed-over snapshot (its partition was activated here). */
  restore(entityId: string, partition: number, snapshot: unknown): void {
    if (this.entities.has(entityId)) return;
    const entity = this.start(entityId, partition, snapshot);
    entity.lastMessageAt = this.system.clock.now();
    this.entities.set(entityId, entity);
    this.enforceCap(entityId);
    this.schedulePassivation();
  }

  /** Whether every entity of `partition` has worked off its mailbox (a drain may stop them). */
  settled(partition: number): boolean {
    for (const id of this.byPartition.get(partition) ?? []) {
      const e = this.entities.get(id);
      if (e && this.system.mailboxSize(e.ref) > 0) return false;
    }
    return true;
  }

  /**
   * Stops every entity of `partition`; their persisted snapshots with `handOverSnapshot`, on a
   * hand-off and on a lapse of the owner lease (the token stays here: the partition resumes from
   * them when the lease returns, or hands them over). On a lapse the entities stop at once, so
   * what their mailboxes still held comes back too (`unprocessed`, per entity in arrival order):
   * accepted but never processed, it is delivered after the snapshot wherever the partition
   * resumes, rather than dropped. A hand-off waits for empty mailboxes (`settled`) first.
   */
  stopPartition(
    partition: number,
    reason: PassivationReason,
  ): { snapshots: EntitySnapshot[]; unprocessed: RoutedMessage[] } {
    const snapshots: EntitySnapshot[] = [];
    const unprocessed: RoutedMessage[] = [];
    const keep = this.type.handOverSnapshot && (reason === 'hand-off' || reason === 'lease-lost');
    for (const id of [...(this.byPartition.get(partition) ?? [])]) {
      const e = this.entities.get(id);
      if (!e) continue;
      if (keep) {
        const snapshot = this.system.persistedSnapshotOf(e.ref);
        if (snapshot !== undefined) snapshots.push({ entityType: this.type.name, entityId: id, snapshot });
      }
      if (reason !== 'lease-lost') {
        this.stop(e, reason);
        continue;
      }
      this.system.unwatch(e.ref, this.context.watcher);
      for (const { message, sender } of this.system.stopKeepingMailbox(e.ref))
        unprocessed.push({
          entityType: this.type.name,
          entityId: id,
          partition,
          payload: message,
          sender,
          hops: 0,
        });
      this.forget(e, reason);
    }
    this.schedulePassivation();
    return { snapshots, unprocessed };
  }

  /** The region saw `ref` terminate: if it is still our entity (it stopped on its own), forget it. */
  terminated(ref: ActorRef): void {
    for (const e of this.entities.values()) {
      if (e.ref.equals(ref)) {
        this.forget(e, 'stopped', true);
        return;
      }
    }
  }

  /** Stops everything (the node stops, or the type's region closes). */
  close(): void {
    if (this.timer !== undefined) this.system.clock.clearTimeout(this.timer);
    if (this.capTimer !== undefined) this.system.clock.clearTimeout(this.capTimer);
    this.timer = undefined;
    this.capTimer = undefined;
    this.system.stop(this.parent);
  }

  private start(entityId: string, partition: number, snapshot: unknown, remembered = false): Entity {
    const activation = this.activations.next();
    const input: EntityInput = { entityId };
    const ref = this.system.spawn(this.type.logic, {
      name: (++this.seq).toString(36),
      parent: this.parent,
      input,
      ...(this.type.mailbox ? { mailbox: this.type.mailbox } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
    });
    this.system.watch(ref, this.context.watcher);
    const entity: Entity = { id: entityId, partition, ref, activation, lastMessageAt: 0 };
    let ids = this.byPartition.get(partition);
    if (!ids) this.byPartition.set(partition, (ids = new Set()));
    ids.add(entityId);
    this.metrics.activated(this.type.name);
    this.metrics.active(this.type.name, this.entities.size + 1);
    // the level is the type's (`activationLog`); the line is not even built when it is off
    if (this.system.logger.isLevelEnabled(this.type.activationLog))
      this.system.logger[this.type.activationLog](
        {
          event: 'sharding.activated',
          entityType: this.type.name,
          entityId,
          partition,
          version: this.context.tableVersion(),
          incarnation: this.system.node.uid,
          activation,
          restored: snapshot !== undefined,
          ...(remembered ? { remembered } : {}),
        },
        `entity ${this.type.name}/${entityId} activated (partition ${partition}${remembered ? ', remembered' : ''})`,
      );
    // a remembered restart is in the store already
    if (this.type.remember && !remembered)
      this.context.remember?.({ entityType: this.type.name, partition, entityId, remembered: true });
    return entity;
  }

  private stop(e: Entity, reason: PassivationReason): void {
    this.system.unwatch(e.ref, this.context.watcher);
    this.system.stop(e.ref);
    this.forget(e, reason);
  }

  /**
   * `finished`: it stopped on its own. Remembered ids are forgotten when the entity is passivated
   * (idle, cap) or finished, as Akka does; a hand-off, a lost lease or a stopping node keeps
   * them, so the partition's next owner restarts them.
   */
  private forget(e: Entity, reason: PassivationReason, finished = false): void {
    if (this.entities.get(e.id) !== e) return;
    if (this.type.remember && (finished || reason === 'idle' || reason === 'cap'))
      this.context.remember?.({
        entityType: this.type.name,
        partition: e.partition,
        entityId: e.id,
        remembered: false,
      });
    this.entities.delete(e.id);
    const ids = this.byPartition.get(e.partition);
    ids?.delete(e.id);
    if (ids?.size === 0) this.byPartition.delete(e.partition);
    this.metrics.passivated(this.type.name, reason);
    this.metrics.active(this.type.name, this.entities.size);
    // the level is the type's (`activationLog`); the line is not even built when it is off
    if (this.system.logger.isLevelEnabled(this.type.activationLog))
      this.system.logger[this.type.activationLog](
        {
          event: 'sharding.passivated',
          entityType: this.type.name,
          entityId: e.id,
          partition: e.partition,
          version: this.context.tableVersion(),
          incarnation: this.system.node.uid,
          activation: e.activation,
          reason,
        },
        `entity ${this.type.name}/${e.id} stopped (${reason})`,
      );
  }

  /**
   * Over the cap: stop least recently used entities with nothing queued (never `keep`). When
   * every candidate still has messages queued (a burst), look again once they worked some off.
   */
  private enforceCap(keep: string | undefined): void {
    if (this.entities.size <= this.type.maxActiveEntities) return;
    for (const e of [...this.entities.values()]) {
      if (this.entities.size <= this.type.maxActiveEntities) return;
      if (e.id !== keep && this.system.mailboxSize(e.ref) === 0) this.stop(e, 'cap');
    }
    if (this.entities.size > this.type.maxActiveEntities && this.capTimer === undefined)
      this.capTimer = this.system.clock.setTimeout(() => {
        this.capTimer = undefined;
        this.enforceCap(undefined);
        this.schedulePassivation();
      }, CAP_RETRY_MS);
  }

  /** One timer, due when the least recently used entity's idle time runs out. */
  private schedulePassivation(): void {
    const after = this.type.passivateAfterMs;
    if (after === Number.POSITIVE_INFINITY) return;
    const lru = this.entities.values().next().value as Entity | undefined;
    const due = lru ? lru.lastMessageAt + after : Number.POSITIVE_INFINITY;
    if (due === this.timerAt) return;
    if (this.timer !== undefined) this.system.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = due;
    if (due === Number.POSITIVE_INFINITY) return;
    this.timer = this.system.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.passivateIdle();
      },
      Math.max(0, due - this.system.clock.now()),
    );
  }

  private passivateIdle(): void {
    const now = this.system.clock.now();
    const after = this.type.passivateAfterMs;
    for (const e of [...this.entities.values()]) {
      if (now - e.lastMessageAt < after) break;
      // still working off its mailbox: it counts as busy, looked at again one timeout later
      if (this.system.mailboxSize(e.ref) > 0) {
        this.entities.delete(e.id);
        e.lastMessageAt = now;
        this.entities.set(e.id, e);
      } else this.stop(e, 'idle');
    }
    this.schedulePassivation();
  }
}
