import { type Logger, RateLimitedLog, silentLogger, toError } from '@doyen/core';
import { EtcdLeasedKey, etcdEndpointsProblem, type LeasedKey } from '@doyen/lease';
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

/** Bad options (or owner) for a leader store. */
export class EtcdLeaderStoreConfigError extends ElectionConfigError {}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const MAX_OWNER = 300;

type CampaignResult = { readonly holder: string | undefined; readonly revision: number };
const UNKNOWN: CampaignResult = { holder: undefined, revision: 0 };

/**
 * {@link LeaderStore} on a {@link LeasedKey} the election machine renews itself: `campaign` is a
 * claim, `keepAlive` a renewal, `resign` a release (delete-if-mine), `watch` the key's watch with
 * its mod revision as the term. Calls never reject on an unreachable store: they resolve "unknown"
 * (undefined holder, false) within the key's timeout and log. The etcd backend is
 * {@link EtcdLeaderStore}; simulations pass their own key.
 */
export class LeasedKeyLeaderStore implements LeaderStore {
  readonly ttlMs: number;
  private readonly logger: Logger;
  private readonly unavailable: RateLimitedLog;
  private closed = false;

  constructor(
    readonly leasedKey: LeasedKey,
    logger?: Logger,
  ) {
    this.ttlMs = leasedKey.ttlMs;
    this.logger = logger ?? silentLogger();
    this.unavailable = new RateLimitedLog(this.logger, () => leasedKey.now(), 1);
    leasedKey.onLost((owner, reason) =>
      this.logger.warn(
        { event: 'election.etcd.key-lost', key: leasedKey.key, owner, reason },
        'leader key is no longer ours',
      ),
    );
  }

  campaign(owner: string): Promise<CampaignResult> {
    return this.call(
      'campaign',
      owner,
      UNKNOWN,
      () => this.leasedKey.claim(owner),
      ({ holder, revision }) => ({ holder, revision }),
    );
  }

  keepAlive(owner: string): Promise<boolean> {
    return this.call('keepAlive', owner, false, () => this.leasedKey.renew(owner));
  }

  resign(owner: string): Promise<void> {
    return this.call<void, void>('resign', owner, undefined, () => this.leasedKey.release(owner));
  }

  /** Whether this store holds the key for `owner` and may still act on it. */
  holds(owner: string): boolean {
    return !this.closed && this.leasedKey.holds(owner);
  }

  watch(listener: (holder: string | undefined, revision: number) => void): () => void {
    return this.leasedKey.watch(listener);
  }

  /** Stops renewing without resigning (the key lapses after its TTL) and ends every watch. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.leasedKey.close();
  }

  /**
   * One settle step (no extra promise hops: simulations count them) from the key's answer to ours:
   * `answer` of it, the key's answer itself when the two are the same.
   */
  private call<A extends T, T>(
    operation: string,
    owner: string,
    unknown: T,
    run: () => Promise<A>,
    answer: (value: A) => T = (value) => value,
  ): Promise<T> {
    if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER) {
      return Promise.reject(
        new EtcdLeaderStoreConfigError(`leader store: owner must be 1-${MAX_OWNER} characters`),
      );
    }
    if (this.closed) return Promise.resolve(unknown);
    return run().then(answer, (error: unknown) => {
      if (!this.closed) {
        this.unavailable.warn(
          `etcd-leader:${this.leasedKey.key}:${operation}`,
          {
            event: 'election.etcd.store-unavailable',
            key: this.leasedKey.key,
            operation,
            owner,
            err: toError(error),
          },
          `leader store: ${operation} failed; resolving as unknown`,
        );
      }
      return unknown;
    });
  }
}

/** The election key on etcd, checked with the leader store's own error type. */
function etcdKeyFor(options: EtcdLeaderStoreOptions): EtcdLeasedKey {
  const fail = (message: string): never => {
    throw new EtcdLeaderStoreConfigError(`EtcdLeaderStore: ${message}`);
  };
  const { endpoints, cluster, name, ttlMs } = options;
  const problem = etcdEndpointsProblem(endpoints);
  if (problem) fail(problem);
  if (typeof cluster !== 'string' || !NAME.test(cluster))
    fail('cluster must be 1-64 letters, digits or . _ -');
  if (typeof name !== 'string' || !NAME.test(name)) fail('name must be 1-64 letters, digits or . _ -');
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) fail(`ttlMs must be a positive number of ms, got ${ttlMs}`);
  const timeoutMs = options.timeoutMs ?? ttlMs / 3;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > ttlMs) {
    fail(`timeoutMs must be a positive number of ms no larger than ttlMs, got ${timeoutMs}`);
  }
  return new EtcdLeasedKey({
    endpoints,
    key: `/doyen/${cluster}/leader/${name}`,
    name,
    ttlMs,
    timeoutMs,
    logger: options.logger,
  });
}

/**
 * {@link LeaderStore} on etcd: the key `/doyen/<cluster>/leader/<name>` as an {@link EtcdLeasedKey}
 * (a fresh etcd lease per campaign, created if absent or taken over when it already names this
 * owner after a lost answer or a restart; renewed by the election machine).
 */
export class EtcdLeaderStore extends LeasedKeyLeaderStore {
  readonly key: string;
  readonly timeoutMs: number;

  constructor(options: EtcdLeaderStoreOptions) {
    const leasedKey = etcdKeyFor(options);
    super(leasedKey, options.logger);
    this.key = leasedKey.key;
    this.timeoutMs = leasedKey.timeoutMs;
  }
}
