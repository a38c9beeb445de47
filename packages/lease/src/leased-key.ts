import { LeaseConfigError, type LeaseLossReason } from './lease.js';

/** What a claim found. */
export interface Claim {
  /** This call made `owner` the holder (or this handle already held it and keeps it alive). */
  readonly won: boolean;
  /** The holder afterwards (`owner` when won); undefined when the key is absent. */
  readonly holder: string | undefined;
  /** The key's mod revision: the claim's own when won. Grows with every change of the key. */
  readonly revision: number;
}

/**
 * One key held under a TTL lease in a linearizable store (etcd, or an in-memory one): the one
 * primitive behind the split-brain resolver's lease and the etcd leader election.
 *
 * - `claim` creates the key with a fresh lease unless another owner holds it; a key that already
 *   names `owner` (a lost answer, a restarted process) is taken over.
 * - `renew` keeps a won claim alive once and checks the key is still ours.
 * - `release` deletes the key only if it names `owner` (delete-if-mine).
 * - `watch` reports the holder, first as read, then on every change.
 * - `validUntil` is the send time of the last acknowledged claim/renewal plus the TTL: the store
 *   counts its TTL from a later receipt, so a holder that stops acting then never overlaps a
 *   successor.
 *
 * Calls settle within `timeoutMs`: one that got no answer rejects with a `LeaseUnavailableError`
 * (the etcd backend also runs calls one at a time, so a renewal never races a claim, and gives back
 * a claim answered too late). A handle created with `keepAlive` keeps a won claim alive itself and
 * reports its loss through `onLost`.
 */
export interface LeasedKey {
  /** The store key, e.g. `/doyen/<cluster>/leases/<name>`. */
  readonly key: string;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  /** The clock `validUntil` is measured on. */
  now(): number;
  claim(owner: string): Promise<Claim>;
  /** True when renewed and still ours; false when the key is gone or someone else's. */
  renew(owner: string): Promise<boolean>;
  release(owner: string): Promise<void>;
  /** Never throws: a broken watch is re-established. Returns an unsubscribe function. */
  watch(listener: (holder: string | undefined, revision: number) => void): () => void;
  /** Until when `owner` may act on its claim through this handle (0 when it holds nothing). */
  validUntil(owner: string): number;
  /** `now() < validUntil(owner)`. */
  holds(owner: string): boolean;
  /** A claim this handle held is gone (expired, deleted, taken over, renewal refused). */
  onLost(listener: (owner: string, reason: LeaseLossReason) => void): () => void;
  /** Stops renewing without releasing (the key lapses after its TTL) and ends every watch. */
  close(): Promise<void>;
}

/** Options every backend shares. */
export interface LeasedKeySettings {
  /** How long the store keeps the key without a renewal, e.g. 5000. */
  readonly ttlMs: number;
  /** Bound on every call, e.g. 2000. At most `ttlMs`. */
  readonly timeoutMs: number;
  /** Renew a won claim every third of the TTL without being asked (the `Lease` adapters). */
  readonly keepAlive?: boolean;
}

/** Checks what every backend shares; throws LeaseConfigError naming `name`. */
export function validateKeySettings(name: string, { ttlMs, timeoutMs }: LeasedKeySettings): void {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new LeaseConfigError(name, `ttlMs must be a positive number of ms, got ${ttlMs}`);
  }
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > ttlMs) {
    throw new LeaseConfigError(
      name,
      `timeoutMs must be a positive number of ms no larger than ttlMs, got ${timeoutMs}`,
    );
  }
}
