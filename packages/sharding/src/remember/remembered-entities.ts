import { type ActorSystem, RateLimitedLog, toError } from '@doyen/core';
import type { ShardingMetrics } from '../region/sharding-metrics.js';
import type { RememberChange, RememberStore } from './remember-store.js';

/** Remember entities on a node: the store, and how fast remembered entities restart. */
export interface RememberOptions {
  readonly store: RememberStore;
  /** Remembered entities restarted per second on this node, all partitions together (default 100). */
  readonly restartsPerSecond?: number;
  /** First retry after a failed store call (default 100 ms), doubled per failure up to `maxRetryMs` (default 5000). */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

export const DEFAULT_RESTARTS_PER_SECOND = 100;

/** The region as the restarts reach it. */
export interface RestartTarget {
  /** Whether `partition` is still active here in the activation `activation` (restarts stop otherwise). */
  isActive(partition: number, activation: number): boolean;
  /** Starts the remembered entity unless it already runs here; true when it was started. */
  restart(entityType: string, partition: number, entityId: string): boolean;
}

interface Restarting {
  readonly entityType: string;
  readonly partition: number;
  readonly activation: number;
  readonly ids: readonly string[];
  next: number;
}

/** Pending changes are written together this soon after the first (one store call for a burst). */
const WRITE_BATCH_MS = 5;
/** The pacer's period: each tick starts what the rate allows since the last one. */
const TICK_MS = 10;

/**
 * The remembered ids of this node's entities and their restart. Changes (an entity activated,
 * or passivated by idle timeout or cap, or stopped on its own) are coalesced per id and written
 * in batches, one call at a time, so the store sees them in order; a failed write keeps them and
 * retries with backoff. When a partition becomes active here, its remembered ids are listed
 * (retried with backoff while the store is down) and restarted through a token bucket shared by
 * every partition: at most `restartsPerSecond`, never all at once. An id is started only while
 * its partition is still active in the same activation and only if it is not already running,
 * so none runs twice; where it runs is the partition keeper's decision, never the store's.
 */
export class RememberedEntities {
  private readonly store: RememberStore;
  private readonly rate: number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly pending = new Map<string, RememberChange>();
  private writing = false;
  private writeTimer: unknown;
  private writeFailures = 0;
  private readonly restarting: Restarting[] = [];
  private pacer: unknown;
  private tokens = 0;
  private refilledAt = 0;
  private readonly retries = new Set<unknown>();
  private readonly failedLog: RateLimitedLog;
  private closed = false;

  constructor(
    private readonly system: ActorSystem,
    options: RememberOptions,
    private readonly metrics: ShardingMetrics,
    private readonly target: RestartTarget,
  ) {
    this.store = options.store;
    this.rate = positiveOr(options.restartsPerSecond, DEFAULT_RESTARTS_PER_SECOND);
    this.retryMs = positiveOr(options.retryMs, 100);
    this.maxRetryMs = Math.max(this.retryMs, positiveOr(options.maxRetryMs, 5000));
    this.failedLog = new RateLimitedLog(system.logger, () => system.clock.now(), 1);
  }

  /** Changes not yet written (tests and tools). */
  get pendingWrites(): number {
    return this.pending.size;
  }

  /** Ids waiting for their restart here (tests and tools). */
  get waitingRestarts(): number {
    return this.restarting.reduce((n, r) => n + r.ids.length - r.next, 0);
  }

  // ---- writes -------------------------------------------------------------------------------

  changed(change: RememberChange): void {
    if (this.closed) return;
    const key = `${change.entityType}\u0000${change.partition}\u0000${change.entityId}`;
    // re-inserted: the batch keeps the order of each id's last change
    this.pending.delete(key);
    this.pending.set(key, change);
    this.metrics.rememberPending(this.pending.size);
    this.scheduleWrite(WRITE_BATCH_MS);
  }

  private scheduleWrite(delayMs: number): void {
    if (this.writing || this.writeTimer !== undefined || this.closed) return;
    this.writeTimer = this.system.clock.setTimeout(() => {
      this.writeTimer = undefined;
      void this.write();
    }, delayMs);
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0 || this.closed) return;
    const batch = [...this.pending];
    this.pending.clear();
    this.writing = true;
    try {
      await this.store.write(batch.map(([, c]) => c));
      this.writeFailures = 0;
    } catch (error) {
      // what changed again meanwhile is newer than what failed: only the rest goes back
      const newer = new Map(this.pending);
      this.pending.clear();
      for (const [key, c] of batch) if (!newer.has(key)) this.pending.set(key, c);
      for (const [key, c] of newer) this.pending.set(key, c);
      this.writeFailures++;
      this.failed('write', error, batch.length);
    } finally {
      this.writing = false;
      this.metrics.rememberPending(this.pending.size);
      if (this.pending.size > 0)
        this.scheduleWrite(this.writeFailures > 0 ? this.backoff(this.writeFailures) : WRITE_BATCH_MS);
    }
  }

  // ---- restarts -----------------------------------------------------------------------------

  /** `partition` became active here (its `activation`): restart the remembered ids of `entityTypes`. */
  partitionActivated(entityTypes: readonly string[], partition: number, activation: number): void {
    for (const entityType of entityTypes) void this.load(entityType, partition, activation, 0);
  }

  private async load(entityType: string, partition: number, activation: number, failures: number) {
    if (this.closed || !this.target.isActive(partition, activation)) return;
    let ids: readonly string[];
    try {
      ids = await this.store.list(entityType, partition);
    } catch (error) {
      this.failed('list', error, 1, { entityType, partition });
      const timer = this.system.clock.setTimeout(
        () => {
          this.retries.delete(timer);
          void this.load(entityType, partition, activation, failures + 1);
        },
        this.backoff(failures + 1),
      );
      this.retries.add(timer);
      return;
    }
    if (this.closed || !this.target.isActive(partition, activation) || ids.length === 0) return;
    this.system.logger.info(
      {
        event: 'sharding.remembered-restarting',
        entityType,
        partition,
        entities: ids.length,
        rate: this.rate,
      },
      `partition ${partition}: restarting ${ids.length} remembered ${entityType} entities (at most ${this.rate}/s on this node)`,
    );
    this.restarting.push({ entityType, partition, activation, ids, next: 0 });
    this.startPacer();
  }

  private startPacer(): void {
    if (this.pacer !== undefined || this.closed) return;
    this.tokens = 0;
    this.refilledAt = this.system.clock.now();
    this.pacer = this.system.clock.setTimeout(() => this.tick(), this.period());
  }

  /** One token per restart; a tick adds what the rate gave since the last, capped at one tick's worth. */
  private tick(): void {
    this.pacer = undefined;
    if (this.closed) return;
    const now = this.system.clock.now();
    const perTick = Math.max(1, (this.rate * this.period()) / 1000);
    this.tokens = Math.min(perTick, this.tokens + ((now - this.refilledAt) * this.rate) / 1000);
    this.refilledAt = now;
    while (this.tokens >= 1 && this.restarting.length > 0) {
      const r = this.restarting[0]!;
      if (r.next >= r.ids.length || !this.target.isActive(r.partition, r.activation)) {
        this.restarting.shift();
        continue;
      }
      const id = r.ids[r.next++]!;
      if (this.target.restart(r.entityType, r.partition, id)) {
        this.tokens--;
        this.metrics.rememberedRestart(r.entityType);
      }
    }
    while (this.restarting.length > 0 && this.restarting[0]!.next >= this.restarting[0]!.ids.length)
      this.restarting.shift();
    if (this.restarting.length === 0) return;
    this.pacer = this.system.clock.setTimeout(() => this.tick(), this.period());
  }

  private period(): number {
    return Math.max(TICK_MS, Math.ceil(1000 / this.rate));
  }

  // ---- failures -----------------------------------------------------------------------------

  private backoff(failures: number): number {
    return Math.min(this.maxRetryMs, this.retryMs * 2 ** Math.min(failures - 1, 20));
  }

  private failed(
    operation: 'write' | 'list',
    error: unknown,
    changes: number,
    where: { entityType?: string; partition?: number } = {},
  ): void {
    this.metrics.rememberStoreFailed(operation);
    const err = toError(error);
    this.failedLog.warn(
      `remember-${operation}`,
      { event: 'sharding.remember-store-failed', operation, changes, ...where, err },
      `remember-entities store: ${operation} failed (${err.message}); retrying with backoff`,
    );
  }

  /** Stops writing and restarting (the node stops); the store itself is its owner's to close. */
  close(): void {
    this.closed = true;
    if (this.writeTimer !== undefined) this.system.clock.clearTimeout(this.writeTimer);
    if (this.pacer !== undefined) this.system.clock.clearTimeout(this.pacer);
    for (const t of this.retries) this.system.clock.clearTimeout(t);
    this.retries.clear();
    this.restarting.length = 0;
  }
}

function positiveOr(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}
