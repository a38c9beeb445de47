import { type Clock, type Logger, silentLogger, toError } from '@doyen/core';
import { type LeaseLossReason, LeaseUnavailableError, LostListeners, validateOwner } from './lease.js';
import { type Claim, type LeasedKey, type LeasedKeySettings, validateKeySettings } from './leased-key.js';

export interface MemoryKeyStoreOptions {
  /** Time source: a simulation's virtual clock (`() => sim.now`), or Date.now. */
  readonly now: () => number;
  /**
   * With timers (a simulation's clock), keys expire on time and watchers hear of it at once.
   * Without, expiry is evaluated whenever a key is looked at, and on {@link MemoryKeyStore.sweep}.
   */
  readonly timers?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

/** Operations applied by the store, by kind. */
export interface MemoryKeyStoreStats {
  claims: number;
  renewals: number;
  releases: number;
  expiries: number;
}

interface KeyRecord {
  readonly owner: string;
  readonly session: MemoryLeasedKey;
  readonly modRevision: number;
  /** Last renewal the store applied (kept current while the session keeps it alive implicitly). */
  renewedAt: number;
  expiry: unknown;
}

type WatchListener = (holder: string | undefined, revision: number) => void;

/**
 * The shared linearizable store of a test or simulation (etcd's role), deterministic on an injected
 * clock: keys with a holder, a TTL and a global revision counter, plus watches that hear every change
 * synchronously. The claim rules are etcd's as {@link EtcdLeasedKey} uses them: create if absent, the
 * same owner (another session: a restarted process) takes over, delete only if mine.
 */
export class MemoryKeyStore {
  readonly stats: MemoryKeyStoreStats = { claims: 0, renewals: 0, releases: 0, expiries: 0 };
  readonly now: () => number;
  private readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'> | undefined;
  private readonly records = new Map<string, KeyRecord>();
  private readonly watchers = new Map<string, Set<WatchListener>>();
  private revision = 1;

  constructor(options: MemoryKeyStoreOptions) {
    this.now = options.now;
    this.timers = options.timers;
  }

  /** A handle on `name` for one client. */
  key(name: string, settings: LeasedKeySettings, options: MemoryLeasedKeyOptions = {}): MemoryLeasedKey {
    return new MemoryLeasedKey(this, name, settings, options);
  }

  /** The current holder of `name`, if any (after applying expiry). */
  holder(name: string): string | undefined {
    return this.current(name)?.owner;
  }

  /** What a read of `name` reports: its holder and mod revision, or the store revision when absent. */
  read(name: string): { holder: string | undefined; revision: number } {
    const record = this.current(name);
    return { holder: record?.owner, revision: record?.modRevision ?? this.revision };
  }

  /** The mod revision of `name` (0 when absent). */
  modRevision(name: string): number {
    return this.current(name)?.modRevision ?? 0;
  }

  /** Deletes `name` behind its holder's back (an operator, or another process); the holder is told. */
  revoke(name: string): void {
    const record = this.records.get(name);
    if (!record) return;
    this.remove(name, record);
    record.session.lost(record.owner, 'deleted');
  }

  /** Applies expiry to every key now, telling holders that lost theirs. */
  sweep(): void {
    for (const name of [...this.records.keys()]) this.current(name);
  }

  /** Calls back on every change of `name` (holder undefined when deleted or expired). */
  watch(name: string, listener: WatchListener): () => void {
    let set = this.watchers.get(name);
    if (!set) this.watchers.set(name, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  // ---- applied on behalf of a session -----------------------------------------------------------

  /** Create if absent; the same owner (from any session) takes over. */
  claim(session: MemoryLeasedKey, name: string, owner: string): Claim {
    this.stats.claims++;
    const record = this.current(name);
    if (record && record.owner !== owner) {
      return { won: false, holder: record.owner, revision: record.modRevision };
    }
    // Same owner from another session (a new incarnation): it takes over, as with etcd.
    if (record && record.session !== session) record.session.lost(record.owner, 'taken-over');
    this.put(name, owner, session);
    return { won: true, holder: owner, revision: this.revision };
  }

  /** Renews `session`'s claim on `name`; false when the key is gone or not this session's. */
  renew(session: MemoryLeasedKey, name: string, owner: string): boolean {
    this.stats.renewals++;
    const record = this.current(name);
    if (!record || record.owner !== owner || record.session !== session) return false;
    record.renewedAt = this.now();
    if (this.timers) {
      this.timers.clearTimeout(record.expiry);
      record.expiry = this.expiryTimer(name, record);
    }
    return true;
  }

  /** Deletes `name` if it names `owner`. */
  release(name: string, owner: string): void {
    this.stats.releases++;
    const record = this.current(name);
    if (record?.owner === owner) this.remove(name, record);
  }

  /** Whether `session` holds `name` for `owner` right now, and since when it was last renewed. */
  heldBy(session: MemoryLeasedKey, name: string, owner: string): KeyRecord | undefined {
    const record = this.current(name);
    return record?.session === session && record.owner === owner ? record : undefined;
  }

  /** `session` stops keeping its keys alive from now on (closed or cut off): their TTL starts running. */
  freeze(session: MemoryLeasedKey): void {
    if (!session.keepingAlive()) return;
    const t = this.now();
    for (const [name, record] of this.records) {
      if (record.session !== session) continue;
      record.renewedAt = t;
      if (this.timers) record.expiry = this.expiryTimer(name, record);
    }
  }

  /** `session` can keep its keys alive again: what lapsed meanwhile is dropped, the rest kept. */
  thaw(session: MemoryLeasedKey): void {
    for (const [name, record] of [...this.records]) {
      if (record.session !== session || !this.current(name)) continue;
      this.timers?.clearTimeout(record.expiry);
      record.expiry = undefined;
    }
  }

  // ---- internals ----------------------------------------------------------------------------------

  /** The live record for `name`: renewed if its session keeps it alive, dropped (and the holder told) if lapsed. */
  private current(name: string): KeyRecord | undefined {
    const record = this.records.get(name);
    if (!record) return undefined;
    if (record.session.keepingAlive()) {
      record.renewedAt = this.now();
      return record;
    }
    // With timers the expiry fires on time; looking at a key never moves it.
    if (this.timers || this.now() - record.renewedAt < record.session.ttlMs) return record;
    this.expire(name, record);
    return undefined;
  }

  private put(name: string, owner: string, session: MemoryLeasedKey): void {
    const old = this.records.get(name);
    if (old) this.timers?.clearTimeout(old.expiry);
    this.revision++;
    const record: KeyRecord = {
      owner,
      session,
      modRevision: this.revision,
      renewedAt: this.now(),
      expiry: undefined,
    };
    if (this.timers && !session.keepingAlive()) record.expiry = this.expiryTimer(name, record);
    this.records.set(name, record);
    this.broadcast(name);
  }

  private remove(name: string, record: KeyRecord): void {
    this.timers?.clearTimeout(record.expiry);
    this.records.delete(name);
    this.revision++;
    this.broadcast(name);
  }

  private expire(name: string, record: KeyRecord): void {
    this.stats.expiries++;
    this.remove(name, record);
    record.session.lost(record.owner, 'expired');
  }

  private expiryTimer(name: string, record: KeyRecord): unknown {
    return this.timers?.setTimeout(() => {
      if (this.records.get(name) !== record || record.session.keepingAlive()) return;
      this.expire(name, record);
    }, record.session.ttlMs);
  }

  private broadcast(name: string): void {
    const set = this.watchers.get(name);
    if (!set || set.size === 0) return;
    const record = this.records.get(name);
    const holder = record?.owner;
    const revision = record?.modRevision ?? this.revision;
    for (const listener of [...set]) listener(holder, revision);
  }
}

/**
 * How a {@link MemoryLeasedKey} reaches its store. Without one it calls directly (no latency); a
 * simulation passes a network that delays, loses and times out (testkit's `SimLeaderStoreServer`).
 */
export interface MemoryKeyLink {
  /** Applies `apply` at the store and settles with its result, or rejects with a LeaseUnavailableError. */
  call<T>(operation: string, apply: () => T): Promise<T>;
  /** Hands a watch notification to the handle (at once, later, or not while cut off). */
  deliver(notify: () => void): void;
}

export interface MemoryLeasedKeyOptions {
  readonly logger?: Logger;
  /** Made once per handle; default: direct calls that reject while closed or cut off. */
  readonly link?: (key: MemoryLeasedKey) => MemoryKeyLink;
}

/**
 * {@link LeasedKey} in a {@link MemoryKeyStore}, for tests and simulations. With `keepAlive` it keeps
 * a won claim alive for as long as it is open and reachable, and the TTL runs from the moment it
 * stops (closed without release, or cut off with {@link setReachable}), so it needs no timers of its
 * own. Without, `validUntil` counts from the send time of the last acknowledged claim or renewal.
 */
export class MemoryLeasedKey implements LeasedKey, MemoryLeasedKey {
  readonly ttlMs: number;
  readonly timeoutMs: number;
  private readonly keepAlive: boolean;
  private readonly link: MemoryKeyLink;
  private readonly listeners: LostListeners;
  /** Every open watch, by its report function (see {@link resync}). */
  private readonly watches = new Map<(holder: string | undefined, revision: number) => void, () => void>();
  /** Without keepAlive: what the answers told (a simulated network may lose some). */
  private held: { owner: string; validUntil: number } | undefined;
  private reachable = true;
  private closed = false;

  constructor(
    private readonly store: MemoryKeyStore,
    readonly key: string,
    settings: LeasedKeySettings,
    options: MemoryLeasedKeyOptions = {},
  ) {
    validateKeySettings(key, settings);
    this.ttlMs = settings.ttlMs;
    this.timeoutMs = settings.timeoutMs;
    this.keepAlive = settings.keepAlive ?? false;
    this.link = options.link?.(this) ?? this.directLink();
    const logger = options.logger ?? silentLogger();
    this.listeners = new LostListeners((error) =>
      logger.error(
        { event: 'lease-listener-failed', lease: key, err: toError(error) },
        'onLost listener threw',
      ),
    );
  }

  get isClosed(): boolean {
    return this.closed;
  }

  now(): number {
    return this.store.now();
  }

  claim(owner: string): Promise<Claim> {
    return this.callFromSend(owner, 'claim', (claim, sentAt) => {
      this.held = claim.won ? { owner, validUntil: sentAt + this.ttlMs } : undefined;
    });
  }

  renew(owner: string): Promise<boolean> {
    return this.callFromSend(owner, 'renew', (renewed, sentAt) => {
      if (this.held?.owner !== owner) return;
      if (renewed) this.held.validUntil = Math.max(this.held.validUntil, sentAt + this.ttlMs);
      else this.held = undefined;
    });
  }

  release(owner: string): Promise<void> {
    const invalid = this.invalidOwner(owner);
    if (invalid) return invalid;
    if (this.held?.owner === owner) this.held = undefined;
    return this.link.call('release', () => this.store.release(this.key, owner));
  }

  watch(listener: (holder: string | undefined, revision: number) => void): () => void {
    if (this.closed) return () => {};
    let active = true;
    let reported = 0;
    const report = (holder: string | undefined, revision: number) =>
      this.link.deliver(() => {
        if (!active || revision <= reported) return;
        reported = revision;
        listener(holder, revision);
      });
    const { holder, revision } = this.store.read(this.key);
    report(holder, revision);
    const unwatch = this.store.watch(this.key, report);
    const stop = () => {
      active = false;
      this.watches.delete(report);
      unwatch();
    };
    this.watches.set(report, stop);
    return stop;
  }

  /** A resumed watch catches up: every open watch hears the key's current state. */
  resync(): void {
    const { holder, revision } = this.store.read(this.key);
    for (const report of this.watches.keys()) report(holder, revision);
  }

  validUntil(owner: string): number {
    if (this.closed) return 0;
    if (!this.keepAlive) return this.held?.owner === owner ? this.held.validUntil : 0;
    const record = this.store.heldBy(this, this.key, owner);
    return record ? record.renewedAt + this.ttlMs : 0;
  }

  holds(owner: string): boolean {
    return this.now() < this.validUntil(owner);
  }

  onLost(listener: (owner: string, reason: LeaseLossReason) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Like a crashed process: stops keeping its claim alive without releasing it; it lapses after its TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.store.freeze(this);
    this.closed = true;
    this.listeners.clear();
    for (const stop of [...this.watches.values()]) stop();
  }

  /**
   * Cuts this client off from the store (or reconnects it). While cut off every direct call rejects
   * as unavailable and a kept-alive claim stops being renewed: it lapses `ttlMs` after the cut.
   */
  setReachable(reachable: boolean): void {
    if (this.reachable === reachable) return;
    if (reachable) this.store.thaw(this);
    else this.store.freeze(this);
    this.reachable = reachable;
  }

  /** @internal */
  keepingAlive(): boolean {
    return this.keepAlive && !this.closed && this.reachable;
  }

  /** @internal Called by the store when this client's claim is gone. */
  lost(owner: string, reason: LeaseLossReason): void {
    if (this.closed) return;
    if (this.held?.owner === owner) this.held = undefined;
    this.listeners.notify(owner, reason);
  }

  /**
   * Calls the store's `operation` for a valid `owner` over the link, then `settle`s what this handle holds with the
   * answer and the time the call was SENT: a holding counts from the send, never from the answer, so
   * a slow answer cannot stretch it.
   */
  private callFromSend<O extends 'claim' | 'renew'>(
    owner: string,
    operation: O,
    settle: (answer: ReturnType<MemoryKeyStore[O]>, sentAt: number) => void,
  ): Promise<ReturnType<MemoryKeyStore[O]>> {
    const invalid = this.invalidOwner(owner);
    if (invalid) return invalid;
    const sentAt = this.now();
    return this.link
      .call(operation, () => this.store[operation](this, this.key, owner) as ReturnType<MemoryKeyStore[O]>)
      .then((answer) => {
        settle(answer, sentAt);
        return answer;
      });
  }

  private invalidOwner(owner: string): Promise<never> | undefined {
    try {
      validateOwner(this.key, owner);
      return undefined;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private directLink(): MemoryKeyLink {
    return {
      call: <T>(operation: string, apply: () => T): Promise<T> => {
        if (this.closed || !this.reachable) {
          const reason = this.closed ? 'closed' : 'store unreachable';
          return Promise.reject(new LeaseUnavailableError(this.key, operation, reason));
        }
        return Promise.resolve(apply());
      },
      deliver: (notify) => notify(),
    };
  }
}
