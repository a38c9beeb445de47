import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ElectionConfigError } from '../../packages/election/src/election.js';
import {
  EtcdLeaderStore,
  EtcdLeaderStoreConfigError,
  type EtcdLeaderStoreOptions,
} from '../../packages/election/src/etcd-leader-store.js';
import { Election, peersOf } from '../../packages/election/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { blackholeProxy, etcdForSuite, rawEtcd, uniqueCluster } from '../support/etcd.js';
import { etcdClientOptions, ETCD_TTL_MS as TTL_MS } from '../support/etcd-timing.js';
import { holderRecorder } from '../support/holder-recorder.js';
import { eventually } from '../support/wait.js';

const endpoints = etcdForSuite('etcd election');

const TIMEOUT_MS = 600;

const stores: EtcdLeaderStore[] = [];
const transports: WsTransport[] = [];
const elections: Election[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const e of elections.splice(0)) e.stop();
  await Promise.all(transports.splice(0).map((t) => t.close()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function store(overrides: Partial<EtcdLeaderStoreOptions> & { cluster: string }): EtcdLeaderStore {
  const s = new EtcdLeaderStore({ ...etcdClientOptions(endpoints, 'leader', TIMEOUT_MS), ...overrides });
  stores.push(s);
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EtcdLeaderStore configuration and an unreachable etcd', () => {
  it('rejects bad options with EtcdLeaderStoreConfigError (an ElectionConfigError)', () => {
    const base: EtcdLeaderStoreOptions = {
      endpoints: ['http://127.0.0.1:1'],
      cluster: 'c',
      name: 'leader',
      ttlMs: 2000,
    };
    const bad: Partial<EtcdLeaderStoreOptions>[] = [
      { endpoints: [] },
      { endpoints: ['127.0.0.1:2379'] },
      { endpoints: ['grpc://127.0.0.1:2379'] },
      { cluster: 'a/b' },
      { cluster: '' },
      { name: 'x'.repeat(65) },
      { ttlMs: 0 },
      { ttlMs: Number.NaN },
      { timeoutMs: -1 },
      { timeoutMs: 5000 },
    ];
    for (const b of bad) {
      expect(() => new EtcdLeaderStore({ ...base, ...b }), JSON.stringify(b)).toThrow(
        EtcdLeaderStoreConfigError,
      );
    }
    expect(new EtcdLeaderStoreConfigError('x')).toBeInstanceOf(ElectionConfigError);
    const ok = new EtcdLeaderStore(base);
    stores.push(ok);
    expect(ok.key).toBe('/doyen/c/leader/leader');
    expect(ok.ttlMs).toBe(2000);
  });

  it('never throws when etcd is unreachable: every call resolves "unknown" within its timeout', async () => {
    const s = new EtcdLeaderStore({
      endpoints: ['http://127.0.0.1:1'],
      cluster: 'c',
      name: 'leader',
      ttlMs: 900,
      timeoutMs: 300,
    });
    stores.push(s);
    const unwatch = s.watch(() => {
      throw new Error('no report expected');
    });
    const t0 = Date.now();
    expect(await s.campaign('10.0.0.1:2552')).toEqual({ holder: undefined, revision: 0 });
    expect(await s.keepAlive('10.0.0.1:2552')).toBe(false);
    await expect(s.resign('10.0.0.1:2552')).resolves.toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(3 * 300 + 500);
    expect(s.holds('10.0.0.1:2552')).toBe(false);
    await expect(s.campaign('')).rejects.toBeInstanceOf(EtcdLeaderStoreConfigError);
    unwatch();
  });
});

describe.skipIf(!endpoints)('etcd election against a real etcd', () => {
  it('exactly one of three campaigns wins; the others see it through watch; after it resigns another wins', async () => {
    const cluster = uniqueCluster('election');
    const owners = ['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003'];
    const s = owners.map(() => store({ cluster }));
    const watches = s.map(holderRecorder);
    const results = await Promise.all(s.map((x, i) => x.campaign(owners[i]!)));
    const winners = results.map((r, i) => (r.holder === owners[i] ? i : -1)).filter((i) => i >= 0);
    expect(winners).toHaveLength(1);
    const w = winners[0]!;
    const revision = results[w]!.revision;
    expect(revision).toBeGreaterThan(0);
    for (const r of results) expect(r.holder).toBe(owners[w]);
    // Losers learn the key's mod revision: the winner's term.
    for (const r of results) expect(r.revision).toBe(revision);
    await eventually(
      () => watches.every((x) => x.last()?.holder === owners[w] && x.last()?.revision === revision),
      {
        what: 'every watch reports the winner',
        timeoutMs: 3000,
      },
    );
    const raw = rawEtcd(endpoints!);
    try {
      expect(await raw.get(`/doyen/${cluster}/leader/leader`).string()).toBe(owners[w]);
    } finally {
      raw.close();
    }
    expect(s[w]!.holds(owners[w]!)).toBe(true);
    expect(await s[w]!.keepAlive(owners[w]!)).toBe(true);
    for (let i = 0; i < 3; i++) if (i !== w) expect(await s[i]!.keepAlive(owners[i]!)).toBe(false);

    await s[w]!.resign(owners[w]!);
    expect(s[w]!.holds(owners[w]!)).toBe(false);
    await eventually(
      () => watches.every((x) => x.last()?.holder === undefined && x.last()!.revision > revision),
      {
        what: 'every watch reports the deletion',
        timeoutMs: 3000,
      },
    );
    const rest = [0, 1, 2].filter((i) => i !== w);
    const again = await Promise.all(rest.map((i) => s[i]!.campaign(owners[i]!)));
    const second = rest.filter((i, k) => again[k]!.holder === owners[i]);
    expect(second).toHaveLength(1);
    await eventually(() => watches.every((x) => x.last()?.holder === owners[second[0]!]), {
      what: 'every watch reports the second winner',
      timeoutMs: 3000,
    });
  });

  it('a winner that stops keeping alive (closed without resigning) is replaced after the TTL', async () => {
    const cluster = uniqueCluster('election');
    const [a, b] = [store({ cluster }), store({ cluster })];
    expect((await a.campaign('127.0.0.1:7001')).holder).toBe('127.0.0.1:7001');
    const wb = holderRecorder(b);
    const closedAt = Date.now();
    await a.close();
    expect((await b.campaign('127.0.0.1:7002')).holder).toBe('127.0.0.1:7001');
    await eventually(() => wb.last()?.holder === undefined && wb.seen.length >= 2, {
      what: 'the key to expire',
      timeoutMs: TTL_MS + 3000,
      intervalMs: 20,
    });
    // etcd drops it after its TTL (whole seconds, checked on its own ticks), not before.
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(TTL_MS - 300);
    expect((await b.campaign('127.0.0.1:7002')).holder).toBe('127.0.0.1:7002');
  });

  it('a restarted owner takes its own key over without waiting for the TTL', async () => {
    const cluster = uniqueCluster('election');
    const first = store({ cluster });
    const won = await first.campaign('127.0.0.1:7001');
    await first.close();
    const again = await store({ cluster }).campaign('127.0.0.1:7001');
    expect(again.holder).toBe('127.0.0.1:7001');
    expect(again.revision).toBeGreaterThan(won.revision);
  });

  it('three ActorSystems over real WebSockets: one acting leader; it crashes; another takes over within the TTL', async () => {
    const cluster = uniqueCluster('election');
    const ports = await freePorts(3);
    const peers = peersOf(ports.map((port) => ({ host: '127.0.0.1', port })));
    for (const port of ports) {
      const t = await WsTransport.start({ cluster: 'it', host: '127.0.0.1', port, wire: { secret: 's' } });
      transports.push(t);
      elections.push(Election.start(t.system, { algorithm: 'etcd', peers, leaderStore: store({ cluster }) }));
    }
    const stopped = new Set<Election>();
    // A stopped Election keeps its last view: count only the running ones.
    const acting = () => elections.filter((e) => !stopped.has(e) && e.isActing());
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, acting().length)), 5);
    try {
      const leader = await eventually(
        () => {
          const l = elections[0]!.leader();
          return l !== undefined && elections.every((e) => e.leader() === l) && acting().length === 1
            ? l
            : undefined;
        },
        { what: 'one agreed acting leader', timeoutMs: 5000 },
      );
      const term = elections[0]!.view().term;
      expect(elections.every((e) => e.view().term === term)).toBe(true);
      // Renewals keep it: nobody else steps in over more than one TTL.
      await sleep(TTL_MS + 500);
      expect(acting().map((e) => e.self.address)).toEqual([leader]);
      expect(elections.reduce((n, e) => n + e.messagesSent, 0)).toBe(0);

      // Crash: no resign, its socket and store just go away.
      const i = elections.findIndex((e) => e.self.address === leader);
      const crashedAt = Date.now();
      stopped.add(elections[i]!);
      elections[i]!.stop();
      await transports[i]!.close();
      await stores[i]!.close();
      const survivors = elections.filter((_, k) => k !== i);
      const next = await eventually(
        () => {
          const l = survivors[0]!.leader();
          return l !== undefined && l !== leader && survivors.every((e) => e.leader() === l) ? l : undefined;
        },
        { what: 'a new agreed leader', timeoutMs: TTL_MS + 4000, intervalMs: 20 },
      );
      const took = Date.now() - crashedAt;
      // The lease counts from the last renewal, up to a third of the TTL before the crash.
      expect(took).toBeGreaterThanOrEqual((2 * TTL_MS) / 3 - 100);
      expect(took).toBeLessThan(TTL_MS + 2500);
      expect(survivors.filter((e) => e.isActing()).map((e) => e.self.address)).toEqual([next]);
      expect(survivors[0]!.view().term).toBeGreaterThan(term);
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBe(1);
  });

  it('a leader cut off from etcd stops acting before its key expires and another takes over', async () => {
    const cluster = uniqueCluster('election');
    const ports = await freePorts(3);
    const peers = peersOf(ports.map((port) => ({ host: '127.0.0.1', port })));
    const proxy = await blackholeProxy(new URL(endpoints![0]!), servers);
    const startNode = async (port: number, via: string[]) => {
      const t = await WsTransport.start({ cluster: 'it', host: '127.0.0.1', port, wire: { secret: 's' } });
      transports.push(t);
      const e = Election.start(t.system, {
        algorithm: 'etcd',
        peers,
        leaderStore: store({ cluster, endpoints: via }),
      });
      elections.push(e);
      return e;
    };
    // The first node reaches etcd only through the proxy, and leads alone before the others start.
    const cut = await startNode(ports[0]!, [proxy.url]);
    await eventually(() => cut.isActing(), { what: 'the proxied node to lead', timeoutMs: 5000 });
    for (const port of ports.slice(1)) await startNode(port, endpoints!);
    await eventually(() => elections.every((e) => e.leader() === cut.self.address), {
      what: 'all follow it',
      timeoutMs: 5000,
    });
    const others = elections.slice(1);
    let stoppedAt: number | undefined;
    let tookOverAt: number | undefined;
    let most = 0;
    const sampler = setInterval(() => {
      const acting = elections.filter((e) => e.isActing()).length;
      most = Math.max(most, acting);
      if (stoppedAt === undefined && !cut.isActing()) stoppedAt = Date.now();
      if (tookOverAt === undefined && others.some((e) => e.isActing())) tookOverAt = Date.now();
    }, 2);
    try {
      const blockedAt = Date.now();
      proxy.block();
      await eventually(() => tookOverAt !== undefined, {
        what: 'another node to take over',
        timeoutMs: TTL_MS + 4000,
        intervalMs: 20,
      });
      expect(stoppedAt).toBeDefined();
      // It stops within two renewal periods of its last acknowledged renewal...
      expect(stoppedAt! - blockedAt).toBeLessThanOrEqual((2 * TTL_MS) / 3 + 200);
      // ...well before etcd lets anybody else in.
      expect(tookOverAt! - stoppedAt!).toBeGreaterThan(TTL_MS / 6);
      expect(cut.view().role).toBe('looking');
    } finally {
      clearInterval(sampler);
      proxy.close();
    }
    expect(most).toBe(1);
  });
});
