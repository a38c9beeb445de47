import { describe, expect, it } from 'vitest';
import { type ClusterConfig, defaultClusterConfig } from '../../packages/cluster/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';
import { FIVE, fiveWithNotebook } from '../support/singleton-runs.js';

const addr = (name: string) => `10.0.0.${FIVE.indexOf(name) + 1}:2552`;
/** Member keys (`address#uid`) as sorted addresses. */
const addresses = (keys: string[] | undefined) => (keys ?? []).map((k) => k.split('#')[0]).sort();

interface Event {
  event?: string;
  node?: string;
  time: number;
  self?: boolean;
  by?: string;
  decision?: string;
  unreachable?: string[];
  reason?: string;
}

/**
 * A member crosses from one side of a partition to the other within the failure-detection window
 * (~1 s): the side it left still counts it when its stable-after ends, so both sides count it and
 * both "win". Each side downs the other; the side that lost it must then notice, when the member
 * finally turns unreachable, that counted with the members it just downed it is the minority, and
 * take itself out at once, before the real majority's down-removal margin ends. (Found by the
 * seeded keep-majority runs, seeds 40043, 40080, 40235, 40486, and static-quorum 40080; before,
 * the side that lost the member decided again on the shrunken membership, 2 > 1, and kept or
 * started the singleton beside the other side's.)
 */
/** The seeds' interleavings were found at a 1.5 s stable-after; the scenarios keep it (the seeded runs cover the default). */
const FOUND_AT = { ...defaultClusterConfig.sbr, stableAfterMs: 1500 };

describe('singleton when a member crosses sides within the detection window', () => {
  async function scenario(
    seed: number,
    config: Partial<ClusterConfig>,
    first: [string[], string[]],
    firstForMs: number,
    second: [string[], string[]],
  ) {
    const c = new SimCluster({ seed, captureLogs: true, logLevel: 'info' }, config);
    const nb = await fiveWithNotebook(c);
    const systems = (names: string[]) => names.map((n) => c.get(n).system);
    await c.sim.runFor(300);
    c.sim.partition(systems(first[0]), systems(first[1]));
    await c.sim.runFor(firstForMs);
    // the crossing: one member of the first side now only talks to the other
    c.sim.heal();
    c.sim.partition(systems(second[0]), systems(second[1]));
    await c.sim.runFor(6000);
    c.sim.heal();
    await c.sim.runFor(4000);
    const events = c.sim.logs.map((l) => JSON.parse(l) as Event);
    return { nb, events };
  }

  const decisions = (events: Event[], node: string) =>
    events.filter((e) => e.event === 'sbr.decision' && e.node === addr(node));
  const selfDown = (events: Event[], node: string) =>
    events.find((e) => e.event === 'member.downed' && e.node === addr(node) && e.self);

  it('keep-majority: delphi leaves athens and byzantium for cyrene and ephesus; their side steps down, and athens stops the notebook (its host lease lost) before cyrene starts it', async () => {
    const { nb, events } = await scenario(
      40043,
      { downing: 'keep-majority', sbr: FOUND_AT },
      [
        ['athens', 'byzantium', 'delphi'],
        ['cyrene', 'ephesus'],
      ],
      1567,
      [
        ['cyrene', 'delphi', 'ephesus'],
        ['athens', 'byzantium'],
      ],
    );
    // the scenario does what it says: athens decides counting delphi, who has already crossed...
    const wrong = decisions(events, 'athens')[0];
    expect(wrong).toMatchObject({ by: 'decider', decision: 'down-unreachable' });
    expect(addresses(wrong!.unreachable)).toEqual([addr('cyrene'), addr('ephesus')]);
    // ...and cyrene's side, where delphi is now, wins too
    const right = decisions(events, 'cyrene')[0];
    expect(right).toMatchObject({ by: 'decider', decision: 'down-unreachable' });
    expect(right!.time).toBeGreaterThan(wrong!.time);
    // athens's side goes as soon as delphi turns unreachable there: 2 here, 3 over there (whichever
    // of athens and byzantium finds out first tells the other)
    const recanted = [...decisions(events, 'athens'), ...decisions(events, 'byzantium')]
      .filter((d) => d.time > wrong!.time)
      .sort((a, b) => a.time - b.time)[0];
    expect(recanted).toMatchObject({ by: 'self', decision: 'down-reachable' });
    expect(recanted!.reason).toContain('downed lately counted over there');
    expect(recanted!.time - wrong!.time).toBeLessThan(1500);
    expect(selfDown(events, 'athens'), 'athens took itself out').toBeDefined();
    // the notebook moves with the majority's host lease, not with the downing: athens, left
    // with 2 of 5, stops it when its lease runs out; cyrene, granted by 3 of 5, starts it after
    const started = events.find((e) => e.event === 'singleton.started' && e.node === addr('cyrene'));
    expect(started, 'cyrene took over').toBeDefined();
    const stopped = events.find(
      (e) =>
        e.event === 'singleton.stopped' && e.node === addr('athens') && e.reason === 'lost the host lease',
    );
    expect(stopped, 'athens fenced itself').toBeDefined();
    expect(stopped!.time).toBeLessThan(started!.time);
    expect(nb.peak()).toBeLessThanOrEqual(1);
  }, 60_000);

  it('static-quorum 3: delphi and ephesus leave byzantium for athens; byzantium never runs the notebook beside athens', async () => {
    const { nb, events } = await scenario(
      40080,
      {
        downing: 'static-quorum',
        sbr: { ...FOUND_AT, quorumSize: 3, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
      },
      [
        ['byzantium', 'delphi', 'ephesus'],
        ['athens', 'cyrene'],
      ],
      1849,
      [['byzantium'], ['athens', 'cyrene', 'delphi', 'ephesus']],
    );
    // byzantium counts delphi and ephesus (3 >= quorum) and downs athens, the notebook's host
    const wrong = decisions(events, 'byzantium')[0];
    expect(wrong).toMatchObject({ by: 'decider', decision: 'down-unreachable' });
    expect(addresses(wrong!.unreachable)).toEqual([addr('athens'), addr('cyrene')]);
    // when they turn unreachable it is alone, counted with the two it downed: out, before its
    // down-removal margin would have let it start the notebook beside athens's
    const recanted = decisions(events, 'byzantium')[1];
    expect(recanted).toMatchObject({ by: 'self', decision: 'down-reachable' });
    expect(selfDown(events, 'byzantium')!.time).toBeLessThan(wrong!.time + 1500);
    // byzantium may host the notebook while it holds a majority's lease (3 of 5), and stops it
    // when that runs out, before athens's side starts it again
    const byzantiumStops = events.filter(
      (e) => e.event === 'singleton.stopped' && e.node === addr('byzantium'),
    );
    for (const start of events.filter(
      (e) => e.event === 'singleton.started' && e.node === addr('byzantium'),
    )) {
      const stop = byzantiumStops.find((e) => e.time >= start.time);
      const nextElsewhere = events.find(
        (e) => e.event === 'singleton.started' && e.node !== addr('byzantium') && e.time > start.time,
      );
      if (nextElsewhere)
        expect(stop && stop.time <= nextElsewhere.time, 'byzantium stopped first').toBe(true);
    }
    expect(nb.peak()).toBeLessThanOrEqual(1);
    expect(nb.running()).toBe(1);
  }, 60_000);
});
