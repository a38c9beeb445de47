import { describe, expect, it } from 'vitest';
import { forEachSeed, type NetworkEvent } from '../../packages/testkit/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';

/**
 * The Emergent Leader seed's own scenarios (seeds/000 and 004), on a simulated network. Where
 * failures are handled, `downing: 'auto'` is the seed's behaviour (keep-majority is the default).
 */
describe('emergent leader: the seed scenarios', () => {
  const orders = [
    ['athens', 'byzantium', 'cyrene'],
    ['byzantium', 'athens', 'cyrene'],
    ['cyrene', 'byzantium', 'athens'],
    ['byzantium', 'cyrene', 'athens'],
  ];

  it.each(orders)(
    'athens, byzantium and cyrene start in the order %s, %s, %s and form one cluster',
    async (...order) => {
      await forEachSeed([1, 2, 3], async (seed) => {
        const c = new SimCluster({ seed });
        for (const name of order) {
          c.start(name);
          await c.sim.runFor(700);
        }
        const all = ['athens', 'byzantium', 'cyrene'];
        await c.sim.runUntil(() => c.converged(all), {
          timeoutMs: 30_000,
          description: 'one cluster of three',
        });
        expect(c.coordinatorOf('cyrene')).toBe('athens');
        const ages = Object.fromEntries(
          c
            .get('athens')
            .cluster.state()
            .membership!.members.map((m) => [m.name, m.age]),
        );
        expect(ages.athens).toBe(1);
        // ages follow the order in which athens let them in; none is reused
        expect(new Set(Object.values(ages)).size).toBe(3);
      });
    },
  );

  it('byzantium started long before athens keeps retrying until athens is up (no island)', async () => {
    const c = new SimCluster({ seed: 7 }, { maxJoinAttempts: 50 });
    c.start('byzantium');
    await c.sim.runFor(10_000);
    expect(c.get('byzantium').cluster.state().status).toBe('joining');
    c.start('athens');
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium']), { timeoutMs: 20_000 });
    expect(c.coordinatorOf('byzantium')).toBe('athens');
  });

  it('a node that cannot reach any seed gives up with JoinFailed after its attempts', async () => {
    const c = new SimCluster({ seed: 8 }, { maxJoinAttempts: 5 });
    const b = c.start('byzantium');
    const failure = b.cluster.whenUp().then(
      () => 'joined',
      (e: Error) => e.message,
    );
    await c.sim.runFor(60_000);
    expect(await failure).toMatch(/could not join the cluster: no seed answered after 5 attempts/);
    expect(b.cluster.state().status).toBe('join-failed');
  });

  it('delphi joins: athens answers only after byzantium and cyrene acknowledged', async () => {
    const c = new SimCluster({ seed: 11 });
    for (const n of ['athens', 'byzantium', 'cyrene']) c.start(n);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene']));
    const trace: NetworkEvent[] = [];
    c.sim.network.observe((e) => trace.push(e));
    c.start('delphi');
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi']));
    const delphi = c.addressOf('delphi');
    const welcome = trace.find((e) => e.kind === 'send' && e.messageType === 'membership.welcome');
    const acks = trace.filter(
      (e) =>
        e.kind === 'deliver' &&
        e.messageType === 'membership.ack' &&
        e.to === '10.0.0.1:2552' &&
        e.time <= welcome!.time,
    );
    expect(welcome?.to).toBe(`${delphi.host}:${delphi.port}`);
    expect(new Set(acks.map((a) => a.from))).toEqual(new Set(['10.0.0.2:2552', '10.0.0.3:2552']));
    expect(Math.max(...acks.map((a) => a.time))).toBeLessThanOrEqual(welcome!.time);
  });

  it('a late ack does not block the joiner beyond the ack timeout (the ResultsCollector times out)', async () => {
    const c = new SimCluster({ seed: 12 }, { ackTimeoutMs: 2000 });
    for (const n of ['athens', 'byzantium', 'cyrene']) c.start(n);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene']));
    const trace: NetworkEvent[] = [];
    c.sim.network.observe((e) => trace.push(e));
    // cyrene's acks to athens are lost for a while
    c.sim.blockOneWay(c.get('cyrene').system, c.get('athens').system);
    const joinAt = c.sim.now;
    c.start('delphi');
    const welcomed = () => trace.find((e) => e.kind === 'send' && e.messageType === 'membership.welcome');
    await c.sim.runUntil(() => welcomed() !== undefined, { timeoutMs: 10_000 });
    const welcome = welcomed()!;
    expect(welcome.time - joinAt).toBeGreaterThanOrEqual(2000);
    expect(welcome.time - joinAt).toBeLessThan(2500);
    c.sim.heal();
  });

  it('byzantium misses an update and catches up through its heartbeat', async () => {
    // pulls every minute: the heartbeat's version is what must bring byzantium up to date
    const c = new SimCluster({ seed: 13 }, { pullIntervalMs: 60_000 });
    for (const n of ['athens', 'byzantium', 'cyrene']) c.start(n);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene']));
    // byzantium hears from nobody for a moment (others would pass the news on too)
    c.sim.blockOneWay(c.get('athens').system, c.get('byzantium').system);
    c.sim.blockOneWay(c.get('cyrene').system, c.get('byzantium').system);
    c.start('delphi');
    const knowsDelphi = (n: string) =>
      c
        .get(n)
        .cluster.state()
        .membership?.members.some((m) => m.name === 'delphi') ?? false;
    await c.sim.runUntil(() => knowsDelphi('athens') && knowsDelphi('cyrene'));
    await c.sim.runFor(100);
    // the update to byzantium was lost; heal before any failure detector notices the cut
    expect(knowsDelphi('byzantium')).toBe(false);
    c.sim.heal();
    const took = await c.sim.runUntil(() => knowsDelphi('byzantium'), { timeoutMs: 5_000 });
    // well within one heartbeat round trip or two, long before the 2 s ack timeout re-broadcasts
    expect(took).toBeLessThan(500);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi']));
  });

  it('the coordinator crashes and the next oldest takes over in about a second', async () => {
    await forEachSeed([21, 22, 23], async (seed) => {
      const c = new SimCluster({ seed }, { downing: 'auto' });
      for (const n of ['athens', 'byzantium', 'cyrene', 'delphi']) {
        c.start(n);
        await c.sim.runFor(300);
      }
      await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi']));
      c.crash('athens');
      const took = await c.sim.runUntil(() => c.converged(['byzantium', 'cyrene', 'delphi']), {
        timeoutMs: 10_000,
      });
      expect(c.coordinatorOf('delphi')).toBe('byzantium');
      expect(took).toBeLessThan(2000);
      const failed = c
        .get('cyrene')
        .cluster.state()
        .membership!.failed.map((m) => m.name);
      expect(failed).toEqual(['athens']);
    });
  });

  it('the five-node split (athens, delphi, ephesus | byzantium, cyrene) yields two coordinators under auto', async () => {
    const c = new SimCluster({ seed: 31 }, { downing: 'auto' });
    const all = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];
    for (const n of all) {
      c.start(n);
      await c.sim.runFor(300);
    }
    await c.sim.runUntil(() => c.converged(all));
    const sideA = ['athens', 'delphi', 'ephesus'];
    const sideB = ['byzantium', 'cyrene'];
    c.split(sideA, sideB);
    await c.sim.runUntil(() => c.converged(sideA) && c.converged(sideB), { timeoutMs: 10_000 });
    expect(c.coordinatorOf('ephesus')).toBe('athens');
    expect(c.coordinatorOf('cyrene')).toBe('byzantium');
    expect(c.upMembers('athens')).toEqual([...sideA].sort());
    expect(c.upMembers('byzantium')).toEqual([...sideB].sort());
  });
});
