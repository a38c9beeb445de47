import { describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import type { Clock } from '../../packages/core/src/index.js';
import { entityTypeOf } from '../../packages/sharding/src/entity-type.js';
import { EntityHosting, RESTORES_PER_TURN } from '../../packages/sharding/src/region/entity-hosting.js';
import { ShardingMetrics } from '../../packages/sharding/src/region/sharding-metrics.js';
import { makeCoreSystem } from '../support/core-system.js';

/**
 * Issue 29: a partition handed over with its entities' snapshots is active at once, whatever
 * its entity count; each entity starts from its snapshot on its first message (before it, so
 * per-entity order holds) or in a background pass of RESTORES_PER_TURN per timer turn.
 */

interface Counter {
  readonly id: string;
  readonly count: number;
}
type CounterEvent = { type: 'add' };

/** What each entity saw: `id:count` after every add, in processing order. */
function counterLogic(seen: string[]) {
  return fromTransition(
    (state: Counter, event: CounterEvent) => {
      if (event.type !== 'add') return state;
      seen.push(`${state.id}:${state.count + 1}`);
      return { ...state, count: state.count + 1 };
    },
    ({ input }: { input: { entityId: string } }) => ({ id: input.entityId, count: 0 }),
  );
}

/** Timers that fire only when the test turns the clock: one turn runs the timers due before it. */
class TurnClock implements Clock {
  private timers = new Map<number, () => void>();
  private seq = 0;
  now(): number {
    return 0;
  }
  setTimeout(fn: () => void): number {
    this.timers.set(++this.seq, fn);
    return this.seq;
  }
  clearTimeout(id: number): void {
    this.timers.delete(id);
  }
  turn(): void {
    const due = [...this.timers];
    this.timers.clear();
    for (const [, fn] of due) fn();
  }
  get pending(): number {
    return this.timers.size;
  }
}

function hostingOn(seen: string[]) {
  const clock = new TurnClock();
  const { system, scheduler } = makeCoreSystem({ clock });
  const type = entityTypeOf('counter', counterLogic(seen), { handOverSnapshot: true });
  const watcher = system.spawn(
    fromTransition((s: null) => s, null),
    { name: 'watcher' },
  );
  let activation = 0;
  const hosting = new EntityHosting(
    system,
    type,
    { tableVersion: () => 1, watcher },
    new ShardingMetrics(system.metrics),
    { next: () => ++activation },
  );
  const started = () => system.metrics.value('doyen_sharding_activations_total', { type: 'counter' }) ?? 0;
  return { system, scheduler, clock, hosting, started };
}

const PARTITION = 7;

/** `n` entities that each counted to 3 on an old owner, handed over: their snapshots. */
function handedOver(n: number) {
  const seen: string[] = [];
  const old = hostingOn(seen);
  for (let i = 0; i < n; i++)
    for (let k = 0; k < 3; k++) old.hosting.deliver(`e${i}`, PARTITION, { type: 'add' }, undefined);
  old.scheduler.runAll();
  const { snapshots } = old.hosting.stopPartition(PARTITION, 'hand-off');
  expect(snapshots).toHaveLength(n);
  return snapshots;
}

describe('a handed-over partition restores its entities lazily', () => {
  it('activating it starts no entity, for 10 or 2,000 entities: the partition is active at once', () => {
    for (const n of [10, 2000]) {
      const seen: string[] = [];
      const b = hostingOn(seen);
      for (const s of handedOver(n)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
      // O(1) per entity and no spawn: this is what made the last of ~54 moved partitions wait
      expect(b.started()).toBe(0);
      expect(b.hosting.size).toBe(0);
      expect(b.hosting.pendingCount).toBe(n);
      // GET /cluster/shards still counts them as the partition's
      expect(b.hosting.countsByPartition().get(PARTITION)).toBe(n);
    }
  });

  it("an entity's first message starts it from its snapshot, before the message, in order", () => {
    const seen: string[] = [];
    const b = hostingOn(seen);
    for (const s of handedOver(500)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    b.hosting.deliver('e321', PARTITION, { type: 'add' }, undefined);
    b.hosting.deliver('e321', PARTITION, { type: 'add' }, undefined);
    b.scheduler.runAll();
    // its state came along (3, not 0) and the two messages ran after it, in order
    expect(seen).toEqual(['e321:4', 'e321:5']);
    // only that entity started: a message waits for its own entity's restore, not the partition's
    expect(b.started()).toBe(1);
    expect(b.hosting.pendingCount).toBe(499);
  });

  it('the background pass starts the rest at RESTORES_PER_TURN per timer turn, each from its snapshot', () => {
    const seen: string[] = [];
    const b = hostingOn(seen);
    const n = 5 * RESTORES_PER_TURN + 3;
    for (const s of handedOver(n)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    b.clock.turn();
    expect(b.hosting.size).toBe(RESTORES_PER_TURN);
    let turns = 1;
    while (b.clock.pending > 0) {
      b.clock.turn();
      turns++;
    }
    expect(turns).toBe(6);
    expect(b.hosting.size).toBe(n);
    expect(b.hosting.pendingCount).toBe(0);
    // every one resumed from its state
    for (let i = 0; i < n; i++) b.hosting.deliver(`e${i}`, PARTITION, { type: 'add' }, undefined);
    b.scheduler.runAll();
    expect(seen.filter((x) => !x.endsWith(':4'))).toEqual([]);
    expect(seen).toHaveLength(n);
  });

  it('handed on again before the pass reached them: every snapshot goes along, none is started', () => {
    const b = hostingOn([]);
    for (const s of handedOver(100)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    b.hosting.deliver('e5', PARTITION, { type: 'add' }, undefined);
    b.scheduler.runAll();
    const { snapshots } = b.hosting.stopPartition(PARTITION, 'hand-off');
    expect(snapshots).toHaveLength(100);
    expect(b.hosting.pendingCount).toBe(0);
    // the third owner resumes each where it was (e5 one further)
    const seen: string[] = [];
    const c = hostingOn(seen);
    for (const s of snapshots) c.hosting.restore(s.entityId, PARTITION, s.snapshot);
    for (const id of ['e5', 'e6']) c.hosting.deliver(id, PARTITION, { type: 'add' }, undefined);
    c.scheduler.runAll();
    expect(seen).toEqual(['e5:5', 'e6:4']);
    // and the pass of the second owner has nothing left to start
    b.clock.turn();
    expect(b.hosting.size).toBe(0);
  });

  it('a lapse of the owner lease keeps the waiting snapshots; a stopping node drops them', () => {
    const b = hostingOn([]);
    for (const s of handedOver(40)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    expect(b.hosting.stopPartition(PARTITION, 'lease-lost').snapshots).toHaveLength(40);
    for (const s of handedOver(40)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    expect(b.hosting.stopPartition(PARTITION, 'stopped').snapshots).toHaveLength(0);
    expect(b.hosting.pendingCount).toBe(0);
  });

  it('a remembered restart of a waiting id starts it from its snapshot, not afresh', () => {
    const seen: string[] = [];
    const b = hostingOn(seen);
    for (const s of handedOver(3)) b.hosting.restore(s.entityId, PARTITION, s.snapshot);
    expect(b.hosting.restartRemembered('e1', PARTITION)).toBe(true);
    b.hosting.deliver('e1', PARTITION, { type: 'add' }, undefined);
    b.scheduler.runAll();
    expect(seen).toEqual(['e1:4']);
  });
});
