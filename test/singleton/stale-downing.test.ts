import { describe, expect, it } from 'vitest';
import { defaultClusterConfig } from '../../packages/cluster/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';
import { fiveWithNotebook } from '../support/singleton-runs.js';

/**
 * A member downs the oldest on a view that went stale while it stalled; by the time its word
 * arrives the oldest is back with everyone else, who follow it and never adopt that downing.
 * That member takes the singleton over after the down-removal margin, so the oldest must take
 * itself out as soon as it hears the word, although no one else says so (Akka: a down is final).
 * (Found by the seeded keep-oldest runs, seed 22218; before, the oldest kept running until most
 * members said it was down, and two instances ran.)
 */
describe('singleton when one member downed the oldest on a stale view', () => {
  async function scenario(seed: number) {
    // stable-after as when seed 22218 found it (1.5 s): the pauses below are timed to it
    const c = new SimCluster(
      { seed, captureLogs: true, logLevel: 'info' },
      { downing: 'keep-oldest', sbr: { ...defaultClusterConfig.sbr, stableAfterMs: 1500 } },
    );
    const nb = await fiveWithNotebook(c);
    await c.sim.runFor(300);
    // athens (oldest, running the notebook) stalls: everyone else finds it unreachable
    c.sim.pause(c.get('athens').system, 2355);
    await c.sim.runFor(2074);
    // byzantium stalls next: its resolver still decides on the old view (athens alone over there,
    // down-if-alone), while athens comes back and the others follow it again
    c.sim.pause(c.get('byzantium').system, 1745);
    await c.sim.runFor(8000);
    const events = c.sim.logs.map(
      (l) => JSON.parse(l) as { event?: string; node?: string; time: number; self?: boolean },
    );
    return { nb, events };
  }

  it('the oldest takes itself out on that one word, before the margin ends; at most one instance throughout', async () => {
    const { nb, events } = await scenario(22218);
    const athens = '10.0.0.1:2552';
    const byzantium = '10.0.0.2:2552';
    // the scenario does what it says: byzantium downs athens on its own...
    const decision = events.find((e) => e.event === 'sbr.decision' && e.node === byzantium);
    expect(decision, 'byzantium decided').toBeDefined();
    // ...nobody else does...
    const others = events.filter((e) => e.event === 'sbr.decision' && e.time <= decision!.time + 1500);
    expect(others.map((e) => e.node)).toEqual([byzantium]);
    // ...athens hears it, takes itself out, and only then does byzantium start the notebook
    const out = events.find((e) => e.event === 'member.downed' && e.node === athens && e.self);
    const started = events.find(
      (e) => e.event === 'singleton.started' && e.node === byzantium && e.time > decision!.time,
    );
    expect(out, 'athens took itself out').toBeDefined();
    expect(started, 'byzantium took over').toBeDefined();
    expect(out!.time).toBeLessThan(started!.time);
    expect(nb.peak()).toBeLessThanOrEqual(1);
    expect(nb.running()).toBe(1);
  }, 60_000);
});
