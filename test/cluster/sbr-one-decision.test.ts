import { describe, expect, it } from 'vitest';
import { type ClusterConfig, heartbeatPeers } from '../../packages/cluster/src/index.js';
import { exitOnDown } from '../support/exit-on-down.js';
import { SimCluster } from '../support/sim-cluster.js';

/**
 * One decision, one side: when a side loses, every node of it is down within one second of the
 * decision, whatever the side's size, even though the decider downs itself too and (like a real
 * process that exits on being downed) may stop before its news leaves: here a node that goes
 * down loses every message still on the wire at once.
 */

const names = (n: number) => Array.from({ length: n }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);

async function cluster(n: number, seed: number, config: Partial<ClusterConfig>) {
  const c = new SimCluster({ seed, captureLogs: true }, config);
  const all = names(n);
  for (const name of all) {
    c.start(name, ['n01']);
    await c.sim.runFor(150);
  }
  await c.sim.runUntil(() => c.converged(all), { timeoutMs: 60_000, description: 'initial convergence' });
  return { c, all };
}

async function cut(
  n: number,
  seed: number,
  config: Partial<ClusterConfig>,
  losers: (all: string[]) => string[],
  options: { exit?: 'lose-in-flight' | 'flush'; lateLink?: { loser: string; ms: number } } = {},
) {
  const { c, all } = await cluster(n, seed, config);
  const losing = losers(all);
  const winning = all.filter((x) => !losing.includes(x));
  const { downAt, lost } = exitOnDown(c, all, options.exit);
  const logsBefore = c.sim.logs.length;
  c.sim.partition(
    winning.map((x) => c.get(x).system),
    losing.map((x) => c.get(x).system),
  );
  const late = options.lateLink;
  if (late) {
    // one link across the cut, between the loser and a winner it heartbeats, breaks later
    const members = c.get(late.loser).cluster.state().membership!.members;
    const self = members.find((m) => m.name === late.loser)!;
    const winner = heartbeatPeers(self, members).targets.find((t) => winning.includes(t.name))!.name;
    c.sim.healLink(c.get(late.loser).system, c.get(winner).system);
    c.sim.clock.setTimeout(
      () => c.sim.partition([c.get(late.loser).system], [c.get(winner).system]),
      late.ms,
    );
  }
  await c.sim.runUntil(() => losing.every((x) => downAt.has(x)), {
    timeoutMs: 30_000,
    description: 'the losing side is down',
  });
  await c.sim.runUntil(() => c.converged(winning), {
    timeoutMs: 30_000,
    description: 'the winners converge',
  });
  const losingAddresses = new Set(losing.map((x) => `${c.addressOf(x).host}:${c.addressOf(x).port}`));
  const decisions = c.sim.logs
    .slice(logsBefore)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.event === 'sbr.decision' && losingAddresses.has(e.node as string));
  const decidedAt = Math.min(...decisions.map((d) => d.time as number));
  const lastDown = Math.max(...losing.map((x) => downAt.get(x)!));
  return { c, decisions, decidedAt, lastDown, lost, downAt };
}

describe('one decision, one side: the losing side is down within a second of its decision', () => {
  it('keep-majority, 19 nodes cut 10 | 9, one link across breaking 1.5 s late: the first of the 9 to decide tells the rest, all down within 1 s', async () => {
    // n11, the 9's decider, still hears one of the 10 for a while, so its view settles later than its side's: without being
    // told, it would see its side-mates exit (a reachability change) and wait stable-after again.
    const r = await cut(19, 319, { downing: 'keep-majority' }, (all) => all.slice(10), {
      exit: 'flush',
      lateLink: { loser: 'n11', ms: 1500 },
    });
    expect(r.decisions.length).toBeGreaterThan(0);
    expect(r.decisions.every((d) => d.decision === 'down-reachable')).toBe(true);
    expect(r.lastDown - r.decidedAt).toBeLessThanOrEqual(1000);
    console.log(
      `keep-majority N=19, a late link: decision -> all 9 down in ${Math.round(r.lastDown - r.decidedAt)} ms (simulated)`,
    );
  }, 120_000);

  for (const n of [10, 25]) {
    it(`keep-oldest, ${n} nodes cut 2 | ${n - 2}: the ${n - 2} without the oldest are all down within decision + 1 s`, async () => {
      const r = await cut(n, 100 + n, { downing: 'keep-oldest' }, (all) => all.slice(2));
      expect(r.decisions.length).toBeGreaterThan(0);
      expect(r.decisions.every((d) => d.decision === 'down-reachable')).toBe(true);
      expect(r.lastDown - r.decidedAt).toBeLessThanOrEqual(1000);
      // positive control: the nodes that went down really lost what they still had on the wire
      expect(r.lost.updates).toBeGreaterThan(0);
      console.log(
        `keep-oldest N=${n}: decision -> all ${n - 2} down in ${Math.round(r.lastDown - r.decidedAt)} ms (simulated)`,
      );
    }, 180_000);

    const q = Math.floor(n / 2) + 1;
    const losers = n - Math.ceil(n * 0.6);
    it(`static-quorum ${q} of ${n}, cut ${n - losers} | ${losers}: the ${losers} are all down within decision + 1 s`, async () => {
      const r = await cut(
        n,
        200 + n,
        {
          downing: 'static-quorum',
          sbr: { quorumSize: q, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
        },
        (all) => all.slice(n - losers),
      );
      expect(r.decisions.every((d) => d.decision === 'down-reachable')).toBe(true);
      expect(r.lastDown - r.decidedAt).toBeLessThanOrEqual(1000);
      console.log(
        `static-quorum N=${n}: decision -> all ${losers} down in ${Math.round(r.lastDown - r.decidedAt)} ms (simulated)`,
      );
    }, 180_000);
  }
});

describe('a side cut off from the coordinator walks its heartbeat ring on', () => {
  it('keep-majority, 30 nodes with 4 observers each, the youngest 6 cut off: every seed, the 6 find enough of the 24 to know they lose, and go', async () => {
    // With few observers, some of the 24 are monitored by none of the 6. The 6 get no new
    // membership (their coordinator is over there), so their observers must walk on past the
    // targets they lost on their own; before they did, the 6 counted those members on their side,
    // thought themselves the majority, waited for a decider over there and never went down.
    const config: Partial<ClusterConfig> = {
      downing: 'keep-majority',
      heartbeatRing: { allToAllMax: 10, monitoredByNrOfMembers: 4 },
    };
    const late: number[] = [];
    for (const seed of [3, 7, 11, 19]) {
      const r = await cut(30, seed, config, (all) => all.slice(24), { exit: 'flush' });
      expect(r.decisions.every((d) => d.decision === 'down-reachable')).toBe(true);
      late.push(Math.round(r.lastDown - r.decidedAt));
    }
    console.log(`30 nodes, K = 4, 24 | 6: decision -> all 6 down in ${late.join(', ')} ms (simulated)`);
  }, 180_000);
});
