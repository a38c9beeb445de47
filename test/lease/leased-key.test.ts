import { afterEach, describe, expect, it } from 'vitest';
import {
  EtcdLeasedKey,
  LeaseConfigError,
  type LeasedKey,
  LeaseUnavailableError,
  MemoryKeyStore,
} from '../../packages/lease/src/index.js';
import { VirtualClock } from '../../packages/testkit/src/index.js';
import { etcdForSuite, rawEtcd, uniqueCluster } from '../support/etcd.js';
import { ETCD_LEASE_TIMEOUT_MS as TIMEOUT_MS, ETCD_TTL_MS as TTL_MS } from '../support/etcd-timing.js';
import { holderRecorder } from '../support/holder-recorder.js';
import { eventually } from '../support/wait.js';

const endpoints = etcdForSuite('LeasedKey on etcd');

/** Handles on one fresh key, all contending for it (one per process in production). */
interface Backend {
  readonly handles: (n: number) => LeasedKey[];
}

const open: LeasedKey[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((k) => k.close()));
});

const memory: Backend = {
  handles: (n) => {
    const store = new MemoryKeyStore({ now: Date.now });
    return Array.from({ length: n }, () => {
      const k = store.key('leader', { ttlMs: TTL_MS, timeoutMs: TIMEOUT_MS });
      open.push(k);
      return k;
    });
  },
};

const etcd: Backend = {
  handles: (n) => {
    const key = `/doyen/${uniqueCluster('leased-key')}/leader/contract`;
    return Array.from({ length: n }, () => {
      const k = new EtcdLeasedKey({
        endpoints: endpoints ?? [],
        key,
        name: 'contract',
        ttlMs: TTL_MS,
        timeoutMs: TIMEOUT_MS,
      });
      open.push(k);
      return k;
    });
  },
};

/** The one contract both backends keep: the adapters (EtcdLease, the leader stores) rely on nothing else. */
function contract(backend: Backend) {
  it('claim creates the key; another owner is refused and learns the holder and its revision', async () => {
    const [a, b] = backend.handles(2);
    const before = Date.now();
    const won = await a!.claim('node-a');
    expect(won).toMatchObject({ won: true, holder: 'node-a' });
    expect(won.revision).toBeGreaterThan(0);
    // validUntil counts from the send time: no later than the answer plus the TTL.
    expect(a!.validUntil('node-a')).toBeGreaterThanOrEqual(before + TTL_MS);
    expect(a!.validUntil('node-a')).toBeLessThanOrEqual(Date.now() + TTL_MS);
    expect(a!.holds('node-a')).toBe(true);
    expect(a!.holds('node-b')).toBe(false);

    expect(await b!.claim('node-b')).toEqual({ won: false, holder: 'node-a', revision: won.revision });
    expect(b!.validUntil('node-b')).toBe(0);
    expect(await b!.renew('node-b')).toBe(false);
  });

  it('renew keeps a won claim and pushes validUntil; release by another owner leaves it, by the holder deletes it', async () => {
    const [a, b] = backend.handles(2);
    await a!.claim('node-a');
    const first = a!.validUntil('node-a');
    await new Promise((r) => setTimeout(r, 20));
    expect(await a!.renew('node-a')).toBe(true);
    expect(a!.validUntil('node-a')).toBeGreaterThan(first);

    const watch = holderRecorder(b!);
    await eventually(() => watch.last()?.holder === 'node-a', { what: 'the watch reports the holder' });
    await b!.release('node-b'); // not the holder: delete-if-mine leaves it
    expect((await b!.claim('node-b')).holder).toBe('node-a');

    const held = watch.last()!.revision;
    await a!.release('node-a');
    expect(a!.holds('node-a')).toBe(false);
    await eventually(() => watch.last()?.holder === undefined && watch.last()!.revision > held, {
      what: 'the watch reports the deletion',
    });
    expect((await b!.claim('node-b')).won).toBe(true);
    await eventually(() => watch.last()?.holder === 'node-b', { what: 'the watch reports the new holder' });
    // revisions only grow
    const revisions = watch.seen.map((s) => s.revision);
    expect(revisions).toEqual([...revisions].sort((x, y) => x - y));
  });

  it('the same owner from another handle (a restarted process) takes the key over; the old handle is out', async () => {
    const [old, restarted] = backend.handles(2);
    const first = await old!.claim('node-a');
    const again = await restarted!.claim('node-a');
    expect(again.won).toBe(true);
    expect(again.revision).toBeGreaterThan(first.revision);
    expect(await old!.renew('node-a')).toBe(false);
    expect(old!.holds('node-a')).toBe(false);
    expect(await restarted!.renew('node-a')).toBe(true);
  });

  it('concurrent claims of five owners: exactly one wins, all agree on it', async () => {
    const handles = backend.handles(5);
    const claims = await Promise.all(handles.map((k, i) => k.claim(`node-${i}`)));
    const winners = claims.filter((c) => c.won);
    expect(winners).toHaveLength(1);
    for (const c of claims) expect(c.holder).toBe(winners[0]!.holder);
  });

  it('rejects a bad owner with LeaseConfigError and any call after close as unavailable', async () => {
    const [a] = backend.handles(1);
    await expect(a!.claim('')).rejects.toBeInstanceOf(LeaseConfigError);
    await a!.close();
    await expect(a!.claim('node-a')).rejects.toBeInstanceOf(LeaseUnavailableError);
    expect(a!.validUntil('node-a')).toBe(0);
  });
}

describe('LeasedKey: in-memory backend', () => {
  contract(memory);

  it('on a virtual clock an unrenewed key expires exactly one TTL after its last renewal, and watchers hear it', () => {
    const clock = new VirtualClock();
    const store = new MemoryKeyStore({ now: () => clock.now(), timers: clock });
    const a = store.key('leader', { ttlMs: 600, timeoutMs: 200 });
    const lost: string[] = [];
    a.onLost((owner, reason) => lost.push(`${owner}:${reason}`));
    const seen: (string | undefined)[] = [];
    store.watch('leader', (holder) => seen.push(holder));
    void a.claim('node-a');
    clock.advance(400);
    void a.renew('node-a');
    clock.advance(599);
    expect(store.holder('leader')).toBe('node-a');
    clock.advance(1);
    expect(store.holder('leader')).toBeUndefined();
    expect(seen).toEqual(['node-a', undefined]);
    expect(lost).toEqual(['node-a:expired']);
    expect(store.stats).toEqual({ claims: 1, renewals: 1, releases: 0, expiries: 1 });
  });

  it('a cut-off handle is unavailable, and its kept-alive claim lapses one TTL after the cut', async () => {
    let t = 0;
    const store = new MemoryKeyStore({ now: () => t });
    const a = store.key('leader', { ttlMs: 600, timeoutMs: 200, keepAlive: true });
    const b = store.key('leader', { ttlMs: 600, timeoutMs: 200, keepAlive: true });
    expect((await a.claim('node-a')).won).toBe(true);
    t += 10_000; // kept alive without being asked
    expect(a.holds('node-a')).toBe(true);
    a.setReachable(false);
    await expect(a.renew('node-a')).rejects.toBeInstanceOf(LeaseUnavailableError);
    t += 599;
    expect(a.validUntil('node-a')).toBe(t + 1);
    expect((await b.claim('node-b')).won).toBe(false);
    t += 1;
    expect((await b.claim('node-b')).won).toBe(true);
    expect(a.holds('node-a')).toBe(false);
  });
});

describe.skipIf(!endpoints)('LeasedKey: etcd backend', () => {
  contract(etcd);

  it("a handle that lost its key revokes its own etcd lease, which leaves the new holder's key alone", async () => {
    const [old, restarted] = etcd.handles(2);
    await old!.claim('node-a');
    await restarted!.claim('node-a');
    expect(await old!.renew('node-a')).toBe(false); // discards the old lease
    const raw = rawEtcd(endpoints!);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const kv = (await raw.get(restarted!.key).exec()).kvs[0];
      expect(kv?.value.toString()).toBe('node-a');
      expect(await restarted!.renew('node-a')).toBe(true);
    } finally {
      raw.close();
    }
  });
});

describe('LeasedKey: etcd backend configuration', () => {
  it('rejects unusable options with LeaseConfigError', () => {
    const base = { endpoints: ['http://127.0.0.1:1'], key: '/k', name: 'k', ttlMs: 2000, timeoutMs: 500 };
    for (const bad of [
      { endpoints: [] },
      { endpoints: ['127.0.0.1:2379'] },
      { key: '' },
      { ttlMs: 0 },
      { timeoutMs: 2500 },
    ]) {
      expect(() => new EtcdLeasedKey({ ...base, ...bad }), JSON.stringify(bad)).toThrow(LeaseConfigError);
    }
  });
});
