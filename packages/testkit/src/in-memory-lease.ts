import type { Logger, Metrics } from '@doyen/core';
import {
  KeyLease,
  type LeaseSettings,
  MemoryKeyStore,
  type MemoryLeasedKey,
  validateLeaseSettings,
} from '@doyen/lease';

/**
 * The shared "etcd" of a test or simulation for {@link InMemoryLease}s: every lease made from one
 * arbiter contends for the same names. Time comes from the injected `now()`, so a simulated clock
 * drives the TTL. There are no timers: expiry is evaluated whenever a lease is acquired or checked,
 * or on {@link sweep}.
 *
 * Like the etcd backend, a holder keeps its lease alive for as long as it is open and can reach the
 * arbiter; its TTL starts running when it stops (closed without release, or cut off with
 * {@link setReachable}).
 */
export class InMemoryLeaseArbiter {
  private readonly store: MemoryKeyStore;

  constructor(readonly now: () => number = Date.now) {
    this.store = new MemoryKeyStore({ now });
  }

  /** A lease on `name` for one simulated node. */
  lease(
    name: string,
    settings: LeaseSettings,
    options: { logger?: Logger; metrics?: Metrics } = {},
  ): InMemoryLease {
    validateLeaseSettings(name, settings);
    const key = this.store.key(name, { ...settings, keepAlive: true }, options);
    return new InMemoryLease(name, key, options);
  }

  /** The current holder of `name`, if any (after applying expiry). */
  holder(name: string): string | undefined {
    return this.store.holder(name);
  }

  /** Deletes `name` behind its holder's back (an operator, or another process); the holder is told it lost it. */
  revoke(name: string): void {
    this.store.revoke(name);
  }

  /**
   * Cuts a node off from the arbiter (or reconnects it). While cut off its `acquire` resolves false and its
   * held lease stops being renewed: it lapses `ttlMs` after the cut, for the holder and everyone else alike.
   */
  setReachable(lease: InMemoryLease, reachable: boolean): void {
    lease.memoryKey.setReachable(reachable);
  }

  /** Applies expiry to every name now, notifying holders that lost theirs. */
  sweep(): void {
    this.store.sweep();
  }
}

/** A lease arbitrated in process by an {@link InMemoryLeaseArbiter}: `arbiter.lease(name, settings)`. */
export class InMemoryLease extends KeyLease {
  constructor(
    name: string,
    /** @internal */
    readonly memoryKey: MemoryLeasedKey,
    options: { logger?: Logger; metrics?: Metrics } = {},
  ) {
    super(name, memoryKey, options);
  }
}
