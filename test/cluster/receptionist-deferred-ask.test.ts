import { describe, expect, it } from 'vitest';
import { Receptionist } from '../../packages/cluster/src/index.js';
import {
  DEFERRED_ASK_MS,
  MAX_LISTING_SENDS,
} from '../../packages/cluster/src/receptionist/receptionist-decisions.js';
import { Inbox, inbox } from '../support/inbox-service.js';
import { SimCluster } from '../support/sim-cluster.js';

// Only a node with registrations sends its listing when a member comes up: an empty listing is
// the same as none, so nodes with nothing registered never talk (each pair used to, the younger
// asking the older: a connection and a handshake for each of the n(n-1)/2 pairs). Every asked
// member answers, even with nothing; a sent listing whose answer does not come is sent again.
describe('receptionist: only nodes with registrations send listings', () => {
  /** Listings sent between the nodes a, b, c (network sends), with their simulated time. */
  async function listingsBetween(options: { aRegisters: boolean; youngestRuns: boolean }) {
    const c = new SimCluster({ seed: 7 });
    const sent: { from: string; to: string; time: number }[] = [];
    c.sim.network.observe((e) => {
      if (e.kind === 'send' && e.messageType === 'receptionist.listing') sent.push(e);
    });
    const started: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      const node = c.start(name, ['a']);
      if (name !== 'c' || options.youngestRuns) {
        const receptionist = Receptionist.start(node.system, node.cluster);
        if (name === 'a' && options.aRegisters) {
          const ref = node.system.spawn(inbox, { name: 'inbox', inputFrom: ({ self }) => ({ at: self.id }) });
          receptionist.register(Inbox, ref);
        }
      }
      started.push(name);
      await c.sim.runUntil(() => c.converged(started), { timeoutMs: 20_000 });
    }
    const upAt = c.sim.now;
    await c.sim.runFor(MAX_LISTING_SENDS * DEFERRED_ASK_MS + 1000);
    const at = (x: string) => `${c.addressOf(x).host}:${c.addressOf(x).port}`;
    c.sim.shutdown();
    return {
      all: sent.length,
      aToC: sent.filter((e) => e.from === at('a') && e.to === at('c')).map((e) => e.time - upAt),
      cToA: sent.filter((e) => e.from === at('c') && e.to === at('a')).length,
    };
  }

  it('nodes with nothing registered send no listing at all', async () => {
    const { all } = await listingsBetween({ aRegisters: false, youngestRuns: true });
    expect(all).toBe(0);
  }, 60_000);

  it('positive control: a node with a registration sends it to each member that comes up, which answers', async () => {
    const { aToC, cToA } = await listingsBetween({ aRegisters: true, youngestRuns: true });
    // answered (with c's empty listing): not sent again
    expect(aToC.length).toBe(1);
    expect(cToA).toBe(1);
  }, 60_000);

  it('a listing whose answer never comes is sent again at each ask-due, a bounded number of times', async () => {
    const { aToC } = await listingsBetween({ aRegisters: true, youngestRuns: false });
    expect(aToC.length).toBe(MAX_LISTING_SENDS);
    // (sends are timed as the network takes them: the first can leave a few ms after its decision)
    expect(aToC[1]! - aToC[0]!).toBeGreaterThan(DEFERRED_ASK_MS - 100);
  }, 60_000);
});
