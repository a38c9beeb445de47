import { type Logger, silentLogger, toError } from '@doyen/core';
import {
  type Lease,
  type LeaseLossReason,
  type LeaseSettings,
  LostListeners,
  validateLeaseSettings,
  validateOwner,
} from './lease.js';

interface LeaseRecord {
  owner: string;
  holder: InMemoryLease;
  ttlMs: number;
  /** Last moment the holder was known to keep the lease alive; meaningful once it stopped. */
  renewedAt: number;
}

/**
 * The shared "etcd" of a simulation: every {@link InMemoryLease} made from one arbiter contends for
 * the same names. Time comes from the injected `now()`, so a simulated clock drives the TTL. There are
 * no timers: expiry is evaluated whenever a lease is acquired or checked, or on {@link sweep}.
 *
 * Like the etcd backend, a holder keeps its lease alive for as long as it is open and can reach the
 * arbiter; its TTL starts running when it stops (closed without release, or cut off with
 * {@link setReachable}).
 */
export class InMemoryLeaseArbiter {
  private readonly records = new Map<string, LeaseRecord>();

  constructor(readonly now: () => number = Date.now) {}

  /** A lease on `name` for one simulated node. */
  lease(name: string, settings: LeaseSettings, options: { logger?: Logger } = {}): InMemoryLease {
    return new InMemoryLease(this, name, settings, options);
  }

  /** The current holder of `name`, if any (after applying expiry). */
  holder(name: string): string | undefined {
    return this.current(name)?.owner;
  }

  /** Deletes `name` behind its holder's back (an operator, or another process); the holder is told it lost it. */
  revoke(name: string): void {
    const record = this.records.get(name);
    if (!record) return;
    this.records.delete(name);
    record.holder.lost(record.owner, 'deleted');
  }

  /**
   * Cuts a node off from the arbiter (or reconnects it). While cut off its `acquire` resolves false and its
   * held lease stops being renewed: it lapses `ttlMs` after the cut, for the holder and everyone else alike.
   */
  setReachable(lease: InMemoryLease, reachable: boolean): void {
    if (lease.reachable === reachable) return;
    if (reachable) {
      // Drop what lapsed while cut off; keep-alives resume for the rest.
      for (const [name, record] of [...this.records]) {
        if (record.holder === lease) this.current(name);
      }
    } else {
      this.freeze(lease);
    }
    lease.reachable = reachable;
  }

  /** Applies expiry to every name now, notifying holders that lost theirs. */
  sweep(): void {
    for (const name of [...this.records.keys()]) this.current(name);
  }

  /** @internal */
  tryAcquire(lease: InMemoryLease, owner: string, ttlMs: number): boolean {
    const record = this.current(lease.name);
    if (record && record.owner !== owner) return false;
    if (record && record.holder !== lease) {
      // Same owner from another instance (a new incarnation): it takes over, as with etcd.
      record.holder.lost(record.owner, 'taken-over');
    }
    this.records.set(lease.name, { owner, holder: lease, ttlMs, renewedAt: this.now() });
    return true;
  }

  /** @internal */
  release(lease: InMemoryLease, owner: string): void {
    const record = this.current(lease.name);
    if (record && record.owner === owner) this.records.delete(lease.name);
  }

  /** @internal Whether `lease` holds `name` for `owner` right now. */
  holds(lease: InMemoryLease, owner: string): boolean {
    const record = this.current(lease.name);
    return record !== undefined && record.holder === lease && record.owner === owner;
  }

  /** @internal The holder stops keeping its leases alive from now on (closed or cut off). */
  freeze(lease: InMemoryLease): void {
    const t = this.now();
    for (const record of this.records.values()) {
      if (record.holder === lease && lease.keepingAlive()) record.renewedAt = t;
    }
  }

  /** The live record for `name`: renewed if its holder keeps it alive, dropped (and the holder told) if lapsed. */
  private current(name: string): LeaseRecord | undefined {
    const record = this.records.get(name);
    if (!record) return undefined;
    const t = this.now();
    if (record.holder.keepingAlive()) {
      record.renewedAt = t;
      return record;
    }
    if (t - record.renewedAt < record.ttlMs) return record;
    this.records.delete(name);
    record.holder.lost(record.owner, 'expired');
    return undefined;
  }
}

/**
 * A {@link Lease} arbitrated in process by an {@link InMemoryLeaseArbiter}, for deterministic
 * simulations and tests. Create it with `arbiter.lease(name, settings)`.
 */
export class InMemoryLease implements Lease {
  /** @internal */
  reachable = true;
  private closed = false;
  private readonly listeners: LostListeners;
  private readonly logger: Logger;
  private readonly ttlMs: number;

  constructor(
    private readonly arbiter: InMemoryLeaseArbiter,
    readonly name: string,
    settings: LeaseSettings,
    options: { logger?: Logger } = {},
  ) {
    validateLeaseSettings(name, settings);
    this.ttlMs = settings.ttlMs;
    this.logger = options.logger ?? silentLogger();
    this.listeners = new LostListeners((error) =>
      this.logger.error(
        { event: 'lease-listener-failed', lease: name, err: toError(error) },
        'onLost listener threw',
      ),
    );
  }

  async acquire(owner: string): Promise<boolean> {
    validateOwner(this.name, owner);
    if (this.closed) return false;
    if (!this.reachable) {
      this.logger.warn({ event: 'lease-unavailable', lease: this.name, owner }, 'lease arbiter unreachable');
      return false;
    }
    return this.arbiter.tryAcquire(this, owner, this.ttlMs);
  }

  async release(owner: string): Promise<void> {
    validateOwner(this.name, owner);
    if (this.closed || !this.reachable) return; // when cut off, the lease lapses after its TTL
    this.arbiter.release(this, owner);
  }

  checkLease(owner: string): boolean {
    return !this.closed && this.arbiter.holds(this, owner);
  }

  onLost(listener: (owner: string) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Like a crashed process: stops keeping the lease alive without releasing it; it lapses after its TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.arbiter.freeze(this);
    this.closed = true;
    this.listeners.clear();
  }

  /** @internal */
  keepingAlive(): boolean {
    return !this.closed && this.reachable;
  }

  /** @internal Called by the arbiter when this instance's record is gone. */
  lost(owner: string, reason: LeaseLossReason): void {
    if (this.closed) return;
    this.logger.warn({ event: 'lease-lost', lease: this.name, owner, reason }, 'lease lost');
    this.listeners.notify(owner);
  }
}
