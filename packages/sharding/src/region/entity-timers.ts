import { type Clock, read } from '@doyen/core';
import type { AnyActorLogic, EventObject } from 'xstate';

/**
 * An entity's pending delayed events (xstate `after`, delayed `raise` and `sendTo`) carried in its
 * persisted snapshot when it moves (issue 29: live migration). xstate 5.33 does not do this: the
 * persisted snapshot holds no scheduled event, and `createActor(logic, { snapshot })` re-arms none
 * (its system is created without the snapshot: statelyai/xstate#5331, open), so a cart that
 * expires after 30 min idle would never expire once its partition moved.
 *
 * The field below rides inside the snapshot value (no cargo format change). Each entry holds the
 * delay REMAINING when it was captured, on this node's actor clock: another node's clock reading
 * means nothing here. A snapshot object carrying the field is "as of" the clock reading recorded for
 * it in `asOf`; one without a record (off the wire) is as of its arrival.
 */
export const TIMERS_FIELD = 'doyen$timers';

/** One pending delayed event; `source`/`target` are child-id paths from the entity ([] = itself). */
export interface CarriedTimer {
  readonly source: readonly string[];
  readonly target: readonly string[];
  readonly event: EventObject;
  readonly id: string;
  readonly remainingMs: number;
}

/** Bounds on what a snapshot may carry (a hand-off's snapshot is network input). */
export interface TimerLimits {
  readonly maxTimers: number;
  /** Plain-data nodes of one event (the wire's own count: `read.plainData`), and its depth. */
  readonly maxEventNodes: number;
  readonly maxEventDepth: number;
  readonly maxIdChars: number;
  /** Child-id path length of a source or target. */
  readonly maxPathDepth: number;
}

export const DEFAULT_TIMER_LIMITS: TimerLimits = {
  maxTimers: 64,
  maxEventNodes: 256,
  maxEventDepth: 16,
  maxIdChars: 256,
  maxPathDepth: 8,
};

/** Why carried delayed events were not re-armed (the `reason` of the dropped metric and log line). */
export type TimerDropReason =
  | 'malformed'
  | 'too-many'
  | 'too-large'
  | 'bad-delay'
  | 'outside-entity'
  | 'not-serializable';

export interface TimerDrop {
  readonly reason: TimerDropReason;
  readonly count: number;
  /** The entity's path (capture) or id (arrival). */
  readonly entity: string;
}

/** The parts of xstate's per-root actor system this module uses (xstate 5.33, `createSystem`). */
interface XSystem {
  scheduler: {
    schedule(source: XActor, target: XActor, event: EventObject, delay: number, id?: string): void;
  };
  getSnapshot(): { _scheduledEvents: Record<string, XScheduled> };
  _snapshot: { _scheduledEvents: Record<string, XScheduled> };
  _relay(source: XActor, target: XActor, event: EventObject): void;
}

interface XActor {
  readonly id: string;
  readonly sessionId: string;
  getSnapshot(): { children?: Record<string, XActor> };
}

interface XScheduled {
  readonly source: XActor;
  readonly target: XActor;
  readonly event: EventObject;
  readonly delay: number;
  readonly id: string;
  /** Set by xstate with `Date.now()`; overwritten here with the actor clock (see `patchScheduler`). */
  startedAt: number;
}

interface XScope {
  readonly self: XActor;
  readonly system: XSystem;
}

/** Systems whose scheduler stamps arm times on the actor clock already. */
const PATCHED = new WeakSet<object>();

export class EntityTimers {
  /** Running entities (by cell path): their xstate root actor and its system. */
  private readonly roots = new Map<string, XScope>();
  /** Timers taken off a snapshot in `restoreSnapshot`, re-armed in `start` (same actor). */
  private readonly toArm = new WeakMap<object, CarriedTimer[]>();
  /** Clock reading a carrying snapshot's remaining delays are relative to (see the file comment). */
  private readonly asOf = new WeakMap<object, number>();

  constructor(
    private readonly clock: Clock,
    private readonly dropped: (drop: TimerDrop) => void,
    private readonly limits: TimerLimits = DEFAULT_TIMER_LIMITS,
  ) {}

  /**
   * `logic` that strips the field off a restored snapshot and re-arms its timers: events due
   * already go into the entity's own queue before it starts taking messages (they were due before
   * any message delivered after the restore), in due order; the others are scheduled with their
   * remaining delay and their original id (so exiting the state cancels them as before).
   */
  wrap(logic: AnyActorLogic): AnyActorLogic {
    const inner = logic as AnyActorLogic & {
      restoreSnapshot?: (s: unknown, scope: unknown) => unknown;
      start?: (s: unknown, scope: unknown) => void;
    };
    return Object.create(logic, {
      restoreSnapshot: {
        value: (persisted: unknown, scope: XScope) => {
          const rebased = this.rebase(persisted);
          const timers = timersOf(rebased);
          const clean = timers === undefined ? rebased : without(rebased as Record<string, unknown>);
          if (timers !== undefined && timers.length > 0) this.toArm.set(scope.self, timers);
          return inner.restoreSnapshot ? inner.restoreSnapshot(clean, scope) : clean;
        },
      },
      start: {
        value: (snapshot: unknown, scope: XScope) => {
          this.patchScheduler(scope.system);
          this.roots.set(scope.self.id, scope);
          inner.start?.(snapshot, scope);
          const timers = this.toArm.get(scope.self);
          if (timers !== undefined) {
            this.toArm.delete(scope.self);
            this.arm(scope, timers);
          }
        },
      },
    }) as AnyActorLogic;
  }

  /** The entity at `path` stopped: nothing of it is kept here. */
  release(path: string): void {
    this.roots.delete(path);
  }

  /**
   * `persisted` (the entity at `path`, still running) with its pending delayed events added, as of
   * now. Events whose source or target is outside the entity's own actors, or that are no plain
   * data, cannot travel: dropped, logged and counted.
   */
  capture(path: string, persisted: unknown): unknown {
    const scope = this.roots.get(path);
    if (scope === undefined || !isRecord(persisted)) return persisted;
    const now = this.clock.now();
    const timers: CarriedTimer[] = [];
    let outside = 0;
    let unserializable = 0;
    for (const s of Object.values(scope.system.getSnapshot()._scheduledEvents)) {
      const source = pathOf(scope.self, s.source, this.limits.maxPathDepth);
      const target = pathOf(scope.self, s.target, this.limits.maxPathDepth);
      if (source === undefined || target === undefined) {
        outside++;
        continue;
      }
      const event = this.plainEvent(s.event);
      if (event === undefined) {
        unserializable++;
        continue;
      }
      timers.push({ source, target, event, id: s.id, remainingMs: Math.max(0, s.startedAt + s.delay - now) });
    }
    if (outside > 0) this.dropped({ reason: 'outside-entity', count: outside, entity: path });
    if (unserializable > 0) this.dropped({ reason: 'not-serializable', count: unserializable, entity: path });
    if (timers.length === 0) return persisted;
    const carrying = { ...persisted, [TIMERS_FIELD]: timers.slice(0, this.limits.maxTimers) };
    if (timers.length > this.limits.maxTimers)
      this.dropped({ reason: 'too-many', count: timers.length - this.limits.maxTimers, entity: path });
    this.asOf.set(carrying, now);
    return carrying;
  }

  /**
   * A snapshot arrived (a hand-off's cargo, off the wire, or held here through a lease lapse): its
   * field is checked against the limits (refused whole if anything in it is off: the entity keeps
   * its state, without those timers; logged and counted) and rebased to now.
   */
  arrived(entityId: string, snapshot: unknown): unknown {
    if (!isRecord(snapshot) || !(TIMERS_FIELD in snapshot)) return snapshot;
    const raw = snapshot[TIMERS_FIELD];
    const reason = this.invalid(raw);
    if (reason !== undefined) {
      this.dropped({ reason, count: Array.isArray(raw) ? raw.length : 1, entity: entityId });
      return without(snapshot);
    }
    return this.rebase(snapshot);
  }

  /** `snapshot` with its carried remaining delays reduced by the time since it was as of (see `asOf`). */
  rebase(snapshot: unknown): unknown {
    const timers = timersOf(snapshot);
    if (timers === undefined) return snapshot;
    const now = this.clock.now();
    const since = this.asOf.get(snapshot as object);
    if (since === now) return snapshot;
    const elapsed = since === undefined ? 0 : now - since;
    const rebased = {
      ...(snapshot as Record<string, unknown>),
      [TIMERS_FIELD]: timers.map((t) => ({ ...t, remainingMs: Math.max(0, t.remainingMs - elapsed) })),
    };
    this.asOf.set(rebased, now);
    return rebased;
  }

  private invalid(raw: unknown): TimerDropReason | undefined {
    if (!Array.isArray(raw)) return 'malformed';
    if (raw.length > this.limits.maxTimers) return 'too-many';
    for (const t of raw) {
      if (!isRecord(t)) return 'malformed';
      const { source, target, event, id, remainingMs } = t;
      if (!this.isPath(source) || !this.isPath(target)) return 'malformed';
      if (typeof id !== 'string' || id.length > this.limits.maxIdChars) return 'malformed';
      if (!isRecord(event) || typeof event.type !== 'string') return 'malformed';
      // the wire checked plain data already: what fails here is over the caps
      if (this.plainEvent(event) === undefined) return 'too-large';
      if (typeof remainingMs !== 'number' || !Number.isFinite(remainingMs) || remainingMs < 0)
        return 'bad-delay';
    }
    return undefined;
  }

  /** A copy of `event` if it is plain data within the caps (doyen refs stay refs), else undefined. */
  private plainEvent(event: unknown): EventObject | undefined {
    try {
      return read.plainData(this.limits.maxEventDepth, this.limits.maxEventNodes)(
        event,
        'event',
      ) as EventObject;
    } catch {
      return undefined;
    }
  }

  private isPath(p: unknown): p is string[] {
    return (
      Array.isArray(p) &&
      p.length <= this.limits.maxPathDepth &&
      p.every((s) => typeof s === 'string' && s.length <= this.limits.maxIdChars)
    );
  }

  /**
   * xstate stamps an armed event with `Date.now()`; the remaining delay must come from the actor
   * clock (simulations, and a clock that is not the wall's), so the arm time is re-stamped here.
   * Once per entity's xstate system (every actor of the entity shares it).
   */
  private patchScheduler(system: XSystem): void {
    if (PATCHED.has(system)) return;
    PATCHED.add(system);
    const scheduler = system.scheduler;
    const schedule = scheduler.schedule.bind(scheduler);
    scheduler.schedule = (source, target, event, delay, id = Math.random().toString(36).slice(2)) => {
      const at = this.clock.now();
      schedule(source, target, event, delay, id);
      const armed = system._snapshot._scheduledEvents[`${source.sessionId}.${id}`];
      if (armed !== undefined) armed.startedAt = at;
    };
  }

  /** Due events first, in due order (stable), into the actors' queues; the others re-scheduled. */
  private arm(scope: XScope, timers: readonly CarriedTimer[]): void {
    const due: { source: XActor; target: XActor; event: EventObject; remainingMs: number }[] = [];
    let outside = 0;
    for (const t of timers) {
      const source = actorAt(scope.self, t.source);
      const target = actorAt(scope.self, t.target);
      if (source === undefined || target === undefined) {
        outside++;
        continue;
      }
      if (t.remainingMs <= 0) due.push({ source, target, event: t.event, remainingMs: t.remainingMs });
      else scope.system.scheduler.schedule(source, target, t.event, t.remainingMs, t.id);
    }
    if (outside > 0) this.dropped({ reason: 'outside-entity', count: outside, entity: scope.self.id });
    // already due: relayed as xstate's scheduler would have, before the actor takes any message
    for (const d of due) scope.system._relay(d.source, d.target, d.event);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function timersOf(snapshot: unknown): CarriedTimer[] | undefined {
  if (!isRecord(snapshot)) return undefined;
  const t = snapshot[TIMERS_FIELD];
  return Array.isArray(t) ? (t as CarriedTimer[]) : undefined;
}

function without(snapshot: Record<string, unknown>): Record<string, unknown> {
  const { [TIMERS_FIELD]: _, ...rest } = snapshot;
  return rest;
}

/** Child-id path from `root` to `ref` (depth-first over snapshots' `children`), or undefined. */
function pathOf(root: XActor, ref: XActor, maxDepth: number): string[] | undefined {
  if (ref === root) return [];
  if (maxDepth === 0) return undefined;
  const children = root.getSnapshot().children ?? {};
  for (const [id, child] of Object.entries(children)) {
    const rest = pathOf(child, ref, maxDepth - 1);
    if (rest !== undefined) return [id, ...rest];
  }
  return undefined;
}

function actorAt(root: XActor, path: readonly string[]): XActor | undefined {
  let at: XActor | undefined = root;
  for (const id of path) at = at?.getSnapshot().children?.[id];
  return at;
}
