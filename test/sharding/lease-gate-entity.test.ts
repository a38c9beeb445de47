import { describe, expect, it } from 'vitest';
import { type AnyActorLogic, assign, createMachine } from 'xstate';
import { fromTransition, type Message } from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { entityTypeOf } from '../../packages/sharding/src/entity-type.js';
import { EMPTY_CARGO } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import { EntityHosting } from '../../packages/sharding/src/region/entity-hosting.js';
import { Region } from '../../packages/sharding/src/region/region.js';
import { ShardingMetrics } from '../../packages/sharding/src/region/sharding-metrics.js';
import { makeCoreSystem } from '../support/core-system.js';
import { jsonLogCapture } from '../support/json-log.js';

/**
 * An entity reads the owner lease BY THE CLOCK before it processes anything (issue 29): what its
 * mailbox held when the process was frozen, and its delayed events due during the freeze (xstate
 * `after`), would otherwise run right after the wake, before any arrival trips the region's guard
 * and before the lease's own timer, while a successor may be active elsewhere. Deterministic: a
 * simulated clock, turns run by hand, a lease only the clock ends (the pause: no report comes).
 * Messages are queued and a timer armed, the clock jumps past the lease without a turn running,
 * then the turns run: nothing is processed, all is held in order, and delivered exactly once when
 * the lease returns or after a hand-off. Positive controls: the same region with the entity gate
 * off (`gateEntityTurns: false`, the code before it) processes them on waking.
 */

const PARTITIONS = 8;
const SELF = '127.0.0.1:1#u1';
const ID = 'c-1';
const P = partitionOf(ID, PARTITIONS);
const LEASE_MS = 500;
const TIMER_MS = 1_000;

interface Add extends Message {
  readonly type: 'count.add';
  readonly n: number;
}

/** What every entity processed, in order, across regions: `n` of a message, or `timer`. */
type Handled = (number | 'timer')[];

/** Fast-path transition logic: its cell reads the gate once per turn. */
function counterLogic(handled: Handled): AnyActorLogic {
  return fromTransition(
    (count: number, e: Add) => {
      handled.push(e.n);
      return count + 1;
    },
    () => 0,
  );
}

/** A machine (the xstate path, read per event): `count.add` while waiting, `after` TIMER_MS to done. */
function timerLogic(handled: Handled): AnyActorLogic {
  return createMachine({
    types: {} as { context: { seen: number }; events: Add },
    id: 'timed',
    initial: 'idle',
    context: { seen: 0 },
    states: {
      idle: { on: { 'count.add': { target: 'waiting', actions: 'seen' } } },
      waiting: {
        on: { 'count.add': { actions: 'seen' } },
        after: { [TIMER_MS]: { target: 'done', actions: () => handled.push('timer') } },
      },
      done: { on: { 'count.add': { actions: 'seen' } } },
    },
  }).provide({
    actions: {
      seen: assign(({ context, event }) => {
        handled.push(event.n);
        return { seen: context.seen + 1 };
      }),
    },
  });
}

function setUp(logic: (handled: Handled) => AnyActorLogic, gated: boolean, handled: Handled = []) {
  const { system, clock, scheduler } = makeCoreSystem();
  const region = new Region(system, new ShardingMetrics(system.metrics), {
    partitionCount: PARTITIONS,
    selfKey: SELF,
    gateEntityTurns: gated,
  });
  region.addType(entityTypeOf('counter', logic(handled), { handOverSnapshot: true }), true);
  region.adoptTable({ version: 1, owners: Array.from({ length: PARTITIONS }, () => SELF) });
  // the lease a majority granted at 0 runs to LEASE_MS; only the clock ends it (no report comes)
  const lease = { heldUntil: LEASE_MS, lapses: 0 };
  region.guardDelivery({ holdsOwn: () => clock.now() < lease.heldUntil, lapsed: () => lease.lapses++ });
  region.activate(P, 1, EMPTY_CARGO);
  region.activate((P + 1) % PARTITIONS, 1, EMPTY_CARGO);
  const add = (n: number) => region.send('counter', ID, { type: 'count.add', n } as Add, undefined);
  /** A pause past the lease: the clock jumps (due timers fire on waking), no turn runs before. */
  const pause = () => clock.set(LEASE_MS + 3_900);
  /** 1 processed, then `rest` accepted into the entity's mailbox and not yet processed. */
  const queueBehindFirst = (...rest: number[]) => {
    add(1);
    scheduler.runAll();
    for (const n of rest) add(n);
  };
  /** The lease back: the keeper re-activates the partition at table 2 with nothing handed over. */
  const resume = () => {
    lease.heldUntil = Number.POSITIVE_INFINITY;
    region.activate(P, 2, EMPTY_CARGO);
    scheduler.runAll();
  };
  return { system, clock, scheduler, region, handled, lease, add, pause, queueBehindFirst, resume };
}

describe('an entity processes nothing of what it had queued once its owner lease lapsed by the clock', () => {
  for (const [kind, logic] of [
    ['a fast-path entity (per turn)', counterLogic],
    ['a machine entity (per event)', timerLogic],
  ] as const) {
    it(`${kind}: queued messages are held in order and delivered exactly once when the lease returns`, () => {
      const t = setUp(logic, true);
      // 2 and 3 accepted into the entity's mailbox before the pause, not yet processed
      t.queueBehindFirst(2, 3);
      t.pause();
      t.scheduler.runAll();
      expect(t.handled).toEqual([1]);
      expect(t.lease.lapses).toBe(1);
      expect(t.region.activePartitions()).toEqual([]);
      expect(t.region.isRunning('counter', ID)).toBe(false);
      expect(t.region.bufferedPartitions()).toEqual([P]);
      expect(t.region.bufferedCount()).toBe(kind.startsWith('a machine') ? 3 : 2);
      // the lease back (the keeper re-activates): state restored, the held messages once, in order
      t.resume();
      t.add(4);
      t.scheduler.runAll();
      expect(t.handled.filter((h) => h !== 'timer')).toEqual([1, 2, 3, 4]);
      expect(t.region.bufferedCount()).toBe(0);
    });

    it(`positive control, ${kind}: with the entity gate off the queued messages run on waking`, () => {
      const t = setUp(logic, false);
      t.queueBehindFirst(2, 3);
      t.pause();
      t.scheduler.runAll();
      expect(t.handled.filter((h) => h !== 'timer')).toEqual([1, 2, 3]);
      expect(t.region.activePartitions()).toContain(P);
      expect(t.lease.lapses).toBe(0);
    });
  }

  it('a machine entity refuses a queued message in its turn (no timer due): held first, then the rest, in order', () => {
    const t = setUp(timerLogic, true);
    t.queueBehindFirst(2, 3);
    // past the lease, before the entity's timer is due: the turn takes 2, the entity refuses it
    t.clock.set(LEASE_MS + 100);
    expect(t.lease.lapses).toBe(0);
    t.scheduler.runAll();
    expect(t.handled).toEqual([1]);
    expect(t.lease.lapses).toBe(1);
    expect(t.region.bufferedCount()).toBe(2);
    t.resume();
    expect(t.handled).toEqual([1, 2, 3]);
  });

  it('positive control: with the entity gate off the machine entity processes its queued messages past the lease', () => {
    const t = setUp(timerLogic, false);
    t.queueBehindFirst(2, 3);
    t.clock.set(LEASE_MS + 100);
    t.scheduler.runAll();
    expect(t.handled).toEqual([1, 2, 3]);
    expect(t.lease.lapses).toBe(0);
  });

  it('a delayed event due during the pause is not processed: held first, run once when the lease returns', () => {
    const t = setUp(timerLogic, true);
    // waiting, its timer armed at 0 for TIMER_MS; a message queued behind it, not yet processed
    t.queueBehindFirst(2);
    t.pause();
    // the timer fired on waking (in `pause`) and was refused: every partition stopped there
    expect(t.handled).toEqual([1]);
    expect(t.lease.lapses).toBe(1);
    expect(t.region.activePartitions()).toEqual([]);
    t.scheduler.runAll();
    expect(t.handled).toEqual([1]);
    // the timer's event ahead of what the mailbox held (the order the ungated node runs them in)
    expect(t.region.bufferedCount()).toBe(2);
    t.resume();
    t.clock.increment(10 * TIMER_MS);
    t.scheduler.runAll();
    expect(t.handled).toEqual([1, 'timer', 2]);
  });

  it('positive control: with the entity gate off the due delayed event runs on waking', () => {
    const t = setUp(timerLogic, false);
    t.queueBehindFirst(2);
    t.pause();
    t.scheduler.runAll();
    expect(t.handled).toEqual([1, 'timer', 2]);
    expect(t.lease.lapses).toBe(0);
  });

  for (const [kind, logic] of [
    ['fast-path', counterLogic],
    ['machine', timerLogic],
  ] as const)
    it(`${kind}: what was held goes with a hand-off, processed exactly once on the next owner`, () => {
      const handled: Handled = [];
      const a = setUp(logic, true, handled);
      a.queueBehindFirst(2, 3);
      a.pause();
      a.scheduler.runAll();
      expect(handled.filter((h) => h !== 'timer')).toEqual([1]);
      // the keeper hands the partition on (its token stayed here): snapshot and messages go along
      a.region.drain(P);
      a.scheduler.runAll();
      const cargo = a.region.takeCargo(P);
      expect(cargo.snapshots).toHaveLength(1);
      expect(cargo.forwarded.map((m) => (m.payload as Add).n ?? m.payload.type)).toEqual(
        kind === 'machine' ? [`xstate.after.${TIMER_MS}.timed.waiting`, 2, 3] : [2, 3],
      );
      const b = setUp(logic, true, handled);
      b.lease.heldUntil = Number.POSITIVE_INFINITY;
      b.region.deactivateAll('stopped');
      b.region.activate(P, 2, cargo);
      b.scheduler.runAll();
      b.clock.increment(10 * TIMER_MS);
      b.scheduler.runAll();
      expect(handled).toEqual(kind === 'machine' ? [1, 'timer', 2, 3] : [1, 2, 3]);
      expect(b.region.isRunning('counter', ID)).toBe(true);
      expect(a.region.isRunning('counter', ID)).toBe(false);
    });
});

describe('the entity gate without a region to stop it (defensive: entities run only in active partitions)', () => {
  for (const [kind, logic] of [
    ['fast-path', counterLogic],
    ['machine', timerLogic],
  ] as const)
    it(`${kind}: an entity the lapse did not stop is stopped by its own gate, never processing; counted dead letters`, () => {
      const { lines, logger } = jsonLogCapture();
      const { system, scheduler, letters } = makeCoreSystem({ logger });
      const handled: Handled = [];
      let holds = true;
      const hosting = new EntityHosting(
        system,
        entityTypeOf('counter', logic(handled), {}),
        {
          tableVersion: () => 1,
          watcher: system.functionRef('w', () => {}),
          // a region that stops nothing on a lapse
          leaseGate: { holds: () => holds, lapsed: () => {} },
        },
        new ShardingMetrics(system.metrics),
        { next: () => 1 },
      );
      hosting.deliver(ID, P, { type: 'count.add', n: 1 } as Add, undefined);
      holds = false;
      scheduler.runAll();
      expect(handled).toEqual([]);
      expect(hosting.has(ID)).toBe(false);
      expect(lines.map((l) => l.event)).toContain('sharding.lease-gate-orphans');
      expect(letters.length).toBeGreaterThan(0);
    });
});
