import { describe, expect, it } from 'vitest';
import {
  decide,
  initialKeeperContext,
  type KeeperContext,
  type KeeperEvent,
  type KeeperPolicy,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';

/**
 * Issue 29: every keeper event runs `settle` over all ~271 partitions, on every node of a move.
 * Copying the partition states on each event (and listing their keys several times) made each
 * decision ~0.2 ms, so a drain marker or an activation waited behind the events before it. The
 * states are copied only when a partition is written, and a state that became empty is still
 * dropped from the context.
 */

const N = 271;
const SELF = '127.0.0.1:41001#aaaa';
const OTHERS = ['127.0.0.1:41002#bbbb', '127.0.0.1:41003#cccc'];
const policy: KeeperPolicy = { selfKey: SELF, partitionCount: N, maxConcurrentHandOffs: 16, retryMs: 200 };
const owners = Array.from({ length: N }, (_, p) => [SELF, ...OTHERS][p % 3]!);

/** A keeper that owns a third of 271 partitions, active, and knows where the rest are active. */
function settled(): KeeperContext {
  let ctx = initialKeeperContext;
  const feed = (e: KeeperEvent, now = 0) => {
    const step = decide(policy, ctx, e, now);
    ctx = step.context;
    return step;
  };
  feed({ type: 'keeper.membership', reachable: OTHERS, absent: [] });
  feed({ type: 'keeper.lease', held: true });
  const first = feed({ type: 'keeper.table', table: { version: 1, owners } });
  let round = 0;
  let partitions: readonly number[] = [];
  for (const e of first.effects)
    if (e.kind === 'send' && e.message.type === 'sharding.token-query') ({ round, partitions } = e.message);
  expect(partitions).toHaveLength(91);
  for (const from of OTHERS)
    feed({
      type: 'sharding.token-answer',
      from,
      version: 1,
      round,
      newer: null,
      answers: partitions.map((partition) => ({ partition, seen: null, handed: null, dormant: null })),
    });
  for (const from of OTHERS)
    feed({
      type: 'sharding.active',
      from,
      version: 1,
      partitions: owners.flatMap((o, p) => (o === from ? [p] : [])),
    });
  return ctx;
}

describe('keeper decisions copy partition states only when they change', () => {
  it('an event that changes no partition keeps the states object as it was (no copy of 271)', () => {
    const ctx = settled();
    expect(Object.keys(ctx.parts)).toHaveLength(N);
    expect(Object.values(ctx.parts).filter((s) => s.token?.phase === 'active')).toHaveLength(91);
    const marker = decide(
      policy,
      ctx,
      { type: 'sharding.drain-marker', from: OTHERS[0]!, version: 1, active: [] },
      5,
    );
    expect(marker.context.parts).toBe(ctx.parts);
    // a second marker at the version already noted changes nothing either
    const again = decide(
      policy,
      marker.context,
      { type: 'sharding.drain-marker', from: OTHERS[0]!, version: 1, active: [] },
      6,
    );
    expect(again.context).toEqual(marker.context);
    expect(again.context.parts).toBe(ctx.parts);
  });

  it('a written partition gets a new states object and leaves the old context untouched', () => {
    const ctx = settled();
    const before = JSON.stringify(ctx.parts);
    // a newer table moves partition 0 away: its token starts draining
    const moved = [...owners];
    moved[0] = OTHERS[0]!;
    const step = decide(policy, ctx, { type: 'keeper.table', table: { version: 2, owners: moved } }, 5);
    expect(step.context.parts).not.toBe(ctx.parts);
    expect(step.context.parts[0]!.token?.phase).toBe('draining');
    expect(JSON.stringify(ctx.parts)).toBe(before);
    expect(ctx.parts[0]!.token?.phase).toBe('active');
  });

  it('a partition state that became empty is dropped from the context, as before', () => {
    // a query answered `newer` by everyone ends: p's state (the query) empties and goes
    const one: KeeperPolicy = { ...policy, partitionCount: 1 };
    let ctx = initialKeeperContext;
    for (const e of [
      { type: 'keeper.membership', reachable: OTHERS, absent: [] },
      { type: 'keeper.lease', held: true },
      { type: 'keeper.table', table: { version: 1, owners: [SELF] } },
    ] as KeeperEvent[])
      ctx = decide(one, ctx, e, 0).context;
    expect(ctx.parts[0]?.query).not.toBeNull();
    ctx = decide(one, ctx, { type: 'keeper.table', table: { version: 2, owners: [OTHERS[0]!] } }, 1).context;
    // no query, no token, nothing seen: the only state left would be the sender-side buffering
    const state = ctx.parts[0];
    if (state !== undefined) expect(state.buffering).not.toBeNull();
    ctx = decide(
      one,
      ctx,
      { type: 'sharding.active', from: OTHERS[0]!, version: 2, partitions: [0] },
      2,
    ).context;
    expect(ctx.parts[0]?.buffering ?? null).toBeNull();
    expect(Object.keys(ctx.parts).filter((k) => ctx.parts[Number(k)]!.activeAt === null)).toEqual([]);
  });
});
