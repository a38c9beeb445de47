import { type Logger, type Metrics, RateLimitedLog, silentLogger, toError } from '@doyen/core';
import { type Lease, type LeaseLossReason, LostListeners, validateOwner } from './lease.js';
import type { LeasedKey } from './leased-key.js';

export interface KeyLeaseOptions {
  readonly logger?: Logger;
  readonly metrics?: Metrics;
}

const ACQUIRE_TOTAL = 'doyen_lease_acquire_total';
const ACQUIRE_HELP = 'Lease acquire attempts by result (held, refused, unavailable).';
const LOST_TOTAL = 'doyen_lease_lost_total';
const LOST_HELP = 'Held leases lost, by reason.';
const HELD = 'doyen_lease_held';
const HELD_HELP = '1 while this process holds the lease.';

/**
 * A {@link Lease} on a {@link LeasedKey} that keeps its claim alive itself (`keepAlive`): acquire is
 * a claim, `checkLease` is "still before `validUntil`", loss comes from the key. Logs, counts and
 * turns an unavailable store into `false`, whatever the backend.
 */
export class KeyLease implements Lease {
  private readonly logger: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly unavailableLog: RateLimitedLog;
  private readonly listeners: LostListeners;
  /** The owner this lease last acquired for and has not lost or released since. */
  private heldBy: string | undefined;
  private closed = false;

  constructor(
    readonly name: string,
    protected readonly leasedKey: LeasedKey,
    options: KeyLeaseOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger();
    this.metrics = options.metrics;
    this.unavailableLog = new RateLimitedLog(this.logger, () => leasedKey.now(), 1);
    this.listeners = new LostListeners((error) =>
      this.logger.error(
        { event: 'lease-listener-failed', lease: name, err: toError(error) },
        'onLost listener threw',
      ),
    );
    leasedKey.onLost((owner, reason) => this.lost(owner, reason));
  }

  acquire(owner: string): Promise<boolean> {
    try {
      validateOwner(this.name, owner);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.closed) return Promise.resolve(false);
    return this.leasedKey.claim(owner).then(
      (claim) => {
        if (!claim.won) {
          this.count('refused');
          this.logger.debug(
            { event: 'lease-refused', lease: this.name, owner, holder: claim.holder },
            'lease held by another owner',
          );
          return false;
        }
        if (this.heldBy !== owner) {
          this.heldBy = owner;
          this.count('held');
          this.metrics?.set(HELD, HELD_HELP, 1, { lease: this.name });
          this.logger.info(
            { event: 'lease-acquired', lease: this.name, owner, revision: claim.revision },
            'lease acquired',
          );
        }
        return true;
      },
      (error: unknown) => {
        if (this.closed) return false;
        this.count('unavailable');
        this.unavailableLog.warn(
          `unavailable:${this.name}`,
          { event: 'lease-unavailable', lease: this.name, owner, err: toError(error) },
          'lease backend unavailable; acquire resolves false',
        );
        return false;
      },
    );
  }

  async release(owner: string): Promise<void> {
    validateOwner(this.name, owner);
    if (this.closed) return;
    const mine = this.heldBy === owner;
    if (mine) {
      this.heldBy = undefined;
      this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    }
    try {
      await this.leasedKey.release(owner);
      if (mine) this.logger.info({ event: 'lease-released', lease: this.name, owner }, 'lease released');
    } catch (error) {
      // Keep-alives have stopped, so the key lapses after its TTL anyway.
      this.logger.warn(
        { event: 'lease-release-failed', lease: this.name, owner, err: toError(error) },
        'could not release lease; it lapses after its TTL',
      );
    }
  }

  checkLease(owner: string): boolean {
    return !this.closed && this.leasedKey.holds(owner);
  }

  onLost(listener: (owner: string) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Stops keeping the lease alive without releasing it (it lapses after its TTL) and frees the backend. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.heldBy !== undefined) this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    this.heldBy = undefined;
    this.listeners.clear();
    await this.leasedKey.close();
  }

  private lost(owner: string, reason: LeaseLossReason): void {
    if (this.closed) return;
    if (this.heldBy === owner) this.heldBy = undefined;
    this.metrics?.inc(LOST_TOTAL, LOST_HELP, { lease: this.name, reason });
    this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    this.logger.warn({ event: 'lease-lost', lease: this.name, owner, reason }, 'lease lost');
    this.listeners.notify(owner, reason);
  }

  private count(result: 'held' | 'refused' | 'unavailable'): void {
    this.metrics?.inc(ACQUIRE_TOTAL, ACQUIRE_HELP, { lease: this.name, result });
  }
}
