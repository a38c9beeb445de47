import { describe, expect, it } from 'vitest';
import {
  type ClusterEvent,
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  DEFAULT_HEARTBEAT_RING_CONFIG,
} from '../../packages/cluster/src/index.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { formedSimCluster, SimCluster } from '../support/sim-cluster.js';

const cluster = (names: string[], seed: number, config = {}) => formedSimCluster(names, { seed }, config);

describe('membership lifecycle', () => {
  it('a restarted process is a new incarnation: it replaces the old one and gets a new age', async () => {
    const c = await cluster(['athens', 'byzantium', 'cyrene'], 41);
    const old = c
      .get('athens')
      .cluster.state()
      .membership!.members.find((m) => m.name === 'cyrene')!;
    c.crash('cyrene');
    // restart before anyone noticed the crash
    await c.sim.runFor(50);
    c.start('cyrene');
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene']));
    const fresh = c
      .get('athens')
      .cluster.state()
      .membership!.members.find((m) => m.name === 'cyrene')!;
    expect(fresh.uid).not.toBe(old.uid);
    expect(fresh.age).toBeGreaterThan(3);
    expect(c.get('athens').cluster.state().membership!.members).toHaveLength(3);
    // the old incarnation's failure-detector history is gone: no false unreachable for the new one
    await c.sim.runFor(5000);
    expect(c.get('athens').cluster.state().membership!.unreachable).toEqual([]);
  });

  it('a node restarted after it was downed leaves the failed list and comes back with a new age', async () => {
    const c = await cluster(['athens', 'byzantium', 'cyrene'], 42);
    c.crash('cyrene');
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium']));
    expect(
      c
        .get('athens')
        .cluster.state()
        .membership!.failed.map((m) => m.name),
    ).toEqual(['cyrene']);
    c.start('cyrene');
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene']));
    const m = c.get('byzantium').cluster.state().membership!;
    expect(m.failed).toEqual([]);
    expect(m.nextAge).toBe(5);
    expect(m.members.find((x) => x.name === 'cyrene')!.age).toBe(4);
  });

  it('a member leaves gracefully: leaving, exiting, removed, seen by everyone', async () => {
    const c = await cluster(['athens', 'byzantium', 'cyrene'], 43);
    const seen: string[] = [];
    c.get('athens').cluster.subscribe((e) => {
      if ('member' in e && e.member.name === 'cyrene') seen.push(e.type);
    });
    const left = c.get('cyrene').cluster.leave();
    await c.sim.runUntil(() => c.get('cyrene').cluster.state().status === 'removed', { timeoutMs: 5000 });
    await left;
    expect(seen).toEqual(['member.leaving', 'member.exiting', 'member.removed']);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium']));
    expect(c.get('athens').cluster.state().membership!.failed).toEqual([]);
  });

  it('a leaving coordinator hands coordination to the next oldest', async () => {
    const c = await cluster(['athens', 'byzantium', 'cyrene'], 44);
    const events: ClusterEvent[] = [];
    c.get('cyrene').cluster.subscribe((e) => events.push(e));
    void c.get('athens').cluster.leave();
    const took = await c.sim.runUntil(() => c.get('athens').cluster.state().status === 'removed', {
      timeoutMs: 5000,
    });
    expect(took).toBeLessThan(1000);
    await c.sim.runUntil(() => c.converged(['byzantium', 'cyrene']));
    expect(c.coordinatorOf('cyrene')).toBe('byzantium');
    const changed = events.find((e) => e.type === 'coordinator.changed');
    expect(changed && changed.type === 'coordinator.changed' && changed.coordinator?.name).toBe('byzantium');
    expect(events.some((e) => e.type === 'member.downed')).toBe(false);
  });

  it('a whole cluster leaving at once does not wait for a coordinator that is leaving too', async () => {
    const names = ['athens', 'byzantium', 'cyrene'];
    const c = await cluster(names, 47);
    for (const n of names) void c.get(n).cluster.leave();
    const took = await c.sim.runUntil(
      () => names.every((n) => c.get(n).cluster.state().status === 'removed'),
      {
        timeoutMs: 10_000,
      },
    );
    expect(took).toBeLessThan(2000);
  });

  it('the last member leaving removes itself', async () => {
    const c = await cluster(['athens'], 45);
    await Promise.all([
      c.get('athens').cluster.leave(),
      c.sim.runUntil(() => c.get('athens').cluster.state().status === 'removed'),
    ]);
  });

  it('the events API works as an async iterator', async () => {
    const c = await cluster(['athens'], 46);
    const iterator = c.get('athens').cluster.events();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of iterator) {
        seen.push(`${e.type}${'member' in e ? ` ${e.member.name}` : ''}`);
        if (seen.length === 2) break;
      }
    })();
    c.start('byzantium');
    await c.sim.runUntil(() => seen.length === 2);
    await reading;
    expect(seen).toEqual(['member.joined byzantium', 'member.up byzantium']);
  });
});

describe('failure detection at scale', () => {
  it('above the all-to-all size each node heartbeats only K others, and owes no replies', async () => {
    const names = Array.from({ length: 16 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    const c = new SimCluster({ seed: 51 });
    c.addressOf = (name) => ({ host: `10.0.1.${names.indexOf(name) + 1}`, port: 2552 });
    for (const n of names) c.start(n, ['n00']);
    await c.sim.runUntil(() => c.converged(names), { timeoutMs: 60_000 });
    let pings = 0;
    let pongs = 0;
    const stop = c.sim.network.observe((e) => {
      if (e.kind === 'send' && e.messageType === 'heartbeat.ping') pings++;
      if (e.kind === 'send' && e.messageType === 'heartbeat.pong') pongs++;
    });
    await c.sim.runFor(10_000);
    stop();
    const perNodePerSecond = pings / names.length / 10;
    // K targets (K / 2 on each side of the ring; 8 by default) at 5 heartbeats per second (every
    // 200 ms); all-to-all would be 15 * 5
    const k = DEFAULT_HEARTBEAT_RING_CONFIG.monitoredByNrOfMembers;
    const perTarget = 1000 / DEFAULT_HEARTBEAT_INTERVAL_MS;
    expect(perNodePerSecond).toBeGreaterThan(k * perTarget - 3);
    expect(perNodePerSecond).toBeLessThan(k * perTarget + 3);
    // the ring is symmetric: each side's pings are the other's heartbeats
    expect(pongs).toBe(0);
    // and a crash is still detected and handled
    c.crash('n11');
    const rest = names.filter((n) => n !== 'n11');
    await c.sim.runUntil(() => c.converged(rest), { timeoutMs: 10_000 });
  }, 120_000);

  it('the deadline detector is selectable and detects a crash after its deadline', async () => {
    const c = await cluster(['athens', 'byzantium', 'cyrene'], 52, {
      failureDetector: { kind: 'deadline', acceptableHeartbeatPauseMs: 400, heartbeatIntervalMs: 100 },
      heartbeatIntervalMs: 100,
      downing: 'auto',
    });
    // a silent crash (its host gone, no port to refuse): the deadline finds it, not a refused dial
    c.sim.network.configure({ refuseDeadAddresses: false });
    c.crash('cyrene');
    const took = await c.sim.runUntil(() => c.converged(['athens', 'byzantium']), { timeoutMs: 5000 });
    expect(took).toBeGreaterThanOrEqual(400);
    expect(took).toBeLessThan(800);
  });

  it('a 100 ms stall of one node is not a failure', async () => {
    await forEachSeed([61, 62], async (seed) => {
      const c = await cluster(['athens', 'byzantium', 'cyrene'], seed);
      for (let i = 0; i < 20; i++) {
        c.sim.pause(c.get('byzantium').system, 100);
        await c.sim.runFor(1000);
      }
      expect(c.get('athens').cluster.state().membership!.failed).toEqual([]);
      expect(c.converged(['athens', 'byzantium', 'cyrene'])).toBe(true);
    });
  });
});

describe('leaving before being a member', () => {
  it('a node still joining (its seed gone) leaves at once: there is no membership to give up', async () => {
    const c = new SimCluster({ seed: 45 });
    // athens is never started: byzantium asks it again and again
    const lone = c.start('byzantium', ['athens']);
    await c.sim.runFor(3000);
    // positive control: it really is still joining, with nobody to hear a leave
    expect(lone.cluster.state().status).toBe('joining');
    let left = false;
    void lone.cluster.leave().then(() => {
      left = true;
    });
    await c.sim.runFor(0);
    expect(left).toBe(true);
  });

  it('a member does not: its leave ends only once it is removed', async () => {
    const c = await cluster(['athens', 'byzantium'], 46);
    let left = false;
    void c
      .get('byzantium')
      .cluster.leave()
      .then(() => {
        left = true;
      });
    await c.sim.runFor(0);
    expect(left).toBe(false);
    await c.sim.runUntil(() => left, { timeoutMs: 5000 });
    expect(c.get('byzantium').cluster.state().status).toBe('removed');
  });
});
