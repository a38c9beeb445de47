import { describe, expect, it } from 'vitest';
import {
  type AnyActorLogic,
  assign,
  createActor,
  createMachine,
  type SimulatedClock,
  sendTo,
  setup,
} from 'xstate';
import type { Message } from '../../packages/core/src/index.js';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { entityTypeOf } from '../../packages/sharding/src/entity-type.js';
import { EMPTY_CARGO, type HandOffCargo } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import {
  type CarriedTimer,
  DEFAULT_TIMER_LIMITS,
  EntityTimers,
  TIMERS_FIELD,
  type TimerDrop,
} from '../../packages/sharding/src/region/entity-timers.js';
import { Region } from '../../packages/sharding/src/region/region.js';
import { ShardingMetrics } from '../../packages/sharding/src/region/sharding-metrics.js';
import { makeCoreSystem } from '../support/core-system.js';
import { jsonLogCapture, type LogLine } from '../support/json-log.js';

/**
 * An entity's pending delayed events travel with it (issue 29, live migration): xstate 5.33 keeps
 * no scheduled event in a persisted snapshot and re-arms none on restore, so a cart armed to expire
 * would never expire once its partition moved. Deterministic: simulated clocks (one per node, far
 * apart: only remaining delays travel, never clock readings), turns run by hand. Each case has a
 * positive control: the same region with `carryTimers: false` (the code before) never fires.
 */

const PARTITIONS = 8;
const SELF = '127.0.0.1:1#u1';
const ID = 'cart-1';
const P = partitionOf(ID, PARTITIONS);
const EXPIRE_MS = 10_000;
/** The simulated clocks advance this much per step, turns run between steps. */
const STEP_MS = 100;
const AFTER_EVENT = `xstate.after.${EXPIRE_MS}.cart.open`;

interface Add extends Message {
  readonly type: 'cart.add';
  readonly n: number;
}

/** What the entity did, on which node, at which reading of that node's clock. */
type Trace = { node: string; what: number | 'expired'; at: number }[];

/** A cart: the first item opens it, it expires EXPIRE_MS after opening (an `after`). */
function cartLogic(node: string, clock: SimulatedClock, trace: Trace): AnyActorLogic {
  return createMachine({
    types: {} as { context: { items: number }; events: Add },
    id: 'cart',
    initial: 'empty',
    context: { items: 0 },
    states: {
      empty: { on: { 'cart.add': { target: 'open', actions: 'add' } } },
      open: {
        on: { 'cart.add': { actions: 'add' } },
        after: {
          [EXPIRE_MS]: {
            target: 'expired',
            actions: () => trace.push({ node, what: 'expired', at: clock.now() }),
          },
        },
      },
      expired: { on: { 'cart.add': { actions: 'add' } } },
    },
  }).provide({
    actions: {
      add: assign(({ context, event }) => {
        trace.push({ node, what: event.n, at: clock.now() });
        return { items: context.items + 1 };
      }),
    },
  });
}

interface Node {
  readonly region: Region;
  readonly clock: SimulatedClock;
  readonly lines: LogLine[];
  readonly metrics: ShardingMetrics;
  readonly dropped: (reason: string) => number;
  add(n: number): void;
  /** Steps this node's clock to `t`, running turns between steps. */
  runTo(t: number): void;
  lease: { heldUntil: number; lapses: number };
}

/**
 * A parent whose child (invoked, `kid`) wakes after 5 s on its own, and which pokes the child 8 s
 * after it starts (a delayed `sendTo`); with `outside`, it also sends to an actor that is not its own.
 */
function familyLogic(
  node: string,
  clock: SimulatedClock,
  trace: Trace,
  outside?: AnyActorLogic,
): AnyActorLogic {
  const note = (what: string) => () => trace.push({ node, what: what as 'expired', at: clock.now() });
  const kid = createMachine({
    id: 'kid',
    initial: 'asleep',
    states: {
      asleep: { after: { 5000: { target: 'awake', actions: note('kid-woke') } } },
      awake: {},
    },
    on: { 'kid.poke': { actions: note('kid-poked') } },
  });
  const stranger = outside ? createActor(outside).start() : undefined;
  return setup({ actors: { kid } }).createMachine({
    id: 'family',
    invoke: { id: 'kid', src: 'kid' },
    entry: [
      sendTo('kid', { type: 'kid.poke' }, { delay: 8_000, id: 'poke' }),
      ...(stranger ? [sendTo(() => stranger, { type: 'hello' }, { delay: 8_000 })] : []),
    ],
  });
}

function node(
  name: string,
  trace: Trace,
  opts: { carry: boolean; startAt?: number; active?: boolean; logic?: typeof cartLogic },
): Node {
  const { lines, logger } = jsonLogCapture();
  const { system, clock, scheduler } = makeCoreSystem({ logger });
  clock.set(opts.startAt ?? 0);
  const metrics = new ShardingMetrics(system.metrics);
  const region = new Region(system, metrics, {
    partitionCount: PARTITIONS,
    selfKey: SELF,
    carryTimers: opts.carry,
  });
  region.addType(
    entityTypeOf('cart', (opts.logic ?? cartLogic)(name, clock, trace), { handOverSnapshot: true }),
    true,
  );
  region.adoptTable({ version: 1, owners: Array.from({ length: PARTITIONS }, () => SELF) });
  const lease = { heldUntil: Number.POSITIVE_INFINITY, lapses: 0 };
  region.guardDelivery({ holdsOwn: () => clock.now() < lease.heldUntil, lapsed: () => lease.lapses++ });
  if (opts.active !== false) region.activate(P, 1, EMPTY_CARGO);
  scheduler.runAll();
  return {
    region,
    clock,
    lines,
    metrics,
    lease,
    dropped: (reason) =>
      system.metrics.value('doyen_sharding_dropped_messages_total', { type: 'cart', reason }) ?? 0,
    add: (n) => {
      region.send('cart', ID, { type: 'cart.add', n } as Add, undefined);
      scheduler.runAll();
    },
    runTo: (t) => {
      while (clock.now() < t) {
        clock.set(Math.min(t, clock.now() + STEP_MS));
        scheduler.runAll();
      }
    },
  };
}

const expirations = (trace: Trace) => trace.filter((t) => t.what === 'expired');

/** Node a opens the cart at 0 and hands the partition over at `at` (its clock). */
function handOverAt(
  at: number,
  trace: Trace,
  carry: boolean,
  logic?: typeof cartLogic,
): { a: Node; cargo: HandOffCargo } {
  const a = node('a', trace, { carry, ...(logic ? { logic } : {}) });
  a.add(1);
  a.runTo(at);
  a.region.drain(P);
  a.runTo(at);
  return { a, cargo: a.region.takeCargo(P) };
}

function carried(cargo: HandOffCargo): CarriedTimer[] | undefined {
  return (cargo.snapshots[0]?.snapshot as Record<string, unknown> | undefined)?.[TIMERS_FIELD] as
    | CarriedTimer[]
    | undefined;
}

/**
 * Node a opens the cart at 0, its owner lease ends at 4 s, and at 4.5 s the first arrival past it
 * (item 2) stops every partition: snapshots kept, the message held.
 */
function openThenLapse(a: Node): void {
  a.add(1);
  a.lease.heldUntil = 4_000;
  a.runTo(4_500);
  a.add(2);
}

/** The lease back: the keeper re-activates the partition at table 2 with nothing handed over. */
function resume(a: Node): void {
  a.lease.heldUntil = Number.POSITIVE_INFINITY;
  a.region.activate(P, 2, EMPTY_CARGO);
}

/** `cargo` with its one snapshot's carried field replaced (what a hostile or broken peer sends). */
function withField(cargo: HandOffCargo, field: unknown): HandOffCargo {
  const s = cargo.snapshots[0]!;
  return { ...cargo, snapshots: [{ ...s, snapshot: { ...(s.snapshot as object), [TIMERS_FIELD]: field } }] };
}

/** Far from node a's clock: only remaining delays travel. */
const B_START = 1_000_000;

describe('an entity’s pending delayed events travel with its snapshot', () => {
  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}an \`after\` of 10 s handed over at 4 s fires ${carry ? 'once, on the new owner, ~6 s after' : 'never'}`, () => {
      const trace: Trace = [];
      const { a, cargo } = handOverAt(4_000, trace, carry);
      if (carry)
        expect(carried(cargo)).toEqual([expect.objectContaining({ id: AFTER_EVENT, remainingMs: 6_000 })]);
      else expect(carried(cargo)).toBeUndefined();
      const b = node('b', trace, { carry, startAt: B_START, active: false });
      b.region.activate(P, 2, cargo);
      b.runTo(B_START + 30_000);
      a.runTo(30_000);
      if (!carry) {
        expect(expirations(trace)).toEqual([]);
        return;
      }
      expect(expirations(trace)).toEqual([{ node: 'b', what: 'expired', at: expect.any(Number) }]);
      const at = expirations(trace)[0]!.at - B_START;
      // 10 s after opening: 6 s after the hand-off (one clock step of slack), not 10 s after it
      expect(at).toBeGreaterThanOrEqual(6_000);
      expect(at).toBeLessThanOrEqual(6_000 + STEP_MS);
      expect(b.region.isRunning('cart', ID)).toBe(true);
    });

  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}across an owner-lease lapse at 4.5 s and a resume at 6 s the \`after\` fires ${carry ? 'once, at 10 s' : 'never'}`, () => {
      const trace: Trace = [];
      const a = node('a', trace, { carry });
      openThenLapse(a);
      expect(a.lease.lapses).toBe(1);
      expect(a.region.activePartitions()).toEqual([]);
      a.runTo(6_000);
      resume(a);
      a.runTo(30_000);
      expect(trace.filter((t) => t.what !== 'expired').map((t) => t.what)).toEqual([1, 2]);
      if (!carry) {
        expect(expirations(trace)).toEqual([]);
        return;
      }
      expect(expirations(trace)).toHaveLength(1);
      // held 1.5 s through the lapse: that time counts (10 s after opening, not 11.5 s)
      expect(expirations(trace)[0]!.at).toBeGreaterThanOrEqual(EXPIRE_MS);
      expect(expirations(trace)[0]!.at).toBeLessThanOrEqual(EXPIRE_MS + STEP_MS);
    });

  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}an \`after\` due while the partition was held (lapse at 4.5 s, resume at 12 s) fires ${carry ? 'once, first, before the held message' : 'never'}`, () => {
      const trace: Trace = [];
      const a = node('a', trace, { carry });
      openThenLapse(a);
      a.runTo(12_000);
      expect(expirations(trace)).toEqual([]);
      resume(a);
      a.runTo(30_000);
      expect(trace.map((t) => t.what)).toEqual(carry ? [1, 'expired', 2] : [1, 2]);
      if (carry) expect(expirations(trace)[0]!.at).toBe(12_000);
    });

  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}due during a second move (handed on before it started, its wait counted) fires ${carry ? 'once, on the third owner' : 'never'}`, () => {
      const trace: Trace = [];
      const { cargo } = handOverAt(4_000, trace, carry);
      // b takes the partition and drains it before the entity started there; the cargo leaves 7 s
      // later (the hand-off waited): the pending snapshot goes on, less the 7 s it waited (6 - 7: due)
      const b = node('b', trace, { carry, startAt: B_START, active: false });
      b.region.activate(P, 2, cargo);
      b.region.drain(P);
      b.clock.set(B_START + 7_000);
      const onward = b.region.takeCargo(P);
      expect(onward.snapshots).toHaveLength(1);
      if (carry) expect(carried(onward)).toEqual([expect.objectContaining({ remainingMs: 0 })]);
      const c = node('c', trace, { carry, startAt: 5 * B_START, active: false });
      c.region.activate(P, 3, onward);
      c.add(2);
      c.runTo(5 * B_START + 30_000);
      expect(trace.map((t) => `${t.node}:${t.what}`)).toEqual(
        carry ? ['a:1', 'c:expired', 'c:2'] : ['a:1', 'c:2'],
      );
    });

  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}held through a lapse at 4.5 s, handed over at 7 s: fires ${carry ? 'once, on the new owner, 3 s later' : 'never'}`, () => {
      const trace: Trace = [];
      const a = node('a', trace, { carry });
      openThenLapse(a);
      a.runTo(7_000);
      // the token stayed here: the keeper hands the held snapshots on
      const cargo = a.region.takeCargo(P);
      expect(cargo.snapshots).toHaveLength(1);
      const b = node('b', trace, { carry, startAt: B_START, active: false });
      b.region.activate(P, 2, cargo);
      b.runTo(B_START + 30_000);
      if (!carry) {
        expect(expirations(trace)).toEqual([]);
        return;
      }
      expect(expirations(trace).map((t) => t.node)).toEqual(['b']);
      expect(expirations(trace)[0]!.at - B_START).toBeGreaterThanOrEqual(3_000);
      expect(expirations(trace)[0]!.at - B_START).toBeLessThanOrEqual(3_000 + STEP_MS);
    });

  for (const carry of [true, false])
    it(`${carry ? '' : 'positive control, not carried: '}a child's own \`after\` and its parent's delayed \`sendTo\` to it ${carry ? 'fire once each, on the new owner, on time' : 'never fire'}`, () => {
      const trace: Trace = [];
      const { cargo } = handOverAt(3_000, trace, carry, familyLogic);
      if (carry)
        expect(carried(cargo)).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ source: ['kid'], target: ['kid'], remainingMs: 2_000 }),
            expect.objectContaining({ source: [], target: ['kid'], id: 'poke', remainingMs: 5_000 }),
          ]),
        );
      const b = node('b', trace, { carry, startAt: B_START, active: false, logic: familyLogic });
      b.region.activate(P, 2, cargo);
      b.runTo(B_START + 30_000);
      const seen = trace.map((t) => ({
        node: t.node,
        what: t.what,
        after: Math.ceil((t.at - B_START) / 1_000),
      }));
      expect(seen).toEqual(
        carry
          ? [
              { node: 'b', what: 'kid-woke', after: 2 },
              { node: 'b', what: 'kid-poked', after: 5 },
            ]
          : [],
      );
    });

  it('a delayed event to an actor outside the entity is not carried: logged and counted; its own still are', () => {
    const trace: Trace = [];
    const outsider = createMachine({});
    const logic = (n: string, c: SimulatedClock, t: Trace) => familyLogic(n, c, t, outsider);
    const a = node('a', trace, { carry: true, logic });
    a.add(1);
    a.runTo(3_000);
    a.region.drain(P);
    a.runTo(3_000);
    const cargo = a.region.takeCargo(P);
    expect(carried(cargo)?.map((t) => t.target)).toEqual([['kid'], ['kid']]);
    expect(a.dropped('delayed-outside-entity')).toBe(1);
    expect(a.lines.filter((l) => l.event === 'sharding.delayed-events-dropped')).toEqual([
      expect.objectContaining({ reason: 'outside-entity', count: 1 }),
    ]);
  });

  it('an event whose state was left before the move is not carried (cancelled timers stay cancelled)', () => {
    const trace: Trace = [];
    const a = node('a', trace, { carry: true });
    a.add(1);
    a.runTo(EXPIRE_MS + STEP_MS);
    expect(expirations(trace)).toHaveLength(1);
    a.region.drain(P);
    a.runTo(EXPIRE_MS + 2 * STEP_MS);
    const cargo = a.region.takeCargo(P);
    expect(cargo.snapshots).toHaveLength(1);
    expect(carried(cargo)).toBeUndefined();
  });
});

describe('carried delayed events off the wire are checked: refused whole, logged and counted, never a crash', () => {
  const valid = (): { cargo: HandOffCargo; timer: CarriedTimer } => {
    const { cargo } = handOverAt(4_000, [], true);
    return { cargo, timer: carried(cargo)![0]! };
  };
  const cases: [string, string, (t: CarriedTimer) => unknown][] = [
    ['a negative delay', 'delayed-bad-delay', (t) => [{ ...t, remainingMs: -5 }]],
    ['a NaN delay', 'delayed-bad-delay', (t) => [{ ...t, remainingMs: Number.NaN }]],
    ['an infinite delay', 'delayed-bad-delay', (t) => [{ ...t, remainingMs: Number.POSITIVE_INFINITY }]],
    ['not a list', 'delayed-malformed', () => ({ evil: true })],
    ['an event without a type', 'delayed-malformed', (t) => [{ ...t, event: { n: 1 } }]],
    ['a path that is no list of ids', 'delayed-malformed', (t) => [{ ...t, target: 'self' }]],
    [
      'more events than the cap',
      'delayed-too-many',
      (t) => Array.from({ length: DEFAULT_TIMER_LIMITS.maxTimers + 1 }, () => t),
    ],
    [
      'an event over the size cap',
      'delayed-too-large',
      (t) => [
        {
          ...t,
          event: { type: 'x', pad: Array.from({ length: DEFAULT_TIMER_LIMITS.maxEventNodes }, () => 1) },
        },
      ],
    ],
  ];
  for (const [what, reason, field] of cases)
    it(`${what}: refused (${reason}), the entity keeps its state without the timers`, () => {
      const trace: Trace = [];
      const { cargo, timer } = valid();
      const b = node('b', trace, { carry: true, startAt: B_START, active: false });
      b.region.activate(P, 2, withField(cargo, field(timer)));
      b.add(2);
      b.runTo(B_START + 30_000);
      expect(trace.map((t) => t.what)).toEqual([2]);
      expect(b.region.isRunning('cart', ID)).toBe(true);
      expect(b.dropped(reason)).toBeGreaterThan(0);
      expect(b.lines.filter((l) => l.event === 'sharding.delayed-events-dropped')).toEqual([
        expect.objectContaining({ entityType: 'cart', entity: ID, reason: reason.slice('delayed-'.length) }),
      ]);
    });

  it('positive control: the same cargo with its field as captured fires once on the new owner', () => {
    const trace: Trace = [];
    const { cargo, timer } = valid();
    const b = node('b', trace, { carry: true, startAt: B_START, active: false });
    b.region.activate(P, 2, withField(cargo, [timer]));
    b.runTo(B_START + 30_000);
    expect(expirations(trace).map((t) => t.node)).toEqual(['b']);
  });

  it('positive control: with the caps off, too many and too large events pass the check', () => {
    const { timer } = valid();
    const drops: TimerDrop[] = [];
    const clock = { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} };
    const open = new EntityTimers(clock, (d) => drops.push(d), {
      ...DEFAULT_TIMER_LIMITS,
      maxTimers: Number.POSITIVE_INFINITY,
      maxEventNodes: Number.POSITIVE_INFINITY,
    });
    const many = Array.from({ length: DEFAULT_TIMER_LIMITS.maxTimers + 1 }, () => timer);
    const large = [
      {
        ...timer,
        event: { type: 'x', pad: Array.from({ length: DEFAULT_TIMER_LIMITS.maxEventNodes }, () => 1) },
      },
    ];
    for (const field of [many, large])
      expect(
        (open.arrived(ID, { value: 'open', [TIMERS_FIELD]: field }) as Record<string, unknown>)[TIMERS_FIELD],
      ).toEqual(field);
    expect(drops).toEqual([]);
  });
});
