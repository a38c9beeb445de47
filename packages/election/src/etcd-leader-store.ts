import { type Logger, RateLimitedLog, silentLogger, toError, withDeadline } from '@doyen/core';
import { Etcd3, type Lease as Etcd3Lease, EtcdLeaseInvalidError, type IRequestOp, type Watcher } from 'etcd3';
import { ElectionConfigError, type LeaderStore } from './election.js';

export interface EtcdLeaderStoreOptions {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']`. */
  readonly endpoints: readonly string[];
  /** Cluster name: the key is `/doyen/<cluster>/leader/<name>`. */
  readonly cluster: string;
  /** The election's name (one key per election). */
  readonly name: string;
  /**
   * How long a holder may act after the send time of its last acknowledged keep-alive. etcd
   * counts whole seconds (`ceil(ttlMs / 1000)`, raised to its own minimum, 2 s by default), so
   * the key may outlive this by up to that rounding: never the other way round.
   */
  readonly ttlMs: number;
  /** Every call resolves within this (default ttlMs / 3). */
  readonly timeoutMs?: number;
  readonly logger?: Logger;
}

/** Bad options for {@link EtcdLeaderStore}. */
export class EtcdLeaderStoreConfigError extends ElectionConfigError {}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const MAX_OWNER = 300;
const RETRY_WATCH_MS = 1000;

type CampaignResult = { readonly holder: string | undefined; readonly revision: number };
const UNKNOWN: CampaignResult = { holder: undefined, revision: 0 };

/** The key this instance won, with the etcd lease attached to it. */
interface Held {
  readonly owner: string;
  readonly lease: Etcd3Lease;
  readonly leaseId: string;
  readonly revision: number;
  /** Send time of the last acknowledged grant / keep-alive plus ttlMs. */
  validUntil: number;
}

interface Subscription {
  active: boolean;
  /** Highest revision reported: a resumed watch never reports an older one. */
  reported: number;
  watcher: Watcher | undefined;
  retry: NodeJS.Timeout | undefined;
}

/**
 * {@link LeaderStore} on etcd: `campaign` is a compare-and-swap that creates
 * `/doyen/<cluster>/leader/<name>` = owner with a fresh etcd lease (or takes the key over when it
 * already names this owner, after a lost answer or a restart); `keepAlive` renews the lease once
 * and checks the key is still ours; `resign` deletes it; `watch` reads the key, then watches it
 * from the next revision, reporting the mod revision as the term. Calls never reject on an
 * unreachable etcd: they resolve "unknown" (undefined holder, false) within `timeoutMs` and log.
 */
export class EtcdLeaderStore implements LeaderStore {
  readonly key: string;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  private readonly ttlSeconds: number;
  private readonly client: Etcd3;
  private readonly logger: Logger;
  private readonly unavailable: RateLimitedLog;
  private held: Held | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly subscriptions = new Set<Subscription>();

  constructor(options: EtcdLeaderStoreOptions) {
    const fail = (message: string): never => {
      throw new EtcdLeaderStoreConfigError(`EtcdLeaderStore: ${message}`);
    };
    const { endpoints, cluster, name, ttlMs } = options;
    if (!Array.isArray(endpoints) || endpoints.length === 0)
      fail('endpoints must list at least one etcd URL');
    for (const endpoint of endpoints) {
      let url: URL | undefined;
      try {
        url = new URL(endpoint);
      } catch {
        fail(`endpoint ${JSON.stringify(endpoint)} is not a URL`);
      }
      if (url!.protocol !== 'http:' && url!.protocol !== 'https:') {
        fail(`endpoint ${JSON.stringify(endpoint)} must be http:// or https://`);
      }
    }
    if (typeof cluster !== 'string' || !NAME.test(cluster))
      fail('cluster must be 1-64 letters, digits or . _ -');
    if (typeof name !== 'string' || !NAME.test(name)) fail('name must be 1-64 letters, digits or . _ -');
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) fail(`ttlMs must be a positive number of ms, got ${ttlMs}`);
    const timeoutMs = options.timeoutMs ?? ttlMs / 3;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > ttlMs) {
      fail(`timeoutMs must be a positive number of ms no larger than ttlMs, got ${timeoutMs}`);
    }
    this.key = `/doyen/${cluster}/leader/${name}`;
    this.ttlMs = ttlMs;
    this.timeoutMs = timeoutMs;
    this.ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    this.logger = options.logger ?? silentLogger();
    this.unavailable = new RateLimitedLog(this.logger, Date.now, 1);
    this.client = new Etcd3({
      hosts: [...endpoints],
      dialTimeout: timeoutMs,
      // Unary calls get a deadline; watch streams live on (keep-alives pass their own).
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    });
  }

  campaign(owner: string): Promise<CampaignResult> {
    return this.call('campaign', owner, UNKNOWN, (late) => this.doCampaign(owner, late));
  }

  keepAlive(owner: string): Promise<boolean> {
    return this.call('keepAlive', owner, false, (late) => this.doKeepAlive(owner, late));
  }

  resign(owner: string): Promise<void> {
    return this.call('resign', owner, undefined, () => this.doResign(owner));
  }

  /** Whether this instance holds the key for `owner` and may still act on it. */
  holds(owner: string): boolean {
    const held = this.held;
    return !this.closed && held?.owner === owner && Date.now() < held.validUntil;
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
          { event: 'election.etcd.listener-failed', key: this.key, err: toError(error) },
          'etcd leader watch listener threw',
        );
      }
    };
    void this.startWatch(sub, report);
    return () => this.unwatch(sub);
  }

  /** Stops renewing without resigning (etcd drops the key after its TTL), ends every watch and the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.held?.lease.release();
    this.held = undefined;
    for (const sub of [...this.subscriptions]) this.unwatch(sub);
    this.client.close();
  }

  // ---- operations (serialized: a keep-alive never races a campaign) ---------------------------------

  private async doCampaign(owner: string, late: () => boolean): Promise<CampaignResult> {
    const previous = this.held;
    this.held = undefined;
    try {
      // A follower's re-check (or a lost race) costs one read, no lease.
      const current = (await this.client.get(this.key).exec()).kvs[0];
      const other = current?.value.toString();
      if (current && other !== owner) return { holder: other, revision: Number(current.mod_revision) };
      // A fresh lease every time, so the TTL counts from now, not from some older grant.
      const sentAt = Date.now();
      const lease = this.client.lease(this.ttlSeconds, { autoKeepAlive: false });
      lease.on('lost', () => {}); // a failed grant is reported by grant() below
      try {
        const leaseId = await lease.grant();
        const claim = await this.claim(owner, leaseId);
        if (claim.holder !== owner || late() || this.closed) {
          this.discard(lease);
          return claim.holder === owner ? UNKNOWN : claim;
        }
        this.held = { owner, lease, leaseId, revision: claim.revision, validUntil: sentAt + this.ttlMs };
        return claim;
      } catch (error) {
        this.discard(lease);
        throw error;
      }
    } finally {
      // Its key (if still on it) moved to the new lease, or is lost anyway.
      if (previous) this.discard(previous.lease);
    }
  }

  /** Creates the key unless it exists; takes it over when it names `owner` and did not change meanwhile. */
  private async claim(owner: string, leaseId: string): Promise<CampaignResult> {
    const key = Buffer.from(this.key);
    const put: IRequestOp = { request_put: { key, value: Buffer.from(owner), lease: leaseId } };
    const first = await this.client
      .if(this.key, 'Create', '==', 0)
      .then(put)
      .else({ request_range: { key } })
      .commit();
    if (first.succeeded) return { holder: owner, revision: Number(first.header.revision) };
    const kv = first.responses[0]?.response_range?.kvs[0];
    if (!kv) return UNKNOWN;
    const holder = kv.value.toString();
    if (holder !== owner) return { holder, revision: Number(kv.mod_revision) };
    const second = await this.client.if(this.key, 'Mod', '==', kv.mod_revision).then(put).commit();
    return second.succeeded ? { holder: owner, revision: Number(second.header.revision) } : UNKNOWN;
  }

  private async doKeepAlive(owner: string, late: () => boolean): Promise<boolean> {
    const held = this.held;
    if (!held || held.owner !== owner) return false;
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
      this.client.get(this.key).exec(),
    ]);
    if (this.held !== held) return false;
    const kv = current.kvs[0];
    if (!renewed || !kv || kv.value.toString() !== owner || String(kv.lease) !== held.leaseId) {
      this.held = undefined;
      this.discard(held.lease);
      this.logger.warn(
        { event: 'election.etcd.key-lost', key: this.key, owner, holder: kv?.value.toString() ?? null },
        'etcd leader key is no longer ours',
      );
      return false;
    }
    if (!late()) held.validUntil = Math.max(held.validUntil, sentAt + this.ttlMs);
    return Date.now() < held.validUntil;
  }

  private async doResign(owner: string): Promise<void> {
    const held = this.held?.owner === owner ? this.held : undefined;
    if (held) this.held = undefined;
    await this.client
      .if(this.key, 'Value', '==', owner)
      .then({ request_delete_range: { key: Buffer.from(this.key) } })
      .commit();
    if (held) await held.lease.revoke();
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
      const current = await this.bounded(this.client.get(this.key).exec());
      if (!sub.active) return;
      const kv = current.kvs[0];
      const revision = Number(current.header.revision);
      report(kv?.value.toString(), kv ? Number(kv.mod_revision) : revision);
      const watcher = await this.bounded(
        this.client
          .watch()
          .key(this.key)
          .startRevision(String(revision + 1))
          .create(),
        (w) => void w.cancel().catch(() => undefined),
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
        this.unavailableLog('watch', undefined, error);
        this.retryWatch(sub, report);
      });
    } catch (error) {
      this.unavailableLog('watch', undefined, error);
      this.retryWatch(sub, report);
    }
  }

  private retryWatch(
    sub: Subscription,
    report: (holder: string | undefined, revision: number) => void,
  ): void {
    if (!sub.active) return;
    sub.retry = setTimeout(() => void this.startWatch(sub, report), Math.min(RETRY_WATCH_MS, this.ttlMs));
    sub.retry.unref();
  }

  private unwatch(sub: Subscription): void {
    sub.active = false;
    this.subscriptions.delete(sub);
    if (sub.retry) clearTimeout(sub.retry);
    const watcher = sub.watcher;
    sub.watcher = undefined;
    if (watcher) void this.bounded(watcher.cancel()).catch(() => undefined);
  }

  // ---- plumbing ---------------------------------------------------------------------------------------

  /**
   * Runs `run` after the calls before it; the caller gets `unknown` if it fails or takes longer
   * than timeoutMs (`late()` then tells `run` not to take effect).
   */
  private call<T>(
    operation: string,
    owner: string,
    unknown: T,
    run: (late: () => boolean) => Promise<T>,
  ): Promise<T> {
    if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER) {
      return Promise.reject(
        new EtcdLeaderStoreConfigError(`EtcdLeaderStore: owner must be 1-${MAX_OWNER} characters`),
      );
    }
    if (this.closed) return Promise.resolve(unknown);
    let timedOut = false;
    const inner = this.queue.then(() => (this.closed ? unknown : run(() => timedOut)));
    this.queue = inner.catch(() => undefined);
    return new Promise<T>((resolve) => {
      const timer = setTimeout(() => {
        timedOut = true;
        this.unavailableLog(operation, owner, new Error(`no answer within ${this.timeoutMs} ms`));
        resolve(unknown);
      }, this.timeoutMs);
      timer.unref();
      inner.then(
        (value) => {
          clearTimeout(timer);
          if (!timedOut) resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (timedOut) return;
          if (!this.closed) this.unavailableLog(operation, owner, error);
          resolve(unknown);
        },
      );
    });
  }

  /** Rejects after timeoutMs; `onLate` gets a result that arrives afterwards. */
  private bounded<T>(call: Promise<T>, onLate?: (value: T) => void): Promise<T> {
    return withDeadline(
      call,
      this.timeoutMs,
      () => new Error(`no answer within ${this.timeoutMs} ms`),
      onLate,
    );
  }

  private discard(lease: Etcd3Lease): void {
    // Revoking deletes the key only while it is still attached to this lease.
    void this.bounded(lease.revoke()).catch(() => undefined);
  }

  private unavailableLog(operation: string, owner: string | undefined, error: unknown): void {
    if (this.closed) return;
    this.unavailable.warn(
      `etcd-leader:${this.key}:${operation}`,
      {
        event: 'election.etcd.store-unavailable',
        key: this.key,
        operation,
        owner: owner ?? null,
        err: toError(error),
      },
      `etcd leader store: ${operation} failed; resolving as unknown`,
    );
  }
}
