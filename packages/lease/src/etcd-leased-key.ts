import { type Logger, RateLimitedLog, silentLogger, toError, withDeadline } from '@doyen/core';
import type { Etcd3, Lease as Etcd3Lease, IRequestOp, Watcher } from 'etcd3';
import { etcdClientOptions, loadEtcd3 } from './etcd-client.js';

import {
  LeaseConfigError,
  type LeaseLossReason,
  LeaseUnavailableError,
  LostListeners,
  validateOwner,
} from './lease.js';
import { type Claim, type LeasedKey, type LeasedKeySettings, validateKeySettings } from './leased-key.js';

export interface EtcdLeasedKeyOptions extends LeasedKeySettings {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']`. */
  readonly endpoints: readonly string[];
  /** The etcd key, e.g. `/doyen/<cluster>/leases/<name>`. */
  readonly key: string;
  /** Names the key in errors and logs (the lease's or the election's name). */
  readonly name: string;
  readonly logger?: Logger;
}

/** Why `endpoints` cannot be used as etcd client URLs, or undefined; each adapter throws its own error type. */
export function etcdEndpointsProblem(endpoints: unknown): string | undefined {
  if (!Array.isArray(endpoints) || endpoints.length === 0) return 'endpoints must list at least one etcd URL';
  for (const endpoint of endpoints) {
    let url: URL;
    try {
      url = new URL(String(endpoint));
    } catch {
      return `endpoint ${JSON.stringify(endpoint)} is not a URL`;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return `endpoint ${JSON.stringify(endpoint)} must be http:// or https://`;
    }
  }
  return undefined;
}

const RETRY_WATCH_MS = 1000;
const NO_CLAIM: Claim = { won: false, holder: undefined, revision: 0 };

/** The key this handle won, with the etcd lease attached to it. */
interface Held {
  readonly owner: string;
  readonly lease: Etcd3Lease;
  readonly leaseId: string;
  readonly revision: number;
  /** Send time of the last acknowledged grant / keep-alive plus ttlMs. */
  validUntil: number;
  /** With keepAlive: the next renewal, the expiry check, the watch that notices a deletion or takeover. */
  renewal: NodeJS.Timeout | undefined;
  expiry: NodeJS.Timeout | undefined;
  unwatch: (() => void) | undefined;
}

interface Subscription {
  active: boolean;
  /** Highest revision reported: a resumed watch never reports an older one. */
  reported: number;
  watcher: Watcher | undefined;
  retry: NodeJS.Timeout | undefined;
}

/**
 * {@link LeasedKey} on etcd. `claim` reads the key (a refused claim costs one read, no lease), then
 * grants a fresh etcd lease of `ceil(ttlMs / 1000)` s, so the TTL counts from now, and
 * compare-and-swaps the key onto it: create if absent, or take it over when it names `owner` and
 * did not change in between. `renew` is one keep-alive plus a read checking the key is still ours;
 * `release` deletes the key if it names `owner` and revokes the lease; `watch` reads, then watches
 * from the next revision, reporting the mod revision. A lease this handle stops using is revoked,
 * which deletes the key only while still attached to it.
 */
export class EtcdLeasedKey implements LeasedKey {
  readonly key: string;
  readonly name: string;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  private readonly ttlSeconds: number;
  private readonly keepAlive: boolean;
  private readonly clientOptions: ConstructorParameters<typeof Etcd3>[0];
  private connecting: Promise<Etcd3> | undefined;
  private readonly logger: Logger;
  private readonly unavailableLog: RateLimitedLog;
  private readonly listeners: LostListeners;
  private readonly subscriptions = new Set<Subscription>();
  private held: Held | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: EtcdLeasedKeyOptions) {
    const { name, ttlMs, timeoutMs } = options;
    validateKeySettings(name, options);
    const problem = etcdEndpointsProblem(options.endpoints);
    if (problem) throw new LeaseConfigError(name, problem);
    if (!options.key) throw new LeaseConfigError(name, 'key must be a non-empty string');
    this.key = options.key;
    this.name = name;
    this.ttlMs = ttlMs;
    this.timeoutMs = timeoutMs;
    // etcd counts whole seconds (and raises very short TTLs to its minimum, 2 s by default).
    this.ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    this.keepAlive = options.keepAlive ?? false;
    this.logger = options.logger ?? silentLogger();
    this.unavailableLog = new RateLimitedLog(this.logger, Date.now, 1);
    this.listeners = new LostListeners((error) =>
      this.logger.error(
        { event: 'lease-listener-failed', lease: name, err: toError(error) },
        'onLost listener threw',
      ),
    );
    // unary calls get a deadline; watch streams live on (keep-alives pass their own)
    this.clientOptions = etcdClientOptions(options.endpoints, timeoutMs);
  }

  /** The etcd client, created on first use. */
  private client(): Promise<Etcd3> {
    this.connecting ??= loadEtcd3().then(({ Etcd3 }) => new Etcd3(this.clientOptions));
    return this.connecting;
  }

  now(): number {
    return Date.now();
  }

  claim(owner: string): Promise<Claim> {
    return this.call('claim', owner, (late) => this.doClaim(owner, late));
  }

  renew(owner: string): Promise<boolean> {
    return this.call('renew', owner, (late) => this.doRenew(owner, late));
  }

  release(owner: string): Promise<void> {
    return this.call('release', owner, () => this.doRelease(owner));
  }

  validUntil(owner: string): number {
    const held = this.held;
    return !this.closed && held?.owner === owner ? held.validUntil : 0;
  }

  holds(owner: string): boolean {
    const held = this.held;
    if (this.closed || held?.owner !== owner) return false;
    if (Date.now() < held.validUntil) return true;
    if (this.keepAlive) this.lose(held, 'expired');
    return false;
  }

  onLost(listener: (owner: string, reason: LeaseLossReason) => void): () => void {
    return this.listeners.add(listener);
  }

  watch(listener: (holder: string | undefined, revision: number) => void): () => void {
    const sub: Subscription = { active: !this.closed, reported: 0, watcher: undefined, retry: undefined };
    if (!sub.active) return () => {};
    this.subscriptions.add(sub);
    const report = (holder: string | undefined, revision: number) => {
      if (!sub.active || revision <= sub.reported) return;
      sub.reported = revision;
      try {
        listener(holder, revision);
      } catch (error) {
        this.logger.error(
          { event: 'lease.watch-listener-failed', key: this.key, err: toError(error) },
          'leased key watch listener threw',
        );
      }
    };
    void this.startWatch(sub, report);
    return () => this.unwatch(sub);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const held = this.held;
    this.held = undefined;
    if (held) this.stopKeeping(held);
    this.listeners.clear();
    for (const sub of [...this.subscriptions]) this.unwatch(sub);
    // a client still being created is closed as soon as it exists
    void this.connecting?.then((client) => client.close());
  }

  // ---- operations (serialized: a renewal never races a claim) -------------------------------------

  private async doClaim(owner: string, late: () => boolean): Promise<Claim> {
    if (this.keepAlive) {
      // Kept alive already: nothing to ask etcd (and nothing to give to another owner).
      const current = this.held;
      if (current && Date.now() < current.validUntil) {
        return { won: current.owner === owner, holder: current.owner, revision: current.revision };
      }
      if (current) this.lose(current, 'expired');
    }
    const previous = this.held;
    this.held = undefined;
    try {
      const current = (await (await this.client()).get(this.key).exec()).kvs[0];
      const other = current?.value.toString();
      if (current && other !== owner) {
        return { won: false, holder: other, revision: Number(current.mod_revision) };
      }
      // A fresh lease every time, so the TTL counts from now, not from some older grant.
      const sentAt = Date.now();
      const lease = (await this.client()).lease(this.ttlSeconds, { autoKeepAlive: false });
      lease.on('lost', () => {}); // a failed grant or keep-alive is reported by the call itself
      try {
        const leaseId = await lease.grant();
        const claim = await this.put(owner, leaseId);
        if (!claim.won || late() || this.closed) {
          this.discard(lease);
          if (claim.won) throw this.unavailable('claim', this.closed ? 'closed' : 'answered too late');
          return claim;
        }
        const held: Held = {
          owner,
          lease,
          leaseId,
          revision: claim.revision,
          validUntil: sentAt + this.ttlMs,
          renewal: undefined,
          expiry: undefined,
          unwatch: undefined,
        };
        this.held = held;
        if (this.keepAlive) this.keep(held);
        return claim;
      } catch (error) {
        this.discard(lease);
        throw error;
      }
    } finally {
      // Its key (if still on it) moved to the new lease, or is lost anyway.
      if (previous) this.drop(previous);
    }
  }

  /** Creates the key unless it exists; takes it over when it names `owner` and did not change meanwhile. */
  private async put(owner: string, leaseId: string): Promise<Claim> {
    const key = Buffer.from(this.key);
    const put: IRequestOp = { request_put: { key, value: Buffer.from(owner), lease: leaseId } };
    const client = await this.client();
    const first = await client
      .if(this.key, 'Create', '==', 0)
      .then(put)
      .else({ request_range: { key } })
      .commit();
    if (first.succeeded) return { won: true, holder: owner, revision: Number(first.header.revision) };
    const kv = first.responses[0]?.response_range?.kvs[0];
    if (!kv) return NO_CLAIM;
    const holder = kv.value.toString();
    if (holder !== owner) return { won: false, holder, revision: Number(kv.mod_revision) };
    const second = await client.if(this.key, 'Mod', '==', kv.mod_revision).then(put).commit();
    return second.succeeded
      ? { won: true, holder: owner, revision: Number(second.header.revision) }
      : NO_CLAIM;
  }

  private async doRenew(owner: string, late: () => boolean): Promise<boolean> {
    const held = this.held;
    if (!held || held.owner !== owner) return false;
    const client = await this.client();
    const { EtcdLeaseInvalidError } = await loadEtcd3();
    const sentAt = Date.now();
    const [renewed, current] = await Promise.all([
      held.lease.keepaliveOnce({ deadline: sentAt + this.timeoutMs }).then(
        (res) => Number(res.TTL) > 0,
        (error: unknown) => {
          // etcd says the lease is gone: it is; anything else is "unknown".
          if (error instanceof EtcdLeaseInvalidError) return false;
          throw error;
        },
      ),
      client.get(this.key).exec(),
    ]);
    if (this.held !== held) return false;
    const kv = current.kvs[0];
    const lost: LeaseLossReason | undefined = !renewed
      ? 'keepalive-failed'
      : !kv
        ? 'deleted'
        : kv.value.toString() !== owner || String(kv.lease) !== held.leaseId
          ? 'taken-over'
          : undefined;
    if (lost) {
      this.lose(held, lost);
      return false;
    }
    if (!late()) {
      held.validUntil = Math.max(held.validUntil, sentAt + this.ttlMs);
      if (this.keepAlive) this.scheduleExpiry(held);
    }
    return Date.now() < held.validUntil;
  }

  private async doRelease(owner: string): Promise<void> {
    const held = this.held?.owner === owner ? this.held : undefined;
    if (held) {
      this.held = undefined;
      this.stopKeeping(held);
    }
    await (await this.client())
      .if(this.key, 'Value', '==', owner)
      .then({ request_delete_range: { key: Buffer.from(this.key) } })
      .commit();
    if (held) await held.lease.revoke();
  }

  // ---- keeping a won claim alive (keepAlive) ---------------------------------------------------------

  private keep(held: Held): void {
    this.scheduleRenewal(held);
    this.scheduleExpiry(held);
    // Any change after our claim's revision is a deletion or someone else's put.
    held.unwatch = this.watch((holder, revision) => {
      if (this.held === held && revision > held.revision) {
        this.lose(held, holder === undefined ? 'deleted' : 'taken-over');
      }
    });
  }

  /** Every third of etcd's TTL, like etcd3's own keep-alive loop. */
  private scheduleRenewal(held: Held): void {
    held.renewal = setTimeout(
      () => {
        held.renewal = undefined;
        if (this.held !== held) return;
        void this.renew(held.owner)
          .catch((error: unknown) =>
            this.logger.debug(
              { event: 'lease-keepalive-failed', lease: this.name, owner: held.owner, err: toError(error) },
              'lease keep-alive failed; retrying',
            ),
          )
          .finally(() => {
            if (this.held === held) this.scheduleRenewal(held);
          });
      },
      (this.ttlSeconds * 1000) / 3,
    );
    held.renewal.unref();
  }

  /** Loses the claim at `validUntil` unless a renewal pushes it further first. */
  private scheduleExpiry(held: Held): void {
    if (held.expiry) clearTimeout(held.expiry);
    held.expiry = setTimeout(
      () => {
        held.expiry = undefined;
        if (this.held !== held) return;
        if (Date.now() >= held.validUntil) this.lose(held, 'expired');
        else this.scheduleExpiry(held);
      },
      Math.max(0, held.validUntil - Date.now()),
    );
    held.expiry.unref();
  }

  private lose(held: Held, reason: LeaseLossReason): void {
    if (this.held !== held) return;
    this.held = undefined;
    this.drop(held);
    this.listeners.notify(held.owner, reason);
  }

  private stopKeeping(held: Held): void {
    if (held.renewal) clearTimeout(held.renewal);
    if (held.expiry) clearTimeout(held.expiry);
    held.renewal = undefined;
    held.expiry = undefined;
    held.unwatch?.();
    held.unwatch = undefined;
  }

  private drop(held: Held): void {
    this.stopKeeping(held);
    this.discard(held.lease);
  }

  private discard(lease: Etcd3Lease): void {
    // Revoking deletes the key only while it is still attached to this lease.
    void this.bounded('revoke', lease.revoke()).catch(() => undefined);
  }

  // ---- watch ------------------------------------------------------------------------------------------

  private async startWatch(
    sub: Subscription,
    report: (holder: string | undefined, revision: number) => void,
  ): Promise<void> {
    sub.retry = undefined;
    if (!sub.active) return;
    try {
      // Read, then watch from the next revision: no change between the two goes unseen.
      const client = await this.client();
      const current = await this.bounded('watch', client.get(this.key).exec());
      if (!sub.active) return;
      const kv = current.kvs[0];
      const revision = Number(current.header.revision);
      report(kv?.value.toString(), kv ? Number(kv.mod_revision) : revision);
      const watcher = await this.bounded(
        'watch',
        client
          .watch()
          .key(this.key)
          .startRevision(String(revision + 1))
          .create(),
        (late) => void late.cancel().catch(() => undefined),
      );
      if (!sub.active) {
        void watcher.cancel().catch(() => undefined);
        return;
      }
      sub.watcher = watcher;
      watcher.on('put', (kv) => report(kv.value.toString(), Number(kv.mod_revision)));
      watcher.on('delete', (kv) => report(undefined, Number(kv.mod_revision)));
      // Disconnections are retried by etcd3 itself; an error ends the watcher: start over.
      watcher.on('error', (error) => {
        if (sub.watcher !== watcher) return;
        sub.watcher = undefined;
        void watcher.cancel().catch(() => undefined);
        this.watchFailed(sub, report, error);
      });
    } catch (error) {
      this.watchFailed(sub, report, error);
    }
  }

  private watchFailed(
    sub: Subscription,
    report: (holder: string | undefined, revision: number) => void,
    error: unknown,
  ): void {
    if (!sub.active) return;
    this.unavailableLog.warn(
      `leased-key:${this.key}:watch`,
      { event: 'lease.watch-unavailable', key: this.key, err: toError(error) },
      'leased key watch failed; retrying',
    );
    sub.retry = setTimeout(() => void this.startWatch(sub, report), Math.min(RETRY_WATCH_MS, this.ttlMs));
    sub.retry.unref();
  }

  private unwatch(sub: Subscription): void {
    sub.active = false;
    this.subscriptions.delete(sub);
    if (sub.retry) clearTimeout(sub.retry);
    const watcher = sub.watcher;
    sub.watcher = undefined;
    if (watcher) void this.bounded('unwatch', watcher.cancel()).catch(() => undefined);
  }

  // ---- plumbing ---------------------------------------------------------------------------------------

  /**
   * Runs `run` after the calls before it; rejects with a LeaseUnavailableError if it fails or
   * takes longer than timeoutMs (`late()` then tells `run` not to take effect).
   */
  private call<T>(operation: string, owner: string, run: (late: () => boolean) => Promise<T>): Promise<T> {
    try {
      validateOwner(this.name, owner);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.closed) return Promise.reject(this.unavailable(operation, 'closed'));
    let timedOut = false;
    const inner = this.queue.then(() => {
      if (this.closed) throw this.unavailable(operation, 'closed');
      return run(() => timedOut);
    });
    this.queue = inner.catch(() => undefined);
    const noAnswer = () => {
      timedOut = true;
      return this.unavailable(operation, `no answer within ${this.timeoutMs} ms`);
    };
    return withDeadline(inner, this.timeoutMs, noAnswer).catch((error: unknown) => {
      throw error instanceof LeaseUnavailableError
        ? error
        : this.unavailable(operation, toError(error).message);
    });
  }

  /** Rejects after timeoutMs; `onLate` gets a result that arrives afterwards. */
  private bounded<T>(operation: string, call: Promise<T>, onLate?: (value: T) => void): Promise<T> {
    return withDeadline(
      call,
      this.timeoutMs,
      () => this.unavailable(operation, `no answer within ${this.timeoutMs} ms`),
      onLate,
    );
  }

  private unavailable(operation: string, reason: string): LeaseUnavailableError {
    return new LeaseUnavailableError(this.name, operation, reason);
  }
}
