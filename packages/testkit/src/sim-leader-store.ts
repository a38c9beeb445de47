import type { Clock } from '@doyen/core';
import { ElectionConfigError, LeasedKeyLeaderStore } from '@doyen/election';
import {
  type Claim,
  type LeasedKey,
  type LeaseLossReason,
  LeaseUnavailableError,
  LostListeners,
  type MemoryKeySession,
  MemoryKeyStore,
} from '@doyen/lease';

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

/** Store operations by kind, for tests and the bench. */
export interface SimLeaderStoreStats {
  readonly campaigns: number;
  readonly keepAlives: number;
  readonly resigns: number;
  readonly expiries: number;
  /** Requests or answers lost because the client was cut off. */
  readonly lost: number;
}

interface Subscription {
  readonly client: SimLeasedKey;
  readonly listener: (holder: string | undefined, revision: number) => void;
  /** Highest revision delivered: later notifications of older revisions are dropped. */
  delivered: number;
  active: boolean;
}

/** The one key every node campaigns for. */
const KEY = 'leader';

/**
 * The shared linearizable store of a simulation (etcd's role) for the etcd election: a
 * {@link MemoryKeyStore} on the simulation's clock (its TTL timer and revision counter) seen through
 * a network. Requests reach the store after the latency, answers come back after it, watch
 * notifications after `watchDelayMs`. `setReachable` cuts one node's clients off (requests and
 * answers are lost, calls time out, watch notifications wait until it is reachable again, as a
 * resumed etcd watch would).
 */
export class SimLeaderStoreServer {
  readonly ttlMs: number;
  readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly store: MemoryKeyStore;
  private readonly latencyMs: number;
  private readonly jitterMs: number;
  private readonly random: (() => number) | undefined;
  private readonly watchDelayMs: number;
  private lost = 0;
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
    this.store = new MemoryKeyStore({ now: () => this.clock.now(), timers: this.clock });
    this.store.watch(KEY, (holder, revision) => {
      for (const s of this.subscriptions) this.notify(s, holder, revision);
    });
  }

  get stats(): SimLeaderStoreStats {
    const { claims, renewals, releases, expiries } = this.store.stats;
    return { campaigns: claims, keepAlives: renewals, resigns: releases, expiries, lost: this.lost };
  }

  /** A leader store client for the node at `address` (one per incarnation: a restart gets a new one). */
  client(address: string): LeasedKeyLeaderStore {
    return new LeasedKeyLeaderStore(new SimLeasedKey(this, address));
  }

  /** Cuts the node at `address` off from the store (false) or reconnects it (true). */
  setReachable(address: string, reachable: boolean): void {
    if (reachable) {
      if (!this.unreachable.delete(address)) return;
      // A resumed watch catches up: tell the reconnected node's watchers the current state.
      const { holder, revision } = this.store.read(KEY);
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
    return this.store.holder(KEY);
  }

  /** The key's mod revision (0 when absent). */
  keyRevision(): number {
    return this.store.modRevision(KEY);
  }

  // ---- called by clients ------------------------------------------------------------------------

  now(): number {
    return this.clock.now();
  }

  /**
   * One round trip: the request may be lost on the way in or its answer on the way out;
   * `answered` sees the result as the client receives it.
   */
  request<T>(
    client: SimLeasedKey,
    operation: string,
    apply: (store: MemoryKeyStore) => T,
    answered?: (result: T) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timeout = this.clock.setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new LeaseUnavailableError(KEY, operation, `no answer within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      const lost = () => !this.isReachable(client.address) || client.closed;
      if (lost()) {
        this.lost++;
        return;
      }
      this.clock.setTimeout(() => {
        if (lost()) {
          this.lost++;
          return;
        }
        const result = apply(this.store);
        this.clock.setTimeout(() => {
          if (settled) return;
          if (lost()) {
            this.lost++;
            return;
          }
          settled = true;
          this.clock.clearTimeout(timeout);
          answered?.(result);
          resolve(result);
        }, this.hop());
      }, this.hop());
    });
  }

  subscribe(client: SimLeasedKey, listener: Subscription['listener']): () => void {
    const s: Subscription = { client, listener, delivered: 0, active: true };
    this.subscriptions.add(s);
    // Like EtcdLeasedKey: a new watch first reports the current state.
    const { holder, revision } = this.store.read(KEY);
    this.notify(s, holder, revision);
    return () => {
      s.active = false;
      this.subscriptions.delete(s);
    };
  }

  // ---- internals ----------------------------------------------------------------------------------

  private hop(): number {
    return this.latencyMs + (this.jitterMs > 0 ? this.random!() * this.jitterMs : 0);
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

/**
 * One node incarnation's {@link LeasedKey} on the {@link SimLeaderStoreServer}: every call is a
 * simulated round trip; `validUntil` counts from the send time of the last acknowledged claim or
 * renewal, as the etcd backend does.
 */
export class SimLeasedKey implements LeasedKey, MemoryKeySession {
  readonly key = KEY;
  closed = false;
  private held: { owner: string; validUntil: number } | undefined;
  private readonly listeners = new LostListeners(() => undefined);
  private readonly unsubscribes = new Set<() => void>();

  constructor(
    private readonly server: SimLeaderStoreServer,
    readonly address: string,
  ) {}

  get ttlMs(): number {
    return this.server.ttlMs;
  }

  get timeoutMs(): number {
    return this.server.timeoutMs;
  }

  now(): number {
    return this.server.now();
  }

  claim(owner: string): Promise<Claim> {
    const sentAt = this.now();
    return this.server.request(
      this,
      'claim',
      (store) => store.claim(this, KEY, owner),
      (claim) => {
        this.held = claim.won ? { owner, validUntil: sentAt + this.ttlMs } : undefined;
      },
    );
  }

  renew(owner: string): Promise<boolean> {
    const sentAt = this.now();
    return this.server.request(
      this,
      'renew',
      (store) => store.renew(this, KEY, owner),
      (renewed) => {
        if (this.held?.owner !== owner) return;
        if (renewed) this.held.validUntil = Math.max(this.held.validUntil, sentAt + this.ttlMs);
        else this.held = undefined;
      },
    );
  }

  release(owner: string): Promise<void> {
    if (this.held?.owner === owner) this.held = undefined;
    return this.server.request(this, 'release', (store) => store.release(KEY, owner));
  }

  watch(listener: (holder: string | undefined, revision: number) => void): () => void {
    const unsubscribe = this.server.subscribe(this, listener);
    this.unsubscribes.add(unsubscribe);
    return () => {
      this.unsubscribes.delete(unsubscribe);
      unsubscribe();
    };
  }

  validUntil(owner: string): number {
    return !this.closed && this.held?.owner === owner ? this.held.validUntil : 0;
  }

  holds(owner: string): boolean {
    return this.now() < this.validUntil(owner);
  }

  onLost(listener: (owner: string, reason: LeaseLossReason) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Like a crashed process: no release, the key lapses after its TTL. */
  async close(): Promise<void> {
    this.closed = true;
    for (const u of this.unsubscribes) u();
    this.unsubscribes.clear();
    this.listeners.clear();
  }

  /** @internal Renews only when asked. */
  keepingAlive(): boolean {
    return false;
  }

  /** @internal */
  lost(owner: string, reason: LeaseLossReason): void {
    if (this.held?.owner !== owner) return;
    this.held = undefined;
    this.listeners.notify(owner, reason);
  }
}
