import { InvalidConfigError } from './errors.js';

/**
 * What one remote node incarnation may make this node hold: without caps a peer that keeps
 * sending `doyen.watch` grows this node's memory until it dies (issue 25: 84 MB -> 4.6 GB).
 */
export interface PeerLimits {
  /** Death-watch registrations a remote node may hold on this node's actors; beyond: dropped. */
  readonly maxWatchesPerNode: number;
  /**
   * Death-watch registrations all remote nodes together may hold here: with the per-node cap
   * alone, every identity connected at once (up to wire.maxInboundConnections) could hold its own.
   */
  readonly maxRemoteWatches: number;
  /**
   * Asks this node may have waiting for replies from one remote node; beyond, a new ask fails at
   * once (TooManyPendingAsksError) instead of piling up until its timeout behind a silent peer.
   */
  readonly maxPendingAsksPerNode: number;
}

export const defaultPeerLimits: PeerLimits = {
  maxWatchesPerNode: 10_000,
  maxRemoteWatches: 200_000,
  maxPendingAsksPerNode: 100_000,
};

/** Infinity turns a cap off (tests use it as the positive control); anything else must be a count > 0. */
export function resolvePeerLimits(partial: Partial<PeerLimits> = {}): PeerLimits {
  const limits = { ...defaultPeerLimits, ...partial };
  for (const key of ['maxWatchesPerNode', 'maxRemoteWatches', 'maxPendingAsksPerNode'] as const) {
    const v = limits[key];
    if (!(v === Number.POSITIVE_INFINITY || (Number.isInteger(v) && v > 0)))
      throw new InvalidConfigError(`limits.${key} must be an integer > 0 (or Infinity), got ${v}`);
  }
  return limits;
}

/** A count per node key with a ceiling per key and one for all keys: what a node holds for its peers. */
export class PerNodeCounts {
  private readonly counts = new Map<string, number>();
  private sum = 0;

  constructor(
    readonly cap: number,
    readonly totalCap = Number.POSITIVE_INFINITY,
  ) {}

  /** Takes one unit for `key`; false (nothing taken) when the key or the total is at its cap. */
  tryAcquire(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n >= this.cap || this.sum >= this.totalCap) return false;
    this.counts.set(key, n + 1);
    this.sum++;
    return true;
  }

  release(key: string): void {
    const n = this.counts.get(key);
    if (n === undefined) return;
    this.sum--;
    if (n > 1) this.counts.set(key, n - 1);
    else this.counts.delete(key);
  }

  /** Units held for all keys together. */
  get total(): number {
    return this.sum;
  }

  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}

/**
 * Token buckets per key on a caller's clock (the actor system's, so simulations replay): each
 * key may spend `perSecond` a second with bursts of up to `perSecond`. Idle keys (full buckets)
 * are swept when the map grows, so peers that come and go do not grow it.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perSecond: number,
    private readonly now: () => number,
    private readonly maxKeys = 4096,
  ) {}

  /** Spends one token of `key`; false when it has none left. */
  take(key: string): boolean {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.sweep(t);
      b = { tokens: this.perSecond, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.perSecond, b.tokens + ((t - b.at) * this.perSecond) / 1000);
      b.at = t;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  forget(key: string): void {
    this.buckets.delete(key);
  }

  forgetWhere(matches: (key: string) => boolean): void {
    for (const key of this.buckets.keys()) if (matches(key)) this.buckets.delete(key);
  }

  get size(): number {
    return this.buckets.size;
  }

  /** Drops the keys whose buckets refilled; if none did, the oldest half (they only lose their debt). */
  private sweep(t: number): void {
    for (const [key, b] of this.buckets)
      if (b.tokens + ((t - b.at) * this.perSecond) / 1000 >= this.perSecond) this.buckets.delete(key);
    if (this.buckets.size < this.maxKeys) return;
    let drop = this.buckets.size / 2;
    for (const key of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(key);
    }
  }
}
