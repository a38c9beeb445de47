import { describe, expect, it } from 'vitest';
import { Receptionist } from '../../packages/cluster/src/index.js';
import { DEFERRED_ASK_MS } from '../../packages/cluster/src/receptionist/receptionist-decisions.js';
import { SimCluster } from '../support/sim-cluster.js';

// A node without registrations does not ask a younger member for its listing when it comes up:
// the younger one asks it (see DEFERRED_ASK_MS). Each pair of such nodes talked both ways before,
// which made every cluster a full mesh of connections. Only a listing that never came is asked for.
describe('receptionist: asks deferred to the younger member', () => {
  /** Listings sent from `from` to `to` (network sends), with their simulated time. */
  async function listingsBetween(options: { youngestRuns: boolean }) {
    const c = new SimCluster({ seed: 7 });
    const sent: { from: string; to: string; time: number }[] = [];
    c.sim.network.observe((e) => {
      if (e.kind === 'send' && e.messageType === 'receptionist.listing') sent.push(e);
    });
    const started: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      const node = c.start(name, ['a']);
      if (name !== 'c' || options.youngestRuns) Receptionist.start(node.system, node.cluster);
      started.push(name);
      await c.sim.runUntil(() => c.converged(started), { timeoutMs: 20_000 });
    }
    const upAt = c.sim.now;
    await c.sim.runFor(DEFERRED_ASK_MS + 1000);
    const at = (x: string) => `${c.addressOf(x).host}:${c.addressOf(x).port}`;
    c.sim.shutdown();
    return {
      aToC: sent.filter((e) => e.from === at('a') && e.to === at('c')).map((e) => e.time - upAt),
      cToA: sent.filter((e) => e.from === at('c') && e.to === at('a')).length,
    };
  }

  it('the younger one asks; the older, with nothing to tell, sends nothing back', async () => {
    const { aToC, cToA } = await listingsBetween({ youngestRuns: true });
    expect(cToA).toBeGreaterThan(0);
    expect(aToC).toEqual([]);
  }, 60_000);

  it('positive control: a younger member whose listing never comes is asked once the ask is due', async () => {
    const { aToC, cToA } = await listingsBetween({ youngestRuns: false });
    expect(cToA).toBe(0);
    expect(aToC.length).toBe(1);
  }, 60_000);
});
