import type { Clock } from '@doyen/core';
import { ElectionConfigError, type LeaderStore } from './election.js';

export interface SimLeaderStoreOptions {
  /** The simulation's clock (`sim.clock`): every delay, TTL and timeout runs on it. */
  readonly clock: Clock;
  /** The key's TTL. */
  readonly ttlMs: number;
  /** One-way client <-> store latency (default 2 ms). */
  readonly latencyMs?: number;
  /** Extra latency drawn from `random` per hop, in [0, jitterMs) (default 0). */
  readonly jitterMs?: number;
  /** Seeded source for the jitter (e.g. `() => sim.random.fork('store').next()`); required with jitterMs. */
  readonly random?: () => number;
  /** Delay from a change to its watch notification (default 5 ms). */
  readonly watchDelayMs?: number;
  /** A call that got no answer within this resolves as failed (default ttlMs / 3). */
  readonly timeoutMs?: number;
}

interface HeldKey {
  readonly owner: string;
  /** The client (node incarnation) whose lease the key is attached to. */
  readonly client: SimLeaderStoreClient;
  readonly modRevision: number;
  expiry: unknown;
}

interface Subscription {
  readonly client: SimLeaderStoreClient;
  readonly listener: (holder: string | undefined, revision: number) => void;
  /** Highest revision delivered: later notifications of older revisions are dropped. */
  delivered: number;
  active: boolean;
}

/** Store operations by kind, for tests and the bench. */
export interface SimLeaderStoreStats {
  campaigns: number;
  keepAlives: number;
  resigns: number;
  expiries: number;
  /** Requests or answers lost because the client was cut off. */
  lost: number;
}

/**
 * The shared linearizable store of a simulation (etcd's role): one key with a holder, a TTL
 * timer and a global revision counter, plus watches. Every operation happens on the injected
 * clock, so a run stays deterministic: requests reach the store after the latency, answers come
 * back after it, watch notifications after `watchDelayMs`. `setReachable` cuts one node's
 * clients off (requests and answers are lost, calls time out, watch notifications wait until it
 * is reachable again, as a resumed etcd watch would).
 */
export class SimLeaderStoreServer {
  readonly ttlMs: number;
  readonly stats: SimLeaderStoreStats = { campaigns: 0, keepAlives: 0, resigns: 0, expiries: 0, lost: 0 };
  private readonly clock: Clock;
  private readonly latencyMs: number;
  private readonly jitterMs: number;
  private readonly random: (() => number) | undefined;
  private readonly watchDelayMs: number;
  readonly timeoutMs: number;
  private key: HeldKey | undefined;
  private revision = 1;
  private readonly unreachable = new Set<string>();
  private readonly subscriptions = new Set<Subscription>();

  constructor(options: SimLeaderStoreOptions) {
    const positive = (name: string, v: number | undefined, zeroOk: boolean) => {
      if (v !== undefined && (!Number.isFinite(v) || v < 0 || (!zeroOk && v === 0))) {
        throw new ElectionConfigError(
          `SimLeaderStoreServer ${name} must be a ${zeroOk ? 'non-negative' : 'positive'} number, got ${v}`,
        );
      }
    };
    positive('ttlMs', options.ttlMs, false);
    positive('latencyMs', options.latencyMs, true);
    positive('jitterMs', options.jitterMs, true);
    positive('watchDelayMs', options.watchDelayMs, true);
    positive('timeoutMs', options.timeoutMs, false);
    if ((options.jitterMs ?? 0) > 0 && !options.random) {
      throw new ElectionConfigError('SimLeaderStoreServer jitterMs needs a seeded random source');
    }
    this.clock = options.clock;
    this.ttlMs = options.ttlMs;
    this.latencyMs = options.latencyMs ?? 2;
    this.jitterMs = options.jitterMs ?? 0;
    this.random = options.random;
    this.watchDelayMs = options.watchDelayMs ?? 5;
    this.timeoutMs = options.timeoutMs ?? options.ttlMs / 3;
  }

  /** A client for the node at `address` (one per incarnation: a restart gets a new one). */
  client(address: string): SimLeaderStoreClient {
    return new SimLeaderStoreClient(this, address);
  }

  /** Cuts the node at `address` off from the store (false) or reconnects it (true). */
  setReachable(address: string, reachable: boolean): void {
    if (reachable) {
      if (!this.unreachable.delete(address)) return;
      // A resumed watch catches up: tell the reconnected node's watchers the current state.
      const holder = this.key?.owner;
      const revision = this.key?.modRevision ?? this.revision;
      for (const s of this.subscriptions) if (s.client.address === address) this.notify(s, holder, revision);
    } else {
      this.unreachable.add(address);
    }
  }

  isReachable(address: string): boolean {
    return !this.unreachable.has(address);
  }

  /** The current holder, as the store itself sees it. */
  holder(): string | undefined {
    return this.key?.owner;
  }

  /** The key's mod revision (0 when absent). */
  keyRevision(): number {
    return this.key?.modRevision ?? 0;
  }

  // ---- called by clients ------------------------------------------------------------------------

  /** One round trip: the request may be lost on the way in or its answer on the way out. */
  request<T>(client: SimLeaderStoreClient, apply: () => T, failed: T): Promise<T> {
    return new Promise<T>((resolve) => {
      let settled = false;
      const timeout = this.clock.setTimeout(() => {
        if (settled) return;
        settled = true;
        resolve(failed);
      }, this.timeoutMs);
      const lost = () => !this.isReachable(client.address) || client.closed;
      if (lost()) {
        this.stats.lost++;
        return;
      }
      this.clock.setTimeout(() => {
        if (lost()) {
          this.stats.lost++;
          return;
        }
        const result = apply();
        this.clock.setTimeout(() => {
          if (settled) return;
          if (lost()) {
            this.stats.lost++;
            return;
          }
          settled = true;
          this.clock.clearTimeout(timeout);
          resolve(result);
        }, this.hop());
      }, this.hop());
    });
  }

  campaign(client: SimLeaderStoreClient, owner: string): { holder: string | undefined; revision: number } {
    this.stats.campaigns++;
    const key = this.key;
    // Create if absent; an owner re-campaigning (a lost answer, a restarted incarnation) takes it over.
    if (key && key.owner !== owner) return { holder: key.owner, revision: key.modRevision };
    this.put(owner, client);
    return { holder: owner, revision: this.revision };
  }

  keepAlive(client: SimLeaderStoreClient, owner: string): boolean {
    this.stats.keepAlives++;
    const key = this.key;
    if (!key || key.owner !== owner || key.client !== client) return false;
    this.clock.clearTimeout(key.expiry);
    key.expiry = this.expiryTimer(key);
    return true;
  }

  resign(owner: string): void {
    this.stats.resigns++;
    if (this.key?.owner === owner) this.remove();
  }

  subscribe(client: SimLeaderStoreClient, listener: Subscription['listener']): () => void {
    const s: Subscription = { client, listener, delivered: 0, active: true };
    this.subscriptions.add(s);
    // Like EtcdLeaderStore: a new watch first reports the current state.
    this.notify(s, this.key?.owner, this.key?.modRevision ?? this.revision);
    return () => {
      s.active = false;
      this.subscriptions.delete(s);
    };
  }

  // ---- internals ----------------------------------------------------------------------------------

  private hop(): number {
    return this.latencyMs + (this.jitterMs > 0 ? this.random!() * this.jitterMs : 0);
  }

  private put(owner: string, client: SimLeaderStoreClient): void {
    if (this.key) this.clock.clearTimeout(this.key.expiry);
    this.revision++;
    const key: HeldKey = { owner, client, modRevision: this.revision, expiry: undefined };
    key.expiry = this.expiryTimer(key);
    this.key = key;
    this.broadcast();
  }

  private remove(): void {
    if (!this.key) return;
    this.clock.clearTimeout(this.key.expiry);
    this.key = undefined;
    this.revision++;
    this.broadcast();
  }

  private expiryTimer(key: HeldKey): unknown {
    return this.clock.setTimeout(() => {
      if (this.key !== key) return;
      this.stats.expiries++;
      this.remove();
    }, this.ttlMs);
  }

  private broadcast(): void {
    const holder = this.key?.owner;
    const revision = this.key?.modRevision ?? this.revision;
    for (const s of this.subscriptions) this.notify(s, holder, revision);
  }

  private notify(s: Subscription, holder: string | undefined, revision: number): void {
    this.clock.setTimeout(() => {
      // An unreachable node's watch stalls; setReachable(true) catches it up.
      if (!s.active || s.client.closed || !this.isReachable(s.client.address)) return;
      if (revision <= s.delivered) return;
      s.delivered = revision;
      s.listener(holder, revision);
    }, this.watchDelayMs);
  }
}

/** One node incarnation's connection to the {@link SimLeaderStoreServer}. */
export class SimLeaderStoreClient implements LeaderStore {
  closed = false;
  private readonly unsubscribes = new Set<() => void>();

  constructor(
    private readonly server: SimLeaderStoreServer,
    readonly address: string,
  ) {}

  get ttlMs(): number {
    return this.server.ttlMs;
  }

  campaign(owner: string): Promise<{ readonly holder: string | undefined; readonly revision: number }> {
    return this.server.request(this, () => this.server.campaign(this, owner), {
      holder: undefined,
      revision: 0,
    });
  }

  keepAlive(owner: string): Promise<boolean> {
    return this.server.request(this, () => this.server.keepAlive(this, owner), false);
  }

  resign(owner: string): Promise<void> {
    return this.server.request(this, () => this.server.resign(owner), undefined);
  }

  watch(listener: (holder: string | undefined, revision: number) => void): () => void {
    const unsubscribe = this.server.subscribe(this, listener);
    this.unsubscribes.add(unsubscribe);
    return () => {
      this.unsubscribes.delete(unsubscribe);
      unsubscribe();
    };
  }

  /** Like a crashed process: no resign, the key lapses after its TTL. */
  async close(): Promise<void> {
    this.closed = true;
    for (const u of this.unsubscribes) u();
    this.unsubscribes.clear();
  }
}
