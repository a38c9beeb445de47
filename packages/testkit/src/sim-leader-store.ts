import type { Clock } from '@doyen/core';
import { ElectionConfigError, LeasedKeyLeaderStore } from '@doyen/election';
import {
  LeaseUnavailableError,
  type MemoryKeyLink,
  MemoryKeyStore,
  type MemoryLeasedKey,
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

/** The one key every node campaigns for. */
const KEY = 'leader';

/**
 * The shared linearizable store of a simulation (etcd's role) for the etcd election: a
 * {@link MemoryKeyStore} on the simulation's clock (its TTL timers and revision counter) that every
 * node reaches over a simulated network. Requests reach the store after the latency, answers come
 * back after it, watch notifications after `watchDelayMs`. `setReachable` cuts one node's clients
 * off (requests and answers are lost, calls time out, watch notifications wait until it is
 * reachable again, as a resumed etcd watch would).
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
  /** Every client made, with the address of its node. */
  private readonly clients: { readonly address: string; readonly key: MemoryLeasedKey }[] = [];

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
  }

  get stats(): SimLeaderStoreStats {
    const { claims, renewals, releases, expiries } = this.store.stats;
    return { campaigns: claims, keepAlives: renewals, resigns: releases, expiries, lost: this.lost };
  }

  /** A leader store client for the node at `address` (one per incarnation: a restart gets a new one). */
  client(address: string): LeasedKeyLeaderStore {
    const settings = { ttlMs: this.ttlMs, timeoutMs: this.timeoutMs };
    const key = this.store.key(KEY, settings, { link: (k) => this.link(k, address) });
    this.clients.push({ address, key });
    return new LeasedKeyLeaderStore(key);
  }

  /** Cuts the node at `address` off from the store (false) or reconnects it (true). */
  setReachable(address: string, reachable: boolean): void {
    if (reachable) {
      if (!this.unreachable.delete(address)) return;
      for (const c of this.clients) if (c.address === address && !c.key.isClosed) c.key.resync();
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

  /** The network between one client and the store. */
  private link(key: MemoryLeasedKey, address: string): MemoryKeyLink {
    const lost = () => !this.isReachable(address) || key.isClosed;
    return {
      // One round trip: the request may be lost on the way in or its answer on the way out.
      call: <T>(operation: string, apply: () => T) =>
        new Promise<T>((resolve, reject) => {
          let settled = false;
          const timeout = this.clock.setTimeout(() => {
            if (settled) return;
            settled = true;
            reject(new LeaseUnavailableError(KEY, operation, `no answer within ${this.timeoutMs} ms`));
          }, this.timeoutMs);
          if (lost()) {
            this.lost++;
            return;
          }
          this.clock.setTimeout(() => {
            if (lost()) {
              this.lost++;
              return;
            }
            const result = apply();
            this.clock.setTimeout(() => {
              if (settled) return;
              if (lost()) {
                this.lost++;
                return;
              }
              settled = true;
              this.clock.clearTimeout(timeout);
              resolve(result);
            }, this.hop());
          }, this.hop());
        }),
      // An unreachable node's watch stalls; setReachable(true) catches it up.
      deliver: (notify) =>
        this.clock.setTimeout(() => {
          if (!lost()) notify();
        }, this.watchDelayMs),
    };
  }

  private hop(): number {
    return this.latencyMs + (this.jitterMs > 0 ? this.random!() * this.jitterMs : 0);
  }
}
