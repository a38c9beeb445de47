import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics } from '../../packages/core/src/index.js';
import {
  EtcdLease,
  type EtcdLeaseOptions,
  LeaseConfigError,
  LeaseUnavailableError,
} from '../../packages/lease/src/index.js';
import { blackholeProxy, etcdForSuite, rawEtcd, uniqueCluster } from '../support/etcd.js';
import {
  etcdClientOptions,
  ETCD_LEASE_TIMEOUT_MS as TIMEOUT_MS,
  ETCD_TTL_MS as TTL_MS,
} from '../support/etcd-timing.js';
import { eventually } from '../support/wait.js';

const endpoints = etcdForSuite('EtcdLease');

const open: EtcdLease[] = [];
const servers: Server[] = [];

function lease(overrides: Partial<EtcdLeaseOptions> & { cluster: string }): EtcdLease {
  const l = new EtcdLease({ ...etcdClientOptions(endpoints, 'sbr', TIMEOUT_MS), ...overrides });
  open.push(l);
  return l;
}

/** A lease of `cluster` that node-a has acquired, and the owners its onLost reports. */
async function heldByNodeA(cluster: string): Promise<{ held: EtcdLease; lost: string[] }> {
  const held = lease({ cluster });
  const lost: string[] = [];
  held.onLost((o) => lost.push(o));
  expect(await held.acquire('node-a')).toBe(true);
  return { held, lost };
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EtcdLease configuration', () => {
  it('rejects bad options with LeaseConfigError', () => {
    const base = {
      endpoints: ['http://127.0.0.1:1'],
      cluster: 'c',
      name: 'sbr',
      ttlMs: 2000,
      timeoutMs: 500,
    };
    expect(() => new EtcdLease({ ...base, endpoints: [] })).toThrow(LeaseConfigError);
    expect(() => new EtcdLease({ ...base, endpoints: ['127.0.0.1:2379'] })).toThrow(LeaseConfigError);
    expect(() => new EtcdLease({ ...base, endpoints: ['grpc://127.0.0.1:2379'] })).toThrow(LeaseConfigError);
    expect(() => new EtcdLease({ ...base, cluster: 'a/b' })).toThrow(LeaseConfigError);
    expect(() => new EtcdLease({ ...base, name: '' })).toThrow(LeaseConfigError);
    expect(() => new EtcdLease({ ...base, timeoutMs: 2000 })).toThrow(LeaseConfigError);
  });
});

describe('EtcdLease with an unreachable etcd', () => {
  async function check(endpoint: string) {
    const metrics = new Metrics();
    const l = new EtcdLease({
      endpoints: [endpoint],
      cluster: 'dead',
      name: 'sbr',
      ttlMs: 2000,
      timeoutMs: 500,
      metrics,
    });
    open.push(l);
    const started = Date.now();
    expect(await l.acquire('node-a')).toBe(false);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(500 + 700);
    expect(l.checkLease('node-a')).toBe(false);
    expect(metrics.value('doyen_lease_acquire_total', { lease: 'sbr', result: 'unavailable' })).toBe(1);
    await l.release('node-a'); // best effort: resolves, does not hang
    return elapsed;
  }

  it('acquire resolves false within timeoutMs on a dead port', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    await check(`http://127.0.0.1:${port}`);
  });

  it('acquire resolves false within timeoutMs when the port accepts but never answers', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    servers.push(silent);
    const port = (silent.address() as { port: number }).port;
    const elapsed = await check(`http://127.0.0.1:${port}`);
    expect(elapsed).toBeGreaterThanOrEqual(450);
    for (const s of sockets) s.destroy();
  });

  it('LeaseUnavailableError is a DoyenError with a stable code', () => {
    const error = new LeaseUnavailableError('sbr', 'grant', 'no answer');
    expect(error.code).toBe('lease-unavailable');
    expect(error.message).toContain('grant');
  });
});

describe.skipIf(!endpoints)('EtcdLease against a real etcd', () => {
  it('has a single holder; a second owner is refused until the first releases', async () => {
    const cluster = uniqueCluster();
    const metrics = new Metrics();
    const a = lease({ cluster, metrics });
    const b = lease({ cluster });
    expect(await a.acquire('node-a')).toBe(true);
    expect(a.checkLease('node-a')).toBe(true);
    expect(await a.acquire('node-a')).toBe(true); // staying the holder
    expect(await b.acquire('node-b')).toBe(false);
    expect(b.checkLease('node-b')).toBe(false);
    expect(metrics.value('doyen_lease_held', { lease: 'sbr' })).toBe(1);

    const raw = rawEtcd(endpoints!);
    try {
      expect(await raw.get(a.key).string()).toBe('node-a');
      await b.release('node-b'); // not the holder: must not delete a's key
      expect(await raw.get(a.key).string()).toBe('node-a');

      await a.release('node-a');
      expect(a.checkLease('node-a')).toBe(false);
      expect(await raw.get(a.key).string()).toBeNull();
      await a.release('node-a'); // idempotent
    } finally {
      raw.close();
    }
    expect(metrics.value('doyen_lease_held', { lease: 'sbr' })).toBe(0);

    expect(await b.acquire('node-b')).toBe(true);
    expect(await a.acquire('node-a')).toBe(false);
    expect(metrics.value('doyen_lease_acquire_total', { lease: 'sbr', result: 'refused' })).toBe(1);
  });

  it('keeps the lease alive past its TTL while the holder runs', async () => {
    const cluster = uniqueCluster();
    const { held: a, lost } = await heldByNodeA(cluster);
    const b = lease({ cluster });
    await sleep(TTL_MS + 1000);
    expect(a.checkLease('node-a')).toBe(true);
    expect(await b.acquire('node-b')).toBe(false);
    expect(lost).toEqual([]);
  });

  it('lapses about one TTL after the holder stops keeping it alive (closed without release)', async () => {
    const cluster = uniqueCluster();
    const a = lease({ cluster });
    const b = lease({ cluster });
    expect(await a.acquire('node-a')).toBe(true);
    await a.close();
    const closedAt = Date.now();
    expect(await b.acquire('node-b')).toBe(false);
    await eventually(() => b.acquire('node-b'), {
      timeoutMs: TTL_MS + 4000,
      intervalMs: 100,
      what: 'b acquires',
    });
    const waited = Date.now() - closedAt;
    expect(waited).toBeGreaterThan(TTL_MS - 1000);
    expect(waited).toBeLessThan(TTL_MS + 4000);
    expect(b.checkLease('node-b')).toBe(true);
  });

  it('onLost fires when the key is deleted behind the holder’s back', async () => {
    const cluster = uniqueCluster();
    const { held: a, lost } = await heldByNodeA(cluster);
    const b = lease({ cluster });
    const raw = rawEtcd(endpoints!);
    try {
      await raw.delete().key(a.key);
    } finally {
      raw.close();
    }
    await eventually(() => lost.length > 0, { timeoutMs: 3000, what: 'onLost' });
    expect(lost).toEqual(['node-a']);
    expect(a.checkLease('node-a')).toBe(false);
    expect(await b.acquire('node-b')).toBe(true);
    // a's etcd lease was revoked on loss, so it does not take b's key with it.
    await sleep(200);
    expect(b.checkLease('node-b')).toBe(true);
  });

  it('a holder partitioned from etcd gives the lease up locally before anyone else can take it', async () => {
    const cluster = uniqueCluster();
    const proxy = await blackholeProxy(new URL(endpoints![0]!), servers);
    const metrics = new Metrics();
    const a = lease({ cluster, endpoints: [proxy.url], metrics });
    const b = lease({ cluster });
    let lostAt = 0;
    a.onLost(() => (lostAt = Date.now()));
    expect(await a.acquire('node-a')).toBe(true);
    await sleep(300);
    proxy.block();
    const blockedAt = Date.now();
    expect(a.checkLease('node-a')).toBe(true);
    await eventually(() => lostAt > 0, { timeoutMs: TTL_MS + 1000, what: 'onLost after partition' });
    expect(lostAt - blockedAt).toBeLessThanOrEqual(TTL_MS + 500);
    expect(a.checkLease('node-a')).toBe(false);
    expect(metrics.value('doyen_lease_lost_total', { lease: 'sbr', reason: 'expired' })).toBe(1);
    await eventually(() => b.acquire('node-b'), {
      timeoutMs: TTL_MS + 4000,
      intervalMs: 50,
      what: 'b acquires',
    });
    const acquiredAt = Date.now();
    expect(acquiredAt).toBeGreaterThanOrEqual(lostAt);
    proxy.close();
  });

  it('onLost fires when another writer overwrites the key', async () => {
    const { held: a, lost } = await heldByNodeA(uniqueCluster());
    const raw = rawEtcd(endpoints!);
    try {
      await raw.put(a.key).value('intruder');
      await eventually(() => lost.length > 0, { timeoutMs: 3000, what: 'onLost' });
      expect(a.checkLease('node-a')).toBe(false);
      await raw.delete().key(a.key);
    } finally {
      raw.close();
    }
  });

  it('the same owner from a new process takes over; the old instance is told', async () => {
    const cluster = uniqueCluster();
    const { held: old, lost } = await heldByNodeA(cluster);
    const restarted = lease({ cluster });
    expect(await restarted.acquire('node-a')).toBe(true);
    await eventually(() => lost.length > 0, { timeoutMs: 3000, what: 'onLost' });
    expect(old.checkLease('node-a')).toBe(false);
    await sleep(200);
    expect(restarted.checkLease('node-a')).toBe(true);
    const other = lease({ cluster });
    expect(await other.acquire('node-b')).toBe(false);
  });

  it('different names and clusters do not contend', async () => {
    const cluster = uniqueCluster();
    const sbr = lease({ cluster, name: 'sbr' });
    const singleton = lease({ cluster, name: 'singleton-allocator' });
    const elsewhere = lease({ cluster: uniqueCluster(), name: 'sbr' });
    expect(await sbr.acquire('node-a')).toBe(true);
    expect(await singleton.acquire('node-b')).toBe(true);
    expect(await elsewhere.acquire('node-c')).toBe(true);
  });

  it('concurrent acquires from many instances elect exactly one', async () => {
    const cluster = uniqueCluster();
    const contenders = Array.from({ length: 5 }, () => lease({ cluster }));
    const results = await Promise.all(contenders.map((l, i) => l.acquire(`node-${i}`)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});
