import { describe, expect, it } from 'vitest';
import {
  decide,
  type Heard,
  type KeeperContext,
  type KeeperEffect,
  type PartitionState,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import { type Decide, type FaultKind, type KeeperSimResult, simulateKeepers } from '../support/keeper-sim.js';

/**
 * The partition keeper's safety as seeded simulations of its pure decisions (test/support/
 * keeper-sim.ts): N keepers with a model of their regions, FIFO connections with their own delays
 * (so messages on different connections reorder), tables adopted at different times and out of
 * order, an owner-lease oracle with the documented timing, and per kind: planned moves alone
 * (joins, graceful leaves, rebalances), plus crashes, plus pauses within the pause bound, plus
 * partitions (the cut-off side downed once fenced), plus a hand-off held in flight while its
 * sender crashes and the partition moves away and back, plus three kinds of LOST messages (a
 * connection reset drops what it had in flight, both ways, FIFO otherwise, and nothing tells the
 * keepers): random resets; the first hand-off after 300 ms lost, the partition then moving on to a
 * third node (the querier is not the receiver); drain markers to draining nodes lost. In one run
 * in two hand-offs travel in parts (one entry each), so resets also cut cargos. After EVERY step: at most one live node
 * has a partition active; no message delivered twice; per sender, messages delivered in the order
 * sent. At the end of a run: every partition active at exactly one node; with planned moves alone
 * (and resets), every message delivered that no reset dropped, and each entity's state moved with it. One run in three allows a single
 * drain at a time (`maxConcurrentHandOffs` 1), so moves queue and tables overtake them. In runs
 * of even seeds the keepers gather hand-offs arriving back to back into one step, as the machine
 * does (hand-off-gather.ts).
 *
 * Each positive control turns one defence off and shows the same checker catches it.
 */

const RUNS = 500;
/** Per kind, if one ever needs fewer seeds for the suite's time budget (none does: ~1-3 s per 500). */
const RUNS_OF: Partial<Record<FaultKind, number>> = {};
const runsOf = (kind: FaultKind) => RUNS_OF[kind] ?? RUNS;
/** One run in three with one drain at a time: moves queue behind each other. */
const capOf = (seed: number) => (seed % 3 === 0 ? 1 : 16);
const KINDS: readonly FaultKind[] = [
  'moves',
  'crash',
  'pause',
  'partition',
  'handoff-crash',
  'reset',
  'handoff-lost',
  'marker-lost',
];

interface Totals {
  lostMessages: number;
  lostHandOffs: number;
  lostMarkers: number;
  takenBack: number;
}

function runMany(
  kind: FaultKind,
  decideWith?: Decide,
): { failures: KeeperSimResult[]; figures: string; totals: Totals; batches: number } {
  const started = performance.now();
  const failures: KeeperSimResult[] = [];
  const totals: Totals = { lostMessages: 0, lostHandOffs: 0, lostMarkers: 0, takenBack: 0 };
  let steps = 0;
  let sent = 0;
  let created = 0;
  let handOffs = 0;
  let batches = 0;
  let voided = 0;
  for (let seed = 1; seed <= runsOf(kind); seed++) {
    const r = simulateKeepers({ seed, kind, decide: decideWith, maxConcurrentHandOffs: capOf(seed) });
    totals.lostMessages += r.lostMessages;
    totals.lostHandOffs += r.lostHandOffs;
    totals.lostMarkers += r.lostMarkers;
    totals.takenBack += r.takenBack;
    steps += r.steps;
    sent += r.sent;
    created += r.created;
    handOffs += r.handOffs;
    batches += r.batches;
    voided += r.voided;
    if (r.violation) failures.push(r);
  }
  const ms = Math.round(performance.now() - started);
  return {
    failures,
    totals,
    batches,
    figures:
      `${kind}: ${runsOf(kind)} runs in ${ms} ms, ${steps} steps, ${sent} messages, ${handOffs} hand-offs (${batches} steps took several at once), ${created} tokens created, ${voided} void tokens kept dormant` +
      (totals.lostHandOffs + totals.lostMarkers + totals.lostMessages > 0
        ? `; lost in resets: ${totals.lostHandOffs} hand-offs (or parts), ${totals.lostMarkers} markers, ${totals.lostMessages} entity messages; ${totals.takenBack} hand-offs taken back`
        : ''),
  };
}

/** The first seed (of RUNS) whose run breaks the invariant the way `expected` says. */
function expectCaught(name: string, kind: FaultKind, decideWith: Decide, expected: RegExp): void {
  for (let seed = 1; seed <= runsOf(kind); seed++) {
    const r = simulateKeepers({ seed, kind, decide: decideWith, maxConcurrentHandOffs: capOf(seed) });
    if (r.violation === null) continue;
    console.log(
      `[positive control ${name}] caught at ${kind} seed ${seed}: ${r.violation}\n  plan: ${r.plan.join('; ')}`,
    );
    expect(r.violation).toMatch(expected);
    return;
  }
  expect.fail(`positive control ${name}: not caught in ${runsOf(kind)} ${kind} runs`);
}

describe('partition keeper: seeded simulations, the invariant checked after every step', () => {
  for (const kind of KINDS) {
    it(`keeps at most one active node per partition, no duplicate, per-sender order (${kind}, ${runsOf(kind)} runs)`, () => {
      const { failures, figures, totals, batches } = runMany(kind);
      console.log(figures);
      // the gathered path was taken (runs of even seeds gather hand-offs arriving back to back)
      if (kind === 'moves') expect(batches).toBeGreaterThan(0);
      // the faults were reached: the runs did lose what their kind says
      if (kind === 'reset') expect(totals.lostMessages).toBeGreaterThan(0);
      if (kind === 'handoff-lost') {
        expect(totals.lostHandOffs).toBeGreaterThan(runsOf(kind) / 2);
        expect(totals.takenBack).toBeGreaterThan(runsOf(kind) / 2);
      }
      if (kind === 'marker-lost') expect(totals.lostMarkers).toBeGreaterThan(runsOf(kind));
      const first = failures[0];
      expect(
        failures.length,
        first && `seed ${first.seed}: ${first.violation}\n  plan: ${first.plan.join('; ')}`,
      ).toBe(0);
    }, 120_000);
  }
});

// ---- the positive controls: one defence off each -------------------------------------------------

const withParts = (
  ctx: KeeperContext,
  f: (p: number, s: PartitionState) => PartitionState,
): KeeperContext => {
  const parts: Record<number, PartitionState> = {};
  for (const [k, v] of Object.entries(ctx.parts)) parts[Number(k)] = f(Number(k), v);
  return { ...ctx, parts };
};
const NOTHING: Heard = { seen: null, handed: null, dormant: null };

/** A querier that creates as soon as it asks: every member counted as having renounced. */
const skipRenounceWait: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    withParts(ctx, (_, s) =>
      s.query === null
        ? s
        : {
            ...s,
            query: {
              ...s.query,
              heard: Object.fromEntries(
                [...ctx.reachable, ...ctx.absent].map((k) => [k, s.query!.heard[k] ?? NOTHING]),
              ),
            },
          },
    ),
    event,
    now,
  );

/** An old owner that hands off once its region drained, without every sender's drain marker. */
const skipMarkerWait: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    {
      ...ctx,
      markers: Object.fromEntries([...ctx.reachable, ...ctx.absent].map((k) => [k, Number.MAX_SAFE_INTEGER])),
    },
    event,
    now,
  );

/** A member that forgets its renounce when a token arrives: a void token counts as live. */
const acceptVoidToken: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    event.type === 'sharding.hand-off'
      ? withParts(ctx, (p, s) =>
          p === event.partition ? { ...s, renounced: null, voidBelow: null, withdrawable: [] } : s,
        )
      : ctx,
    event,
    now,
  );

/** A node that adopts a table older than its newest one (as if it were newer). */
const actOnOlderTable: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    ctx,
    event.type === 'keeper.table' && ctx.table !== null && event.table.version <= ctx.table.version
      ? { ...event, table: { ...event.table, version: ctx.table.version + 1 } }
      : event,
    now,
  );

/** A querier that does not follow the token's chain: a hand-off in flight is taken for lost. */
const noChainCheck: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    withParts(ctx, (_, s) => ({
      ...s,
      handed: null,
      query:
        s.query === null
          ? null
          : {
              ...s.query,
              heard: Object.fromEntries(
                Object.entries(s.query.heard).map(([k, h]) => [k, { ...h, handed: null }]),
              ),
            },
    })),
    event,
    now,
  );

/** A node that runs its partitions whether it holds its owner lease or not. */
const ignoreLease: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    { ...ctx, lease: true },
    event.type === 'keeper.lease' ? { type: 'keeper.tick' } : event,
    now,
  );

/** A sender that never probes its hand-offs: one lost in a reset is never taken back. */
const noHandOffProbe: Decide = (policy, ctx, event, now) =>
  decide(
    policy,
    withParts(ctx, (_, s) => ({ ...s, awaiting: null })),
    event,
    now,
  );

/** A node that never asks again for a drain marker it waits for. */
const noMarkerRequest: Decide = (policy, ctx, event, now) => {
  const step = decide(policy, ctx, event, now);
  return {
    ...step,
    effects: step.effects.filter((e) => !(e.kind === 'send' && e.message.type === 'sharding.marker-request')),
  };
};

/**
 * A querier that withdraws the query it CREATED from: its renounces stop binding, so a token of
 * an older epoch (a crashed sender's hand-off still on the way) activates beside the new one.
 */
const withdrawAfterCreating: Decide = (policy, ctx, event, now) => {
  const step = decide(policy, ctx, event, now);
  const withdraws: KeeperEffect[] = [];
  for (const e of step.effects) {
    if (e.kind !== 'log' || e.event !== 'sharding.token-created') continue;
    const { partition, version, round } = e.fields as { partition: number; version: number; round: number };
    for (const to of step.context.reachable)
      withdraws.push({
        kind: 'send',
        to,
        message: {
          type: 'sharding.token-withdraw',
          from: policy.selfKey,
          version,
          round,
          partitions: [partition],
        },
      });
  }
  return { ...step, effects: [...step.effects, ...withdraws] };
};

const OVERLAP = /active at \d+ and \d+/;

describe('partition keeper: positive controls (each defence off is caught)', () => {
  it('skipping the renounce wait: two nodes active at once', () => {
    expectCaught('skip renounce wait', 'moves', skipRenounceWait, OVERLAP);
  });

  it('withdrawing the renounces of a query that created: the stale token activates beside the recreated one', () => {
    expectCaught('withdraw after creating', 'handoff-crash', withdrawAfterCreating, OVERLAP);
  });

  it('skipping the drain-marker wait: a sender’s messages delivered out of order', () => {
    expectCaught('skip marker wait', 'moves', skipMarkerWait, /delivered after/);
  });

  it('accepting a void token: the stale token of a crashed sender activates beside the recreated one', () => {
    expectCaught('accept void token', 'handoff-crash', acceptVoidToken, OVERLAP);
  });

  it('acting on an older table: partitions stranded, messages undelivered', () => {
    expectCaught('act on older table', 'moves', actOnOlderTable, /not delivered|active at 0 nodes/);
  });

  it('no chain check: a planned move loses the cargo still in flight', () => {
    expectCaught('no chain check', 'moves', noChainCheck, /did not move|not delivered/);
  });

  it('ignoring the owner lease: a downed minority node stays active beside the new owner', () => {
    expectCaught('ignore lease', 'partition', ignoreLease, OVERLAP);
  });

  it('no hand-off probe: a hand-off lost in a reset leaves the third node waiting forever', () => {
    expectCaught('no hand-off probe', 'handoff-lost', noHandOffProbe, /active at 0 nodes|not delivered/);
  });

  it('no marker request: a drain whose marker was lost in a reset never hands off', () => {
    expectCaught('no marker request', 'marker-lost', noMarkerRequest, /active at 0 nodes|not delivered/);
  });
});
