import { DoyenError, InvalidConfigError } from '@doyen/core';

/**
 * A distributed lock with a time-to-live, held by at most one owner at a time (Akka's "lease").
 * The split-brain resolver's `lease-majority` strategy and cluster singletons use it so that only
 * one side of a partition acts. Every backend (etcd, in-memory for simulations) implements this.
 */
export interface Lease {
  /** e.g. `sbr` or `singleton-allocator`. */
  readonly name: string;
  /**
   * Try to become (or stay) the holder; resolves true when held by `owner` afterwards.
   * Never throws on contention or an unreachable backend: resolves false.
   */
  acquire(owner: string): Promise<boolean>;
  /** Give it up if held by `owner` (idempotent). */
  release(owner: string): Promise<void>;
  /** Cheap local check: does `owner` still hold it as far as this process knows (TTL not lapsed, keep-alive healthy)? */
  checkLease(owner: string): boolean;
  /** Called when a held lease is lost (keep-alive failed / expired / taken over). Returns an unsubscribe function. */
  onLost(listener: (owner: string) => void): () => void;
  /** Stops keeping anything alive and frees resources; does not release (a held lease lapses after its TTL). */
  close(): Promise<void>;
}

export interface LeaseSettings {
  /** How long a holder keeps the lease without renewing it, e.g. 5000. */
  ttlMs: number;
  /** Bound on every single backend call, e.g. 2000. Must be below `ttlMs`. */
  timeoutMs: number;
}

/** Why a held lease was lost, as logged and counted. */
export type LeaseLossReason = 'expired' | 'keepalive-failed' | 'deleted' | 'taken-over' | 'watch-failed';

/** A lease was configured with values it cannot work with. Thrown at construction (or for an empty owner). */
export class LeaseConfigError extends InvalidConfigError {
  constructor(
    readonly leaseName: string,
    reason: string,
  ) {
    super(`lease ${JSON.stringify(leaseName)}: ${reason}`);
  }
}

/**
 * The lease backend did not answer within `timeoutMs` or failed. `acquire` turns it into `false`;
 * it is exported so callers and logs can recognise the cause.
 */
export class LeaseUnavailableError extends DoyenError {
  constructor(
    readonly leaseName: string,
    readonly operation: string,
    readonly reason: string,
  ) {
    super(`lease ${JSON.stringify(leaseName)}: ${operation} failed: ${reason}`, 'lease-unavailable');
  }
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Validates the parts every backend shares; throws LeaseConfigError. */
export function validateLeaseSettings(name: string, settings: LeaseSettings): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new LeaseConfigError(String(name), 'name must be 1-64 letters, digits or . _ -');
  }
  const { ttlMs, timeoutMs } = settings;
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new LeaseConfigError(name, `ttlMs must be a positive number of milliseconds, got ${ttlMs}`);
  }
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new LeaseConfigError(name, `timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`);
  }
  if (timeoutMs >= ttlMs) {
    throw new LeaseConfigError(
      name,
      `timeoutMs (${timeoutMs}) must be below ttlMs (${ttlMs}): a call may not outlive the lease`,
    );
  }
}

export function validateOwner(name: string, owner: string): void {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 512) {
    throw new LeaseConfigError(name, `owner must be a non-empty string of at most 512 characters`);
  }
}

type LostListener = (owner: string, reason: LeaseLossReason) => void;

/** A set of `onLost` listeners; a throwing listener is reported, never propagated. */
export class LostListeners {
  private readonly listeners = new Set<LostListener>();

  constructor(private readonly onListenerError: (error: unknown) => void) {}

  add(listener: LostListener): () => void {
    // Wrap so the same function subscribed twice gets two independent subscriptions.
    const entry: LostListener = (owner, reason) => listener(owner, reason);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  notify(owner: string, reason: LeaseLossReason): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(owner, reason);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
