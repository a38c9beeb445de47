import { describe, expect, it } from 'vitest';
import { DoyenError, InvalidConfigError } from '../../packages/core/src/index.js';
import { LeaseConfigError } from '../../packages/lease/src/index.js';
import { type InMemoryLease, InMemoryLeaseArbiter } from '../../packages/testkit/src/simulated-stores.js';

const settings = { ttlMs: 5000, timeoutMs: 1000 };

function setup() {
  let t = 1_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const arbiter = new InMemoryLeaseArbiter(clock.now);
  const a = arbiter.lease('sbr', settings);
  const b = arbiter.lease('sbr', settings);
  return { clock, arbiter, a, b };
}

describe('InMemoryLease', () => {
  it('has one holder at a time; release lets the other acquire', async () => {
    const { arbiter, a, b } = setup();
    expect(await a.acquire('node-a')).toBe(true);
    expect(await a.acquire('node-a')).toBe(true); // staying the holder
    expect(await b.acquire('node-b')).toBe(false);
    expect(a.checkLease('node-a')).toBe(true);
    expect(b.checkLease('node-b')).toBe(false);
    expect(arbiter.holder('sbr')).toBe('node-a');

    await b.release('node-b'); // not the holder: nothing happens
    expect(arbiter.holder('sbr')).toBe('node-a');

    await a.release('node-a');
    await a.release('node-a'); // idempotent
    expect(a.checkLease('node-a')).toBe(false);
    expect(await b.acquire('node-b')).toBe(true);
    expect(await a.acquire('node-a')).toBe(false);
  });

  it('names are independent', async () => {
    const { arbiter } = setup();
    const sbr = arbiter.lease('sbr', settings);
    const singleton = arbiter.lease('singleton-allocator', settings);
    expect(await sbr.acquire('node-a')).toBe(true);
    expect(await singleton.acquire('node-b')).toBe(true);
  });

  it('a live holder keeps the lease past its TTL', async () => {
    const { clock, a, b } = setup();
    expect(await a.acquire('node-a')).toBe(true);
    clock.advance(60_000);
    expect(a.checkLease('node-a')).toBe(true);
    expect(await b.acquire('node-b')).toBe(false);
  });

  it('a crashed holder (closed without release) lapses exactly after the TTL on the fake clock', async () => {
    const { clock, a, b } = setup();
    expect(await a.acquire('node-a')).toBe(true);
    clock.advance(1000);
    await a.close();
    expect(a.checkLease('node-a')).toBe(false);
    clock.advance(settings.ttlMs - 1);
    expect(await b.acquire('node-b')).toBe(false);
    clock.advance(1);
    expect(await b.acquire('node-b')).toBe(true);
    expect(b.checkLease('node-b')).toBe(true);
  });

  it('a holder cut off from the arbiter keeps it until the TTL, then loses it and is told', async () => {
    const { clock, arbiter, a, b } = setup();
    const lost: string[] = [];
    a.onLost((owner) => lost.push(owner));
    expect(await a.acquire('node-a')).toBe(true);
    arbiter.setReachable(a, false);
    expect(await a.acquire('node-a')).toBe(false); // unavailable, not an exception

    clock.advance(settings.ttlMs - 1);
    expect(a.checkLease('node-a')).toBe(true);
    expect(await b.acquire('node-b')).toBe(false);
    expect(lost).toEqual([]);

    clock.advance(1);
    expect(a.checkLease('node-a')).toBe(false);
    expect(lost).toEqual(['node-a']);
    expect(await b.acquire('node-b')).toBe(true);

    arbiter.setReachable(a, true);
    expect(await a.acquire('node-a')).toBe(false);
    expect(lost).toEqual(['node-a']);
  });

  it('a holder reconnected before the TTL keeps holding', async () => {
    const { clock, arbiter, a, b } = setup();
    expect(await a.acquire('node-a')).toBe(true);
    arbiter.setReachable(a, false);
    clock.advance(settings.ttlMs - 100);
    arbiter.setReachable(a, true);
    clock.advance(settings.ttlMs * 3);
    expect(a.checkLease('node-a')).toBe(true);
    expect(await b.acquire('node-b')).toBe(false);
  });

  it('sweep notifies a lapsed holder without anyone acquiring', async () => {
    const { clock, arbiter, a } = setup();
    const lost: string[] = [];
    a.onLost((owner) => lost.push(owner));
    await a.acquire('node-a');
    arbiter.setReachable(a, false);
    clock.advance(settings.ttlMs);
    arbiter.sweep();
    expect(lost).toEqual(['node-a']);
    expect(arbiter.holder('sbr')).toBeUndefined();
  });

  it('revoke behind the holder’s back fires onLost; unsubscribe and throwing listeners behave', async () => {
    const { arbiter, a, b } = setup();
    const seen: string[] = [];
    const unsubscribe = a.onLost((owner) => seen.push(`first:${owner}`));
    a.onLost(() => {
      throw new Error('listener bug');
    });
    a.onLost((owner) => seen.push(`third:${owner}`));
    await a.acquire('node-a');
    arbiter.revoke('sbr');
    expect(seen).toEqual(['first:node-a', 'third:node-a']);
    expect(a.checkLease('node-a')).toBe(false);
    expect(await b.acquire('node-b')).toBe(true);

    unsubscribe();
    arbiter.revoke('sbr');
    expect(await a.acquire('node-a')).toBe(true);
    arbiter.revoke('sbr');
    expect(seen).toEqual(['first:node-a', 'third:node-a', 'third:node-a']);
  });

  it('the same owner from a new instance (a restarted node) takes over and the old instance is told', async () => {
    const { arbiter, a } = setup();
    const lost: string[] = [];
    a.onLost((owner) => lost.push(owner));
    await a.acquire('node-a');
    const restarted = arbiter.lease('sbr', settings);
    expect(await restarted.acquire('node-a')).toBe(true);
    expect(lost).toEqual(['node-a']);
    expect(a.checkLease('node-a')).toBe(false);
    expect(restarted.checkLease('node-a')).toBe(true);
  });

  it('rejects misconfiguration with typed errors', async () => {
    const arbiter = new InMemoryLeaseArbiter(() => 0);
    const make = (name: string, s: { ttlMs: number; timeoutMs: number }) => () => arbiter.lease(name, s);
    for (const bad of [
      make('', settings),
      make('has space', settings),
      make('sbr', { ttlMs: 0, timeoutMs: 10 }),
      make('sbr', { ttlMs: Number.NaN, timeoutMs: 10 }),
      make('sbr', { ttlMs: 1000, timeoutMs: 0 }),
      make('sbr', { ttlMs: 1000, timeoutMs: 1000 }),
    ]) {
      expect(bad).toThrow(LeaseConfigError);
    }
    try {
      make('sbr', { ttlMs: 1000, timeoutMs: 2000 })();
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(error).toBeInstanceOf(DoyenError);
      expect((error as DoyenError).code).toBe('invalid-config');
    }
    const lease: InMemoryLease = arbiter.lease('sbr', settings);
    await expect(lease.acquire('')).rejects.toThrow(LeaseConfigError);
  });

  it('a closed lease never acquires', async () => {
    const { a } = setup();
    await a.close();
    expect(await a.acquire('node-a')).toBe(false);
    await a.release('node-a');
    expect(a.checkLease('node-a')).toBe(false);
  });
});
