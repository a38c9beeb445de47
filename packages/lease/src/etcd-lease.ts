import { type Logger, type Metrics, RateLimitedLog, silentLogger, toError, withDeadline } from '@doyen/core';
import { Etcd3, type Lease as Etcd3Lease, type IKeyValue, type IRequestOp, type Watcher } from 'etcd3';
import {
  type Lease,
  LeaseConfigError,
  type LeaseLossReason,
  type LeaseSettings,
  LeaseUnavailableError,
  LostListeners,
  validateLeaseSettings,
  validateOwner,
} from './lease.js';

export interface EtcdLeaseOptions extends LeaseSettings {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']`. */
  endpoints: string[];
  /** Cluster name: the key is `/doyen/<cluster>/leases/<name>`. */
  cluster: string;
  name: string;
  logger?: Logger;
  metrics?: Metrics;
}

const CLUSTER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

const ACQUIRE_TOTAL = 'doyen_lease_acquire_total';
const ACQUIRE_HELP = 'Lease acquire attempts by result (held, refused, unavailable).';
const LOST_TOTAL = 'doyen_lease_lost_total';
const LOST_HELP = 'Held leases lost, by reason.';
const HELD = 'doyen_lease_held';
const HELD_HELP = '1 while this process holds the lease.';

/** What this instance holds (or is trying to hold). */
interface Held {
  readonly owner: string;
  readonly etcdLease: Etcd3Lease;
  readonly leaseId: string;
  /** Local deadline: the send time of the last acknowledged grant/keep-alive plus ttlMs. */
  validUntil: number;
  /** Send time of the oldest keep-alive not yet acknowledged. */
  pendingSince: number | undefined;
  timer: NodeJS.Timeout | undefined;
  watcher: Watcher | undefined;
}

type Claim = { held: true; revision: string } | { held: false; holder: string | undefined };

/**
 * A {@link Lease} backed by etcd's own leases. The holder's name is stored in
 * `/doyen/<cluster>/leases/<name>` with an etcd lease of `ceil(ttlMs / 1000)` seconds attached, kept
 * alive by the client while held. A watch on the key reports deletion or takeover. Locally the lease
 * counts as held only until `ttlMs` after the send time of the last acknowledged keep-alive, so this
 * process gives it up no later than etcd does.
 */
export class EtcdLease implements Lease {
  readonly name: string;
  /** The etcd key that records the holder. */
  readonly key: string;
  private readonly client: Etcd3;
  private readonly ttlMs: number;
  private readonly ttlSeconds: number;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly unavailableLog: RateLimitedLog;
  private readonly listeners: LostListeners;
  private held: Held | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: EtcdLeaseOptions) {
    validateLeaseSettings(options.name, options);
    const { endpoints, cluster, name } = options;
    if (!Array.isArray(endpoints) || endpoints.length === 0) {
      throw new LeaseConfigError(name, 'endpoints must list at least one etcd URL');
    }
    for (const endpoint of endpoints) {
      let url: URL;
      try {
        url = new URL(endpoint);
      } catch {
        throw new LeaseConfigError(name, `endpoint ${JSON.stringify(endpoint)} is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new LeaseConfigError(name, `endpoint ${JSON.stringify(endpoint)} must be http:// or https://`);
      }
    }
    if (typeof cluster !== 'string' || !CLUSTER_NAME.test(cluster)) {
      throw new LeaseConfigError(name, 'cluster must be 1-64 letters, digits or . _ -');
    }
    this.name = name;
    this.key = `/doyen/${cluster}/leases/${name}`;
    this.ttlMs = options.ttlMs;
    // etcd counts whole seconds (and raises very short TTLs to its minimum, 2 s by default).
    this.ttlSeconds = Math.max(1, Math.ceil(options.ttlMs / 1000));
    this.timeoutMs = options.timeoutMs;
    this.logger = options.logger ?? silentLogger();
    this.metrics = options.metrics;
    this.unavailableLog = new RateLimitedLog(this.logger, Date.now, 1);
    this.listeners = new LostListeners((error) =>
      this.logger.error(
        { event: 'lease-listener-failed', lease: name, err: toError(error) },
        'onLost listener threw',
      ),
    );
    const timeoutMs = this.timeoutMs;
    this.client = new Etcd3({
      hosts: endpoints,
      dialTimeout: timeoutMs,
      // Unary calls get a deadline; the keep-alive and watch streams live on.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    });
  }

  acquire(owner: string): Promise<boolean> {
    try {
      validateOwner(this.name, owner);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.serialized(() => this.doAcquire(owner));
  }

  release(owner: string): Promise<void> {
    try {
      validateOwner(this.name, owner);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.serialized(() => this.doRelease(owner));
  }

  checkLease(owner: string): boolean {
    const held = this.held;
    if (this.closed || !held || held.owner !== owner) return false;
    if (Date.now() >= held.validUntil) {
      this.lose(held, 'expired');
      return false;
    }
    return true;
  }

  onLost(listener: (owner: string) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Stops keeping the lease alive without releasing it (etcd drops the key after its TTL) and closes the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const held = this.held;
    this.held = undefined;
    if (held) {
      this.teardown(held, false);
      this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    }
    this.listeners.clear();
    this.client.close();
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async doAcquire(owner: string): Promise<boolean> {
    if (this.closed) return false;
    const current = this.held;
    if (current) {
      if (Date.now() < current.validUntil) {
        if (current.owner === owner) return true;
        this.count('refused');
        return false; // this very instance holds it for someone else
      }
      this.lose(current, 'expired');
    }

    const sentAt = Date.now();
    const etcdLease = this.client.lease(this.ttlSeconds);
    let candidate: Held | undefined;
    try {
      const leaseId = await this.bounded('grant', etcdLease.grant());
      candidate = {
        owner,
        etcdLease,
        leaseId,
        validUntil: sentAt + this.ttlMs,
        pendingSince: undefined,
        timer: undefined,
        watcher: undefined,
      };
      this.trackKeepAlive(candidate);

      const claim = await this.claim(owner, leaseId);
      if (!claim.held) {
        this.discard(etcdLease);
        this.count('refused');
        this.logger.debug(
          { event: 'lease-refused', lease: this.name, owner, holder: claim.holder },
          'lease held by another owner',
        );
        return false;
      }

      const watcher = await this.bounded(
        'watch',
        this.client
          .watch()
          .key(this.key)
          .startRevision((BigInt(claim.revision) + 1n).toString())
          .create(),
        (late) => void late.cancel().catch(() => undefined),
      );
      candidate.watcher = watcher;
      if (this.closed || Date.now() >= candidate.validUntil) {
        this.teardown(candidate, true);
        if (!this.closed) this.count('unavailable');
        return false;
      }
      this.watchKey(candidate, watcher);
      this.held = candidate;
      this.schedule(candidate);
      this.count('held');
      this.metrics?.set(HELD, HELD_HELP, 1, { lease: this.name });
      this.logger.info(
        { event: 'lease-acquired', lease: this.name, owner, leaseId: candidate.leaseId },
        'lease acquired',
      );
      return true;
    } catch (error) {
      if (candidate) this.teardown(candidate, true);
      else this.discard(etcdLease);
      if (this.closed) return false;
      this.count('unavailable');
      this.unavailableLog.warn(
        `unavailable:${this.name}`,
        { event: 'lease-unavailable', lease: this.name, owner, err: toError(error) },
        'lease backend unavailable; acquire resolves false',
      );
      return false;
    }
  }

  /**
   * Puts `owner` with `leaseId` on the key if the key does not exist, or if it already names
   * `owner` (a previous incarnation): then only if the key did not change in between.
   */
  private async claim(owner: string, leaseId: string): Promise<Claim> {
    const key = Buffer.from(this.key);
    const put: IRequestOp = { request_put: { key, value: Buffer.from(owner), lease: leaseId } };
    const first = await this.bounded(
      'acquire',
      this.client.if(this.key, 'Create', '==', 0).then(put).else({ request_range: { key } }).commit(),
    );
    if (first.succeeded) return { held: true, revision: first.header.revision };
    const kv: IKeyValue | undefined = first.responses[0]?.response_range?.kvs[0];
    const holder = kv?.value.toString();
    if (!kv || holder !== owner) return { held: false, holder };
    const second = await this.bounded(
      'acquire',
      this.client.if(this.key, 'Mod', '==', kv.mod_revision).then(put).commit(),
    );
    return second.succeeded ? { held: true, revision: second.header.revision } : { held: false, holder };
  }

  private async doRelease(owner: string): Promise<void> {
    if (this.closed) return;
    const held = this.held;
    const mine = held?.owner === owner ? held : undefined;
    if (mine) {
      this.held = undefined;
      this.clearLocal(mine);
      mine.etcdLease.release(); // no more keep-alives whatever happens below
      this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    }
    try {
      await this.bounded(
        'release',
        this.client
          .if(this.key, 'Value', '==', owner)
          .then({ request_delete_range: { key: Buffer.from(this.key) } })
          .commit(),
      );
      if (mine) await this.bounded('revoke', mine.etcdLease.revoke());
      if (mine) this.logger.info({ event: 'lease-released', lease: this.name, owner }, 'lease released');
    } catch (error) {
      // Keep-alives have stopped, so the key lapses after its TTL anyway.
      this.logger.warn(
        { event: 'lease-release-failed', lease: this.name, owner, err: toError(error) },
        'could not release lease; it lapses after its TTL',
      );
    }
  }

  private trackKeepAlive(held: Held): void {
    const lease = held.etcdLease;
    lease.on('keepaliveFired', () => {
      if (held.pendingSince === undefined) held.pendingSince = Date.now();
    });
    lease.on('keepaliveSucceeded', () => {
      if (held.pendingSince !== undefined) {
        held.validUntil = Math.max(held.validUntil, held.pendingSince + this.ttlMs);
        held.pendingSince = undefined;
      }
      if (this.held === held) this.schedule(held);
    });
    lease.on('keepaliveFailed', (error: unknown) => {
      if (this.held === held) {
        this.logger.debug(
          { event: 'lease-keepalive-failed', lease: this.name, owner: held.owner, err: toError(error) },
          'lease keep-alive failed; retrying',
        );
      }
    });
    lease.on('lost', () => {
      if (this.held === held) this.lose(held, 'keepalive-failed');
    });
  }

  private watchKey(held: Held, watcher: Watcher): void {
    watcher.on('delete', () => this.lose(held, 'deleted'));
    watcher.on('put', (kv) => {
      if (kv.value.toString() !== held.owner || String(kv.lease) !== held.leaseId)
        this.lose(held, 'taken-over');
    });
    watcher.on('error', () => this.lose(held, 'watch-failed'));
  }

  /** Fires `expired` at `validUntil` unless a keep-alive pushes it further first. */
  private schedule(held: Held): void {
    if (held.timer) clearTimeout(held.timer);
    const delay = Math.max(0, held.validUntil - Date.now());
    held.timer = setTimeout(() => {
      held.timer = undefined;
      if (this.held !== held) return;
      if (Date.now() >= held.validUntil) this.lose(held, 'expired');
      else this.schedule(held);
    }, delay);
    held.timer.unref();
  }

  private lose(held: Held, reason: LeaseLossReason): void {
    if (this.held !== held) return;
    this.held = undefined;
    this.teardown(held, true);
    this.metrics?.inc(LOST_TOTAL, LOST_HELP, { lease: this.name, reason });
    this.metrics?.set(HELD, HELD_HELP, 0, { lease: this.name });
    this.logger.warn({ event: 'lease-lost', lease: this.name, owner: held.owner, reason }, 'lease lost');
    this.listeners.notify(held.owner);
  }

  private clearLocal(held: Held): void {
    if (held.timer) clearTimeout(held.timer);
    held.timer = undefined;
    const watcher = held.watcher;
    held.watcher = undefined;
    if (watcher) void this.bounded('unwatch', watcher.cancel()).catch(() => undefined);
  }

  /** Stops everything about `held`; with `revoke`, also revokes its etcd lease (which deletes the key if still attached). */
  private teardown(held: Held, revoke: boolean): void {
    this.clearLocal(held);
    if (revoke) this.discard(held.etcdLease);
    else held.etcdLease.release();
  }

  private discard(etcdLease: Etcd3Lease): void {
    // revoke() first stops keep-alives, so a grant that answers late never starts them.
    void this.bounded('revoke', etcdLease.revoke()).catch(() => undefined);
  }

  private count(result: 'held' | 'refused' | 'unavailable'): void {
    this.metrics?.inc(ACQUIRE_TOTAL, ACQUIRE_HELP, { lease: this.name, result });
  }

  /** Bounds one etcd call by timeoutMs; `onLate` gets a result that arrives after the timeout. */
  private bounded<T>(operation: string, call: Promise<T>, onLate?: (value: T) => void): Promise<T> {
    const unavailable = (reason: string) => new LeaseUnavailableError(this.name, operation, reason);
    return withDeadline(
      call,
      this.timeoutMs,
      () => unavailable(`no answer within ${this.timeoutMs} ms`),
      onLate,
    ).catch((error: unknown) => {
      throw error instanceof LeaseUnavailableError ? error : unavailable(toError(error).message);
    });
  }
}
