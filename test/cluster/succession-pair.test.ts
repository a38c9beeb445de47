import { describe, expect, it } from 'vitest';
import { defaultStableAfterMs, heartbeatPeers } from '../../packages/cluster/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';

/**
 * When the coordinator crashes, its successor (the next oldest) decides for the survivors. It
 * monitors the coordinator itself, whatever the ring says, so its stable-after starts at its own
 * detection: with real processes on a loaded host an observer's report reached half the members
 * ~200 ms later.
 */
describe('the coordinator and its successor heartbeat each other', () => {
  it('30 nodes, coordinator crashed: the successor judges it first-hand and decides one stable-after later', async () => {
    const c = new SimCluster({ seed: 2, captureLogs: true }, { downing: 'keep-majority' });
    const all = Array.from({ length: 30 }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);
    for (const name of all) {
      c.start(name, ['n01']);
      await c.sim.runFor(150);
    }
    await c.sim.runUntil(() => c.converged(all), { timeoutMs: 60_000, description: 'convergence' });
    await c.sim.runFor(2000);
    const members = c.get('n30').cluster.state().membership!.members;
    const [coordinator, successor] = [...members].sort((a, b) => a.age - b.age);
    // positive control: on this ring the two are not neighbours, only the pairing makes them peers
    expect(heartbeatPeers(successor!, members).targets.map((t) => t.name)).not.toContain(coordinator!.name);

    const logsBefore = c.sim.logs.length;
    c.crash(coordinator!.name!);
    const survivors = all.filter((x) => x !== coordinator!.name);
    await c.sim.runUntil(() => survivors.every((x) => c.coordinatorOf(x) === successor!.name), {
      timeoutMs: 20_000,
      description: 'the survivors follow the successor',
    });
    const events = c.sim.logs.slice(logsBefore).map((l) => JSON.parse(l) as Record<string, unknown>);
    const successorAt = `${c.addressOf(successor!.name!).host}:${c.addressOf(successor!.name!).port}`;
    const ownVerdict = events.find(
      (e) =>
        e.event === 'fd.peer-unreachable' &&
        e.node === successorAt &&
        String(e.peer).startsWith(coordinator!.address),
    );
    expect(ownVerdict, 'the successor judged the coordinator with its own detector').toBeDefined();
    const decision = events.find((e) => e.event === 'sbr.decision')!;
    expect(decision.node).toBe(successorAt);
    const stableAfter = c.get(successor!.name!).cluster.config.sbr.stableAfterMs ?? defaultStableAfterMs(30);
    expect((decision.time as number) - (ownVerdict!.time as number)).toBeLessThanOrEqual(stableAfter + 20);
  });
});
