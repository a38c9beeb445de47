import { describe, expect, it } from 'vitest';
import {
  decide,
  initialKeeperContext,
  type KeeperContext,
  type KeeperEffect,
  type KeeperEvent,
  type KeeperPolicy,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import { emptyAnswer } from '../support/keeper-events.js';

/**
 * Issue 29, the rolling restart's p99: a joining node activates the partitions handed to it only
 * once it holds its owner lease, and it bid for the lease only with its first table, which came
 * 22–120 ms after its view; the lease came 65–230 ms after that (a round of voters busy with the
 * join's table). It now bids with its first view. The lease alone activates nothing: that still
 * needs a table naming it owner and the partition's token.
 */

const N = '10.0.0.1:2552#new';
const A = '10.0.0.2:2552#a';
const B = '10.0.0.3:2552#b';
const policy: KeeperPolicy = { selfKey: N, partitionCount: 1, maxConcurrentHandOffs: 16, retryMs: 100 };

function run(
  events: KeeperEvent[],
  using: KeeperPolicy = policy,
): { ctx: KeeperContext; effects: KeeperEffect[][] } {
  let ctx: KeeperContext = initialKeeperContext;
  const effects: KeeperEffect[][] = [];
  for (const e of events) {
    const step = decide(using, ctx, e, 0);
    ctx = step.context;
    effects.push([...step.effects]);
  }
  return { ctx, effects };
}

const wants = (effects: readonly KeeperEffect[]) => effects.filter((e) => e.kind === 'want-own-lease');
const activates = (effects: readonly KeeperEffect[][]) => effects.flat().filter((e) => e.kind === 'activate');

describe('a node without a table bids for its owner lease with its first view', () => {
  it('bids once, with the first view that has other members, before any table', () => {
    const { effects } = run([
      { type: 'keeper.membership', reachable: [A], absent: [] },
      { type: 'keeper.membership', reachable: [A, B], absent: [] },
    ]);
    expect(wants(effects[0]!)).toEqual([{ kind: 'want-own-lease', active: true }]);
    expect(wants(effects[1]!)).toEqual([]);
  });

  it('a first member (an empty first view) bids with its first table, as before', () => {
    const { effects } = run([
      { type: 'keeper.membership', reachable: [], absent: [] },
      { type: 'keeper.table', table: { version: 1, owners: [N] } },
    ]);
    expect(effects[0]!).toEqual([]);
    expect(wants(effects[1]!)).toEqual([{ kind: 'want-own-lease', active: true }]);
  });

  it('with a table, a view change never bids again (the lease is the keeper’s, not the view’s)', () => {
    const { effects } = run([
      { type: 'keeper.membership', reachable: [], absent: [] },
      { type: 'keeper.table', table: { version: 1, owners: [N] } },
      { type: 'keeper.membership', reachable: [A], absent: [] },
    ]);
    expect(wants(effects[2]!)).toEqual([]);
  });
});

describe('a node without the partitions role bids for no owner lease', () => {
  const proxy: KeeperPolicy = { ...policy, mayOwn: false };

  it('neither with its first view nor with tables naming other owners', () => {
    const events: KeeperEvent[] = [
      { type: 'keeper.membership', reachable: [A], absent: [] },
      { type: 'keeper.table', table: { version: 1, owners: [A] } },
      { type: 'keeper.membership', reachable: [A, B], absent: [] },
      { type: 'keeper.table', table: { version: 2, owners: [B] } },
    ];
    expect(run(events, proxy).effects.flatMap(wants)).toEqual([]);
    // positive control: the same events bid on a node that may own (with its view and its table)
    expect(run(events).effects.flatMap(wants)).toContainEqual({ kind: 'want-own-lease', active: true });
  });

  it('a table naming it owner all the same (another member’s partitions.role): it bids, once, and says so', () => {
    const step1 = decide(
      proxy,
      initialKeeperContext,
      { type: 'keeper.table', table: { version: 1, owners: [A] } },
      0,
    );
    const step2 = decide(
      proxy,
      step1.context,
      { type: 'keeper.table', table: { version: 2, owners: [N] } },
      0,
    );
    const step3 = decide(
      proxy,
      step2.context,
      { type: 'keeper.table', table: { version: 3, owners: [N] } },
      0,
    );
    expect(wants(step1.effects)).toEqual([]);
    expect(wants(step2.effects)).toEqual([{ kind: 'want-own-lease', active: true }]);
    expect(step2.effects.some((e) => e.kind === 'log' && e.event === 'sharding.owner-without-role')).toBe(
      true,
    );
    expect(wants(step3.effects)).toEqual([]);
  });
});

describe('the lease held early activates nothing by itself', () => {
  const early: KeeperEvent[] = [
    { type: 'keeper.membership', reachable: [A], absent: [] },
    { type: 'keeper.lease', held: true },
  ];

  it('no table: nothing active; a table naming another owner: nothing active', () => {
    const none = run(early);
    expect(activates(none.effects)).toEqual([]);
    const other = run([
      ...early,
      { type: 'keeper.table', table: { version: 2, owners: [A] } },
      emptyAnswer(A),
    ]);
    expect(activates(other.effects)).toEqual([]);
  });

  it('a table naming it owner: still only once the token is created (every member answered)', () => {
    const owner = run([...early, { type: 'keeper.table', table: { version: 2, owners: [N] } }]);
    expect(activates(owner.effects)).toEqual([]);
    expect(owner.ctx.parts[0]?.query).not.toBeNull();
    // positive control: the answer closes the query, the token is created and p activates at once
    const answered = run([
      ...early,
      { type: 'keeper.table', table: { version: 2, owners: [N] } },
      emptyAnswer(A),
    ]);
    expect(activates(answered.effects).map((e) => e.kind === 'activate' && e.partition)).toEqual([0]);
  });
});
