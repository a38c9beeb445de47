import { afterEach, describe, expect, it } from 'vitest';
import { createActor, type InspectionEvent, fromTransition as xstateFromTransition } from 'xstate';
import { type ActorSystem, fromTransition, type Message, reducerOf } from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';
import { terminationsOf } from '../support/terminations.js';

const makeSystem = makeCoreSystem;

type Add = Message & { by?: number };
const adder = (s: { total: number }, e: Add) => ({ total: s.total + (e.by ?? 1) });

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

describe('transition logic on the fast path', () => {
  it("recognises xstate's and doyen's fromTransition; a reducer that wants the actor scope is left to xstate", () => {
    expect(reducerOf(xstateFromTransition(adder, { total: 0 }))).toBe(adder);
    expect(reducerOf(fromTransition(adder, { total: 0 }))).toBe(adder);
    const withScope = (s: number, _e: Message, _scope: unknown) => s;
    expect(reducerOf(xstateFromTransition(withScope, 0))).toBeUndefined();
    // doyen's wrapper is still xstate logic
    const actor = createActor(fromTransition(adder, { total: 1 })).start();
    actor.send({ type: 'add', by: 2 });
    expect(actor.getSnapshot().context).toEqual({ total: 3 });
  });

  it('calls the reducer directly (no xstate actor scope), the xstate path passes one: same results', () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const fastArgs: number[] = [];
    const slowScopes: unknown[] = [];
    const fast = system.spawn(
      xstateFromTransition((...args: [number, Message]) => {
        fastArgs.push(args.length);
        return args[0] + 1;
      }, 0),
      { name: 'fast' },
    );
    const slow = system.spawn(
      xstateFromTransition((s: number, _e: Message, scope: { self?: unknown }) => {
        slowScopes.push(scope.self);
        return s + 1;
      }, 0),
      { name: 'slow' },
    );
    for (let i = 0; i < 3; i++) {
      fast.send({ type: 'x' });
      slow.send({ type: 'x' });
    }
    scheduler.runAll();
    expect(fastArgs).toEqual([2, 2, 2]);
    // positive control: through xstate's actor the reducer gets the scope with `self`
    expect(slowScopes).toHaveLength(3);
    expect(slowScopes[0]).toBeDefined();
    expect(system.snapshotOf(fast)).toEqual(system.snapshotOf(slow));
    expect(system.snapshotOf(fast)).toEqual({
      status: 'active',
      output: undefined,
      error: undefined,
      context: 3,
    });
  });

  it('emits the inspection events an xstate actor would, only while an inspector is attached', () => {
    const events: InspectionEvent[] = [];
    const { system, scheduler } = makeSystem({ inspect: (e) => events.push(e) });
    current = system;
    const fast = system.spawn(fromTransition(adder, { total: 0 }), { name: 'fast' });
    fast.send({ type: 'add', by: 2 });
    fast.send({ type: 'add', by: 3 });
    scheduler.runAll();
    const ofFast = events.filter((e) => (e.actorRef as { id?: string }).id === '/user/fast');
    expect(ofFast.map((e) => [e.type, 'event' in e ? e.event.type : undefined])).toEqual([
      ['@xstate.actor', undefined],
      ['@xstate.event', 'xstate.init'],
      ['@xstate.snapshot', 'xstate.init'],
      ['@xstate.event', 'add'],
      ['@xstate.snapshot', 'add'],
      ['@xstate.event', 'add'],
      ['@xstate.snapshot', 'add'],
    ]);
    const last = ofFast.at(-1) as InspectionEvent & { snapshot: { context: unknown } };
    expect(last.snapshot.context).toEqual({ total: 5 });
    expect(last.rootId).toBe(last.actorRef.sessionId);
    expect(last.actorRef.getSnapshot()).toBe(last.snapshot);

    // positive control: the same logic through xstate's own actor emits the same sequence
    const xstateEvents: InspectionEvent[] = [];
    const actor = createActor(xstateFromTransition(adder, { total: 0 }), {
      id: '/user/fast',
      inspect: (e) => xstateEvents.push(e),
    }).start();
    actor.send({ type: 'add', by: 2 });
    actor.send({ type: 'add', by: 3 });
    expect(xstateEvents.map((e) => [e.type, 'event' in e ? e.event.type : undefined])).toEqual(
      ofFast.map((e) => [e.type, 'event' in e ? e.event.type : undefined]),
    );
    expect((xstateEvents.at(-1) as { snapshot: unknown }).snapshot).toEqual(last.snapshot);
  });

  it('produces snapshots for subscribers only while they listen', () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const ref = system.spawn(fromTransition(adder, { total: 0 }), { name: 'a' });
    const seen: unknown[] = [];
    const unsubscribe = system.subscribeSnapshots(ref, (s) => seen.push((s as { context: unknown }).context));
    ref.send({ type: 'add' });
    ref.send({ type: 'add' });
    scheduler.runAll();
    expect(seen).toEqual([{ total: 1 }, { total: 2 }]);
    unsubscribe();
    ref.send({ type: 'add' });
    scheduler.runAll();
    expect(seen).toHaveLength(2);
    expect(system.snapshotOf(ref)).toMatchObject({ context: { total: 3 } });
  });

  it('hands over: the persisted snapshot resumes in a new actor, and in an xstate actor too', () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const logic = fromTransition(adder, { total: 0 });
    const first = system.spawn(logic, { name: 'first' });
    first.send({ type: 'add', by: 40 });
    scheduler.runAll();
    const persisted = system.persistedSnapshotOf(first);
    expect(persisted).toEqual({
      status: 'active',
      output: undefined,
      error: undefined,
      context: { total: 40 },
    });
    const second = system.spawn(logic, { name: 'second', snapshot: JSON.parse(JSON.stringify(persisted)) });
    second.send({ type: 'add', by: 2 });
    scheduler.runAll();
    expect(system.snapshotOf(second)).toMatchObject({ context: { total: 42 } });
    const actor = createActor(logic, { snapshot: persisted as never }).start();
    expect(actor.getSnapshot().context).toEqual({ total: 40 });
  });

  it('takes input for its initial state, computed again on each restart', () => {
    const { system, clock, scheduler } = makeSystem();
    current = system;
    let inputs = 0;
    const ref = system.spawn(
      fromTransition(
        (s: number, e: Message) => {
          if (e.type === 'boom') throw new Error('boom');
          return s + 1;
        },
        ({ input }: { input: number }) => input,
      ),
      { name: 'in', inputFrom: () => 100 + inputs++ },
    );
    ref.send({ type: 'x' });
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: 101 });
    ref.send({ type: 'boom' });
    scheduler.runAll();
    // backing off: no snapshot, like a failed xstate actor
    expect(system.snapshotOf(ref)).toBeUndefined();
    clock.increment(100);
    expect(system.snapshotOf(ref)).toMatchObject({ context: 101 });
  });

  it('a throwing reducer is supervised as before: restarts, then stops after too many failures', () => {
    const { system, clock, scheduler } = makeSystem();
    current = system;
    const ref = system.spawn(
      fromTransition((s: number, e: Message) => {
        if (e.type === 'boom') throw new Error('boom');
        return s + 1;
      }, 0),
      {
        name: 'fragile',
        supervision: {
          kind: 'restart',
          minBackoffMs: 10,
          maxBackoffMs: 10,
          randomFactor: 0,
          maxRestarts: 1,
          withinMs: 60_000,
        },
      },
    );
    const terminated = terminationsOf(system, ref);
    ref.send({ type: 'inc' });
    ref.send({ type: 'boom' });
    ref.send({ type: 'inc' });
    scheduler.runAll();
    expect(system.metrics.value('doyen_actor_failures_total', { decision: 'restart' })).toBe(1);
    clock.increment(10);
    scheduler.runAll();
    // restarted from the initial state, then processed the message that waited
    expect(system.snapshotOf(ref)).toMatchObject({ context: 1 });
    ref.send({ type: 'boom' });
    scheduler.runAll();
    expect(terminated.map((t) => t.reason)).toEqual(['failed']);
    expect(system.lookup('/user/fragile')).toBeUndefined();
  });
});
