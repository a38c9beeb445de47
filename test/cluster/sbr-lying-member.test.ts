import { describe, expect, it } from 'vitest';
import {
  initialDowningContext,
  isDecider,
  take,
} from '../../packages/cluster/src/downing/downing-decisions.js';
import type { DowningEvent } from '../../packages/cluster/src/downing/downing-messages.js';
import {
  type ClusterConfig,
  convergedHere,
  indirectlyConnected,
  resolve,
  type SbrInput,
  type SbrMember,
} from '../../packages/cluster/src/index.js';
import { type Message, nodeKey } from '../../packages/core/src/index.js';
import { contextWith, envOf, grown, key as memberKeyOf } from '../support/member-fixtures.js';
import { formedSimCluster, GREEK, type SimCluster } from '../support/sim-cluster.js';

/**
 * One member reports others unreachable while everyone else hears them fine (issue 25, item 4).
 * The report is its word against the rest: the resolver takes it as Akka's indirectly connected
 * case within stable-after and downs the liar, and joins are not held up by it meanwhile.
 *
 * Which members go: Akka downs both ends of every contradicted report. Here the fewest members
 * covering the contradicted reports go (the observer on a tie): one member reporting several
 * goes alone, so a liar cannot take the members it names down with it (with Akka's rule, a liar
 * naming every member but the decider downs the whole cluster).
 */

const k = (i: number) => `10.0.0.${i}:2552#u${i}`;
const members = (n: number): SbrMember[] =>
  Array.from({ length: n }, (_, i) => ({
    key: k(i + 1),
    address: `10.0.0.${i + 1}:2552`,
    age: i + 1,
    status: 'up' as const,
    roles: [],
  }));

/** Member 1 decides; it reaches `reached` with its own detector. */
function input(observations: Record<number, number[]>, reached: number[]): SbrInput {
  return {
    members: members(5),
    observations: Object.fromEntries(Object.entries(observations).map(([s, o]) => [k(Number(s)), o.map(k)])),
    selfKey: k(1),
    ownReachable: new Set(reached.map(k)),
  };
}

const EVERYONE = [2, 3, 4, 5];

describe('a lying member, as the resolver decides it (pure)', () => {
  const table: {
    name: string;
    observations: Record<number, number[]>;
    reached: number[];
    decision: string;
    down: number[];
    reason: string;
  }[] = [
    {
      name: '5 reports 2 and 3, whom everyone else reaches: 5 goes alone',
      observations: { 2: [5], 3: [5] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [5],
      reason: 'only indirectly connected members',
    },
    {
      name: '5 reports the decider itself and 2: the decider still decides, 5 goes',
      observations: { 1: [5], 2: [5] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [5],
      reason: 'only indirectly connected members',
    },
    {
      name: '5 reports every other member: 5 goes, nobody else (Akka would down all five)',
      observations: { 1: [5], 2: [5], 3: [5], 4: [5] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [5],
      reason: 'only indirectly connected members',
    },
    {
      name: 'three observers report 2, whom only the decider reaches: 2 goes, not its three observers',
      observations: { 2: [3, 4, 5] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [2],
      reason: 'only indirectly connected members',
    },
    {
      name: 'one contradicted report: its observer goes, the subject stays',
      observations: { 5: [3] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [3],
      reason: 'only indirectly connected members',
    },
    {
      name: 'a broken link (both ends report each other): both ends go, as in Akka',
      observations: { 4: [5], 5: [4] },
      reached: EVERYONE,
      decision: 'down-indirectly-connected',
      down: [4, 5],
      reason: 'only indirectly connected members',
    },
    {
      name: 'a liar and a crash: the liar is set aside, keep-majority downs the crashed 4 with it',
      observations: { 2: [5], 3: [5], 4: [1, 2, 3, 5] },
      reached: [2, 3, 5],
      decision: 'down-unreachable',
      down: [4, 5],
      reason: 'majority 3 > 1',
    },
    {
      // positive control: the same reports, not contradicted by this node's own detector, are
      // believed. The liar's reports are what reach the resolver; only the contradiction spares 2 and 3.
      name: 'control: the same reports about members this node does not reach are believed',
      observations: { 2: [5], 3: [5] },
      reached: [4, 5],
      decision: 'down-unreachable',
      down: [2, 3],
      reason: 'majority 3 > 2',
    },
  ];

  it.each(table)('$name', ({ observations, reached, decision, down, reason }) => {
    const r = resolve({ strategy: 'keep-majority' }, input(observations, reached));
    expect(r.decision).toBe(decision);
    expect([...r.down].sort()).toEqual(down.map(k).sort());
    expect(r.reason).toBe(reason);
  });

  it('the indirectly connected set names the liar (and the decider is never among its own subjects)', () => {
    expect(indirectlyConnected({ [k(1)]: [k(5)], [k(2)]: [k(5)] }, k(1), new Set(EVERYONE.map(k)))).toEqual(
      new Set([k(5)]),
    );
  });

  it('the decider a liar reports is still the decider: before, it counted itself unreachable and nobody decided', () => {
    const all = members(5);
    const view: DowningEvent = {
      type: 'sbr.view',
      selfKey: k(1),
      version: 2,
      members: all,
      observations: { [k(1)]: [k(5)], [k(2)]: [k(5)] },
    };
    const reach: DowningEvent = { type: 'sbr.own-reachability', reachable: EVERYONE.map(k) };
    const ctx = take(take(initialDowningContext, reach), view);
    expect(isDecider(ctx)).toBe(true);
    // a member that is not the oldest waits for the decider, which now decides
    const reachFrom2: DowningEvent = { type: 'sbr.own-reachability', reachable: [1, 3, 4, 5].map(k) };
    const other = take(take(initialDowningContext, reachFrom2), { ...view, selfKey: k(2) });
    expect(isDecider(other)).toBe(false);
  });
});

describe('joins under a liar: convergence as the coordinator judges it (pure)', () => {
  const env = envOf(1);
  const ctx = contextWith(grown(5));
  it('reports the coordinator contradicts (it monitors the subjects and reaches them) do not hold joiners', () => {
    const liar = { [memberKeyOf(2)]: [memberKeyOf(5)], [memberKeyOf(3)]: [memberKeyOf(5)] };
    expect(convergedHere(env, { ...ctx, observations: liar })).toBe(true);
    // the coordinator itself reported by the liar: it reaches itself
    expect(convergedHere(env, { ...ctx, observations: { [memberKeyOf(1)]: [memberKeyOf(5)] } })).toBe(true);
  });
  it('control: a member the coordinator itself finds unreachable still holds joiners', () => {
    const own = { [memberKeyOf(2)]: [memberKeyOf(1), memberKeyOf(5)] };
    expect(convergedHere(env, { ...ctx, observations: own })).toBe(false);
  });
});

// ---- on a simulated network ------------------------------------------------------------------

const FIVE = GREEK.slice(0, 5) as unknown as string[];
const STABLE_AFTER = 1500;
/** Decisions wait for stable-after; one report hop and the decider's turn come on top. */
const MARGIN = 500;

const five = (seed: number, config: Partial<ClusterConfig> = {}) =>
  formedSimCluster(FIVE, { seed, captureLogs: true }, config);

const keyOf = (c: SimCluster, n: string) => nodeKey(c.get(n).cluster.state().self!);
const status = (c: SimCluster, n: string) => c.get(n).cluster.state().status;
const unreachableIn = (c: SimCluster, at: string) => c.get(at).cluster.state().membership!.unreachable;

/** `liar`'s own membership is told its detector found `subjects` unreachable: it reports them as a member does. */
function lie(c: SimCluster, liar: string, subjects: string[]): void {
  c.get(liar)
    .system.lookup('/system/membership')!
    .send({
      type: 'fd.reachability',
      changes: subjects.map((s) => ({ subject: keyOf(c, s), reachable: false })),
    } as Message);
}

/** A rogue that tells every member, the subjects included, in its own name over the network. */
function lieToAll(c: SimCluster, liar: string, subjects: string[]): void {
  const from = c.get(liar).system;
  const report = {
    type: 'membership.reachability',
    observer: keyOf(c, liar),
    changes: subjects.map((s) => ({ subject: keyOf(c, s), reachable: false })),
  } as Message;
  for (const n of FIVE)
    if (n !== liar) from.remoteRef(c.get(n).system.node, '/system/membership').send(report);
}

describe('a lying member on a simulated network', () => {
  it('one member lies about two others: within stable-after the liar is downed, the honest four stay up', async () => {
    const c = await five(41);
    const liarKey = keyOf(c, 'ephesus');
    const start = c.sim.now;
    lie(c, 'ephesus', ['byzantium', 'cyrene']);
    // positive control: the lie reaches the views (the coordinator records both as unreachable)
    await c.sim.runUntil(
      () => ['byzantium', 'cyrene'].every((n) => unreachableIn(c, 'athens').includes(keyOf(c, n))),
      { timeoutMs: 500, description: 'the lie in the membership' },
    );
    await c.sim.runUntil(
      () => c.get('delphi').cluster.unreachableObservers()[keyOf(c, 'byzantium')]?.[0] === liarKey,
      { timeoutMs: 500, description: "the lie in another member's view" },
    );
    await c.sim.runUntil(() => status(c, 'ephesus') === 'down', {
      timeoutMs: STABLE_AFTER + MARGIN,
      description: 'the liar downed',
    });
    const decisions = c.sim.logEntries('sbr.decision');
    expect(decisions.map((d) => [d.node, d.by, d.decision, d.down, d.reason])).toEqual([
      [
        '10.0.0.1:2552',
        'decider',
        'down-indirectly-connected',
        [liarKey],
        'only indirectly connected members',
      ],
    ]);
    expect((decisions[0]!.time as number) - start).toBeLessThanOrEqual(STABLE_AFTER + MARGIN);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi']), { timeoutMs: 2000 });
    expect(unreachableIn(c, 'athens')).toEqual([]);
  });

  it('a rogue tells the coordinator itself that it is unreachable: it still decides (before: no decision, joins held)', async () => {
    const c = await five(42);
    const start = c.sim.now;
    lieToAll(c, 'ephesus', ['athens', 'byzantium']);
    // positive control: the coordinator holds the report about itself
    await c.sim.runUntil(
      () => c.get('athens').cluster.unreachableObservers()[keyOf(c, 'athens')]?.length === 1,
      { timeoutMs: 500, description: 'the lie about the coordinator held by the coordinator' },
    );
    await c.sim.runUntil(() => status(c, 'ephesus') === 'down', {
      timeoutMs: STABLE_AFTER + MARGIN,
      description: 'the liar downed',
    });
    expect(c.sim.now - start).toBeLessThanOrEqual(STABLE_AFTER + MARGIN);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi']), { timeoutMs: 2000 });
  });

  it('a node joining while the lie stands becomes up before the decision; the decision follows', async () => {
    // a longer stable-after leaves the join room to finish while the lie stands
    const stableAfterMs = 4000;
    const c = await five(43, {
      sbr: { stableAfterMs, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
    });
    const liarKey = keyOf(c, 'ephesus');
    lie(c, 'ephesus', ['byzantium', 'cyrene']);
    await c.sim.runFor(50);
    c.start('fayum');
    await c.sim.runUntil(() => c.upMembers('athens').includes('fayum'), {
      timeoutMs: stableAfterMs,
      description: 'fayum up',
    });
    const upAt = c.sim.now;
    // the lie still stands and the liar is still a member: joins did not wait for the resolver
    expect(status(c, 'ephesus')).toBe('up');
    expect(c.get('athens').cluster.unreachableObservers()[keyOf(c, 'byzantium')]).toEqual([liarKey]);
    expect(c.sim.logEntries('sbr.decision')).toEqual([]);
    // an up restarts stable-after (Akka's rule): the decision comes stable-after after it
    await c.sim.runUntil(() => status(c, 'ephesus') === 'down', {
      timeoutMs: stableAfterMs + MARGIN,
      description: 'the liar downed',
    });
    expect(c.sim.now - upAt).toBeLessThanOrEqual(stableAfterMs + MARGIN);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium', 'cyrene', 'delphi', 'fayum']), {
      timeoutMs: 2000,
    });
  });
});
