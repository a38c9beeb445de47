import { describe, expect, it } from 'vitest';
import type { ActorSystem } from '../../packages/core/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';

/**
 * "Cheap idle": once a cluster has converged and nothing happens, the membership machines
 * have (nearly) nothing to do. Before, the coordinator re-entered its state for the leader
 * actions every 100 ms and every member pulled from it every second: 10 + (N - 1) transitions a
 * second on the coordinator for no change at all. Now the leader actions run only while a member
 * is leaving, exiting or stuck joining, and the pull is a 5 s backstop behind the version every
 * heartbeat carries.
 */

const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];
const MEMBERSHIP = '/system/membership';

async function converged(seed: number) {
  const c = new SimCluster({ seed });
  for (const n of NAMES) {
    c.start(n);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(NAMES), { description: 'initial convergence' });
  // joins answered, every collector done: from here on nothing changes
  await c.sim.runFor(3000);
  return c;
}

/** Counts the events each listed node's membership machine takes (one snapshot per event). */
function countTransitions(c: SimCluster, names: readonly string[]) {
  const counts = Object.fromEntries(names.map((n) => [n, 0])) as Record<string, number>;
  const stops = names.map((n) => {
    const system: ActorSystem = c.get(n).system;
    return system.subscribeSnapshots(system.lookup(MEMBERSHIP)!, () => counts[n]!++);
  });
  return {
    counts,
    stop: () => {
      for (const stop of stops) stop();
    },
  };
}

describe('an idle, converged cluster', () => {
  it('costs the coordinator no leader actions and members pull only as a 5 s backstop', async () => {
    const c = await converged(71);
    expect(c.coordinatorOf('byzantium')).toBe('athens');
    const version = c.get('athens').cluster.state().membership!.version;
    const transitions = countTransitions(c, NAMES);
    const pulls: Record<string, number> = {};
    const others: string[] = [];
    const stopObserving = c.sim.network.observe((e) => {
      if (e.kind !== 'send' || e.path !== MEMBERSHIP) return;
      if (e.messageType === 'membership.pull') pulls[e.to] = (pulls[e.to] ?? 0) + 1;
      else others.push(`${e.messageType} ${e.from} → ${e.to}`);
    });
    await c.sim.runFor(10_000);
    transitions.stop();
    stopObserving();

    // each of the 4 members pulls twice in 10 s (was 10 times); nothing else reaches athens'
    // membership machine: no leader actions (were 100), no evaluation
    const athens = c.addressOf('athens');
    expect(others).toEqual([]);
    expect(pulls).toEqual({ [`${athens.host}:${athens.port}`]: 8 });
    expect(transitions.counts.athens).toBe(8);
    // a member: its own two backstop pulls (were 10)
    for (const n of NAMES.slice(1)) expect(transitions.counts[n]).toBe(2);
    expect(c.get('athens').cluster.state().membership!.version).toBe(version);
    expect(c.converged(NAMES)).toBe(true);
  });

  it('still leaves, joins and downs as fast as with a leader-actions tick', async () => {
    const c = await converged(72);
    // a member leaves: leaving → exiting → removed, one leader-actions interval apart
    const left = c.get('ephesus').cluster.leave();
    const leaveTook = await c.sim.runUntil(() => c.get('ephesus').cluster.state().status === 'removed', {
      timeoutMs: 5000,
    });
    await left;
    const four = NAMES.slice(0, 4);
    await c.sim.runUntil(() => c.converged(four));
    // 201 ms in this simulation, as with the 100 ms tick
    expect(leaveTook).toBeLessThanOrEqual(300);

    // the coordinator is idle again, no tick left running: in 2 s only the three members'
    // backstop pulls (at most one each) reach it (there were 26 events with the tick)
    await c.sim.runFor(1000);
    const quiet = countTransitions(c, ['athens']);
    await c.sim.runFor(2000);
    quiet.stop();
    expect(quiet.counts.athens).toBeLessThanOrEqual(3);

    // a new node joins and is up once everyone acknowledged
    c.start('fayum');
    const five = [...four, 'fayum'];
    const joinTook = await c.sim.runUntil(() => c.converged(five), { timeoutMs: 5000 });
    // ~5 ms, as before: the collector's acks make the joiner up, no tick involved
    expect(joinTook).toBeLessThan(500);

    // a crash: unreachable, then downed by keep-majority after stable-after (1.5 s at 5 nodes)
    c.crash('delphi');
    const rest = five.filter((n) => n !== 'delphi');
    const downTook = await c.sim.runUntil(() => c.converged(rest), { timeoutMs: 10_000 });
    // 2.69 s, as before: detection (~1 s) and stable-after
    expect(downTook).toBeLessThan(3000);
    expect(
      c
        .get('athens')
        .cluster.state()
        .membership!.failed.map((m) => m.name),
    ).toEqual(['delphi']);
  });
});
