import type { ActorRef, ActorSystem, LocalActorRef, Message } from '@doyen/core';
import { fromTransition, reducerOf } from '@doyen/core';
import type { AnyActorLogic, EventObject } from 'xstate';
import type { EntityInput, EntityType } from '../entity-type.js';
import type { RememberChange } from '../remember/remember-store.js';
import { ACTIVATED_EVENT, PARTITION_PASSIVATED_EVENT, PASSIVATED_EVENT } from './entity-log-lines.js';
import { EntityTimers, type TimerDrop } from './entity-timers.js';
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

/** The entities of a partition stopped together, for its one line (entity-log-lines.ts). */
interface StoppedLine {
  readonly entityIds: string[];
  readonly activations: number[];
}

/** An entity running here (`running` hands it to the region, which reads its partition). */
export interface Entity {
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
  /**
   * Run before the background pass starts entities on its own (no arrival): the region stops
   * every partition here if the owner lease ran out by the clock (a timer due before a pause can
   * run on waking before the lease's own timer), taking their waiting snapshots along.
   */
  readonly beforeStarting?: () => void;
  /**
   * The owner lease read before an entity takes its next turn or event (see `LeaseGate`); absent,
   * entities process what they accepted unchecked (the region's positive controls and A/B).
   */
  readonly leaseGate?: LeaseGate;
  /**
   * Machine entities of types with `handOverSnapshot` carry their pending delayed events in their
   * snapshot (`EntityTimers`; default true). False only for positive controls: they are lost.
   */
  readonly carryTimers?: boolean;
}

/**
 * What an entity asks before it processes anything (issue 29): after a pause past the owner lease,
 * messages already in its mailbox and its due delayed events (xstate `after`) would run on waking,
 * before any arrival trips the region's guard and before the lease's own timer.
 */
export interface LeaseGate {
  /** This node holds its owner lease now, by the clock (no side effect). */
  holds(): boolean;
  /** It does not: stop every partition here now, as the region's arrival guard does. */
  lapsed(): void;
}

/**
 * An event an entity refused as the lease lapsed, held ahead of what its mailbox still has (see
 * `gatedLogic`): a delayed event, or a message its turn had taken (xstate sees no sender).
 */
interface RefusedEvent {
  readonly path: string;
  readonly event: Message;
}

/** xstate's stop goes through `transition` too: a stop is no message, it always runs. */
const XSTATE_STOP = 'xstate.stop';

/** How soon an over-the-cap burst is looked at again. */
const CAP_RETRY_MS = 1;
/**
 * Handed-over entities the background pass starts per turn (a timer turn each, so messages and
 * hand-offs arriving meanwhile are handled between two chunks).
 */
export const RESTORES_PER_TURN = 16;

/** A handed-over snapshot not started yet: its entity starts from it on its first message. */
interface PendingRestore {
  readonly partition: number;
  readonly snapshot: unknown;
}

const idle = fromTransition((state: null) => state, null);

/**
 * The running entities of one type on this node. Entities start on their first message (or
 * from a handed-over snapshot), keep a least-recently-used order (a Map re-inserted on every
 * message, so the oldest entry is the LRU one), and are stopped when idle past
 * `passivateAfterMs` (one timer, set for the LRU entity's deadline, on the actor clock) or when
 * over `maxActiveEntities`. Only an entity with an empty mailbox is stopped, and stopping is
 * synchronous, so no message it accepted is lost; the next message starts it again.
 *
 * Handed-over entities start LAZILY: `restore` keeps the snapshot, and the entity starts from it
 * when its first message arrives (in `deliver`, before that message, so per-entity order holds)
 * or when the background pass reaches it, `RESTORES_PER_TURN` per timer turn (so timers and
 * idle timeouts run as before). Activating a partition is then O(1): starting ~37 entities per
 * partition one partition after another made the last of a rolling restart's ~54 moved partitions
 * wait ~150 ms more than the first (issue 29). A pending snapshot is the partition's state: a
 * hand-off or a lapse of the owner lease takes it along as if its entity had been stopped.
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
  /** Handed-over snapshots not started yet, by entity id (see the class comment). */
  private readonly pending = new Map<string, PendingRestore>();
  private readonly pendingByPartition = new Map<number, Set<string>>();
  private restoreTimer: unknown;
  /**
   * How entities are spawned under the lease gate: fast-path transition logic with a `gate` read
   * once per turn by its cell (its state lives in a local during a turn, so only before the turn
   * is a refusal clean); any other logic through `gatedLogic`, read per event, which also sees
   * delayed events (xstate timers bypass the mailbox).
   */
  private readonly spawnGate: { gate?: () => boolean; logic: AnyActorLogic };
  /** Set while the region stops partitions for a refused event: it is held first for its entity. */
  private refused: RefusedEvent | undefined;
  /**
   * Pending delayed events carried in snapshots (machine logic with `handOverSnapshot`; fast-path
   * transition logic has none, and is never wrapped).
   */
  private readonly timers: EntityTimers | undefined;

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
    const fastPath = reducerOf(type.logic) !== undefined;
    this.timers =
      type.handOverSnapshot && !fastPath && context.carryTimers !== false
        ? new EntityTimers(system.clock, (drop) => this.timersDropped(drop))
        : undefined;
    const logic = this.timers?.wrap(type.logic) ?? type.logic;
    const leaseGate = context.leaseGate;
    this.spawnGate =
      leaseGate === undefined
        ? { logic }
        : fastPath
          ? { logic, gate: () => leaseGate.holds() || this.turnRefused() }
          : { logic: this.gatedLogic(logic, leaseGate) };
  }

  /** Carried delayed events that cannot be re-armed (or carried): logged and counted, never thrown. */
  private timersDropped({ reason, count, entity }: TimerDrop): void {
    for (let i = 0; i < count; i++) this.metrics.dropped(this.type.name, `delayed-${reason}`);
    this.system.logger.warn(
      { event: 'sharding.delayed-events-dropped', entityType: this.type.name, entity, reason, count },
      `${count} delayed events of ${this.type.name} entity ${entity} dropped (${reason})`,
    );
  }

  /**
   * A fast-path entity's turn found the lease lapsed: the region stops every partition, this
   * entity's with them (its mailbox untouched, so held whole and in order). False: no turn.
   */
  private turnRefused(): boolean {
    this.context.leaseGate?.lapsed();
    this.stopOrphans();
    return false;
  }

  /**
   * `logic` with every event checked against the lease first. Refused, the event is not processed:
   * its entity stops with the partition (its persisted snapshot is the state before the event) and
   * the event is held first among that entity's unprocessed messages. The object inherits
   * everything else from `logic` (fast-path transition logic is never wrapped: see `spawnGate`).
   */
  private gatedLogic(logic: AnyActorLogic, gate: LeaseGate): AnyActorLogic {
    const transition = logic.transition.bind(logic);
    return Object.create(logic, {
      transition: {
        value: (snapshot: unknown, event: EventObject, scope: { self: { id: string } }) => {
          if (event.type === XSTATE_STOP || gate.holds())
            return transition(snapshot as never, event, scope as never);
          this.refused = { path: scope.self.id, event: event as Message };
          gate.lapsed();
          this.stopOrphans();
          return snapshot;
        },
      },
    }) as AnyActorLogic;
  }

  /**
   * After a lapse stopped every partition no entity runs here; one that does was outside every
   * active partition (never expected): stopped, its mailbox dead letters, a refused event dropped.
   */
  private stopOrphans(): void {
    const refused = this.refused;
    this.refused = undefined;
    if (this.entities.size === 0 && refused === undefined) return;
    this.system.logger.warn(
      { event: 'sharding.lease-gate-orphans', entityType: this.type.name, entities: this.entities.size },
      `${this.entities.size} ${this.type.name} entities ran outside an active partition as the lease lapsed: stopped`,
    );
    for (const e of [...this.entities.values()]) this.stop(e, 'lease-lost');
    if (refused !== undefined) {
      this.metrics.dropped(this.type.name, 'lease-gate-orphan');
      this.system.deadLetter(refused.path, refused.event, undefined, 'actor-stopped');
    }
  }

  get size(): number {
    return this.entities.size;
  }

  /** Handed-over entities whose snapshot waits here to be started (see the class comment). */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Entity count per partition held here (running, or handed over and not started yet). */
  countsByPartition(): Map<number, number> {
    const counts = new Map([...this.byPartition].map(([p, ids]) => [p, ids.size]));
    for (const [p, ids] of this.pendingByPartition) counts.set(p, (counts.get(p) ?? 0) + ids.size);
    return counts;
  }

  has(entityId: string): boolean {
    return this.entities.has(entityId);
  }

  /**
   * The running entity of `entityId`, or undefined: for a caller that checks its partition and then
   * delivers to it (`deliverTo`), one lookup of the id per message instead of two.
   */
  running(entityId: string): Entity | undefined {
    return this.entities.get(entityId);
  }

  /** Delivers to the entity, starting it first (from its handed-over snapshot, if one waits) when it is not running. */
  deliver(entityId: string, partition: number, payload: Message, sender: ActorRef | undefined): void {
    this.deliverTo(this.entities.get(entityId), entityId, partition, payload, sender);
  }

  /**
   * `deliver` with the id's lookup done by the caller (`running`) in this same task: `entity` is what
   * it returned, so nothing started or stopped the entity in between.
   */
  deliverTo(
    entity: Entity | undefined,
    entityId: string,
    partition: number,
    payload: Message,
    sender: ActorRef | undefined,
  ): void {
    if (!this.recency) {
      // no idle timeout and no cap: the recency order is never read, so a message only delivers
      if (!entity)
        this.entities.set(entityId, (entity = this.start(entityId, partition, this.takePending(entityId))));
      entity.ref.send(payload, sender);
      return;
    }
    if (entity) this.entities.delete(entityId);
    else entity = this.start(entityId, partition, this.takePending(entityId));
    entity.lastMessageAt = this.system.clock.now();
    this.entities.set(entityId, entity);
    entity.ref.send(payload, sender);
    this.enforceCap(entityId);
    this.schedulePassivation();
  }

  /** Starts a remembered entity (no message, no snapshot) unless it runs here already; true if started. */
  restartRemembered(entityId: string, partition: number): boolean {
    if (this.entities.has(entityId)) return false;
    // handed over with its state: it starts from that, not afresh
    const entity = this.start(entityId, partition, this.takePending(entityId), true);
    entity.lastMessageAt = this.system.clock.now();
    this.entities.set(entityId, entity);
    this.enforceCap(entityId);
    this.schedulePassivation();
    return true;
  }

  /**
   * Keeps a handed-over snapshot (its partition was activated here): the entity starts from it on
   * its first message or in the background pass, whichever comes first. The first snapshot of an
   * id wins, as does an entity already running.
   */
  restore(entityId: string, partition: number, snapshot: unknown): void {
    if (this.entities.has(entityId) || this.pending.has(entityId)) return;
    // network input (or held through a lapse): its carried delayed events checked, as of now
    if (this.timers !== undefined) snapshot = this.timers.arrived(entityId, snapshot);
    this.pending.set(entityId, { partition, snapshot });
    let ids = this.pendingByPartition.get(partition);
    if (!ids) this.pendingByPartition.set(partition, (ids = new Set()));
    ids.add(entityId);
    this.scheduleRestores();
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
    // one line for the partition's stops, not one per entity (entity-log-lines.ts)
    const stopped: StoppedLine | undefined = this.system.logger.isLevelEnabled(this.type.activationLog)
      ? { entityIds: [], activations: [] }
      : undefined;
    // handed over and never started: the snapshot is still the entity's state, it goes along
    for (const [id, snapshot] of this.takePendingOf(partition))
      if (reason === 'hand-off' || reason === 'lease-lost')
        snapshots.push({ entityType: this.type.name, entityId: id, snapshot });
    for (const id of [...(this.byPartition.get(partition) ?? [])]) {
      const e = this.entities.get(id);
      if (!e) continue;
      if (keep) {
        const persisted = this.system.persistedSnapshotOf(e.ref);
        // with its pending delayed events (before the stop cancels them)
        const snapshot = this.timers?.capture(e.ref.path, persisted) ?? persisted;
        if (snapshot !== undefined) snapshots.push({ entityType: this.type.name, entityId: id, snapshot });
      }
      if (reason !== 'lease-lost') {
        this.stop(e, reason, stopped);
        continue;
      }
      this.system.unwatch(e.ref, this.context.watcher);
      // an event it refused as the lease lapsed (see `gatedLogic`) was taken already: it goes first
      const refused = this.refused?.path === e.ref.path ? this.refused : undefined;
      if (refused !== undefined) this.refused = undefined;
      const kept = this.system.stopKeepingMailbox(e.ref);
      if (refused !== undefined) kept.unshift({ message: refused.event, sender: undefined });
      for (const { message, sender } of kept)
        unprocessed.push({
          entityType: this.type.name,
          entityId: id,
          partition,
          payload: message,
          sender,
          hops: 0,
        });
      this.forget(e, reason, false, stopped);
    }
    if (stopped !== undefined && stopped.entityIds.length > 0)
      this.system.logger[this.type.activationLog](
        {
          event: PARTITION_PASSIVATED_EVENT,
          entityType: this.type.name,
          partition,
          version: this.context.tableVersion(),
          incarnation: this.system.node.uid,
          reason,
          entityIds: stopped.entityIds,
          activations: stopped.activations,
        },
        `${stopped.entityIds.length} ${this.type.name} entities of partition ${partition} stopped (${reason})`,
      );
    this.schedulePassivation();
    return { snapshots, unprocessed };
  }

  /** A snapshot taken here leaving with its partition: its carried delayed events as of now. */
  leaving(s: EntitySnapshot): EntitySnapshot {
    const snapshot = this.timers?.rebase(s.snapshot) ?? s.snapshot;
    return snapshot === s.snapshot ? s : { ...s, snapshot };
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
    if (this.restoreTimer !== undefined) this.system.clock.clearTimeout(this.restoreTimer);
    this.timer = undefined;
    this.capTimer = undefined;
    this.restoreTimer = undefined;
    this.pending.clear();
    this.pendingByPartition.clear();
    this.system.stop(this.parent);
  }

  /** The snapshot waiting for `entityId`, forgotten here (undefined: none waits). */
  private takePending(entityId: string): unknown {
    const p = this.pending.get(entityId);
    if (p === undefined) return undefined;
    this.pending.delete(entityId);
    const ids = this.pendingByPartition.get(p.partition);
    ids?.delete(entityId);
    if (ids?.size === 0) this.pendingByPartition.delete(p.partition);
    return p.snapshot;
  }

  /** Every snapshot waiting in `partition`, forgotten here. */
  private takePendingOf(partition: number): [string, unknown][] {
    const ids = this.pendingByPartition.get(partition);
    if (!ids) return [];
    this.pendingByPartition.delete(partition);
    const out: [string, unknown][] = [];
    for (const id of ids) {
      out.push([id, this.pending.get(id)?.snapshot]);
      this.pending.delete(id);
    }
    return out;
  }

  /** The background pass: one chunk per timer turn until no snapshot waits. */
  private scheduleRestores(): void {
    if (this.restoreTimer !== undefined || this.pending.size === 0) return;
    this.restoreTimer = this.system.clock.setTimeout(() => {
      this.restoreTimer = undefined;
      this.context.beforeStarting?.();
      let n = 0;
      for (const [id, { partition }] of this.pending) {
        if (n++ >= RESTORES_PER_TURN) break;
        const entity = this.start(id, partition, this.takePending(id));
        entity.lastMessageAt = this.system.clock.now();
        this.entities.set(id, entity);
        this.enforceCap(id);
      }
      this.schedulePassivation();
      this.scheduleRestores();
    }, 0);
  }

  private start(entityId: string, partition: number, snapshot: unknown, remembered = false): Entity {
    const activation = this.activations.next();
    const input: EntityInput = { entityId };
    const { logic, gate } = this.spawnGate;
    const ref = this.system.spawn(logic, {
      name: (++this.seq).toString(36),
      parent: this.parent,
      input,
      ...(gate ? { gate } : {}),
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
          event: ACTIVATED_EVENT,
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

  private stop(e: Entity, reason: PassivationReason, stopped?: StoppedLine): void {
    this.system.unwatch(e.ref, this.context.watcher);
    this.system.stop(e.ref);
    this.forget(e, reason, false, stopped);
  }

  /**
   * `finished`: it stopped on its own. Remembered ids are forgotten when the entity is passivated
   * (idle, cap) or finished, as Akka does; a hand-off, a lost lease or a stopping node keeps
   * them, so the partition's next owner restarts them.
   */
  private forget(e: Entity, reason: PassivationReason, finished = false, stopped?: StoppedLine): void {
    if (this.entities.get(e.id) !== e) return;
    this.timers?.release(e.ref.path);
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
    // stopped with its partition: on the partition's one line
    if (stopped !== undefined) {
      stopped.entityIds.push(e.id);
      stopped.activations.push(e.activation);
      return;
    }
    // the level is the type's (`activationLog`); the line is not even built when it is off
    if (this.system.logger.isLevelEnabled(this.type.activationLog))
      this.system.logger[this.type.activationLog](
        {
          event: PASSIVATED_EVENT,
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
