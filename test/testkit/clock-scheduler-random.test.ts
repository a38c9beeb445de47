import { describe, expect, it } from 'vitest';
import { createActor, createMachine } from 'xstate';
import { ManualScheduler, SeededRandom, Simulation, VirtualClock } from '../../packages/testkit/src/index.js';

describe('VirtualClock', () => {
  it('runs timers in (due time, insertion) order and moves now to each due time', () => {
    const clock = new VirtualClock();
    const ran: string[] = [];
    clock.setTimeout(() => ran.push(`c@${clock.now()}`), 20);
    clock.setTimeout(() => ran.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => ran.push(`b@${clock.now()}`), 10);
    clock.setTimeout(() => ran.push(`z@${clock.now()}`), 0);
    expect(clock.runNext(5)).toBe(true);
    expect(clock.runNext(5)).toBe(false);
    expect(clock.now()).toBe(0);
    clock.advance(100);
    expect(ran).toEqual(['z@0', 'a@10', 'b@10', 'c@20']);
    expect(clock.now()).toBe(100);
  });

  it('starts at the given epoch and runs timers set by timers within the same advance', () => {
    const clock = new VirtualClock(1_000);
    const ran: number[] = [];
    clock.setTimeout(() => {
      ran.push(clock.now());
      clock.setTimeout(() => ran.push(clock.now()), 5);
    }, 5);
    clock.advance(10);
    expect(ran).toEqual([1_005, 1_010]);
  });

  it('clearTimeout cancels a pending timer and ignores unknown ids', () => {
    const clock = new VirtualClock();
    const ran: string[] = [];
    const a = clock.setTimeout(() => ran.push('a'), 10);
    clock.setTimeout(() => ran.push('b'), 10);
    clock.clearTimeout(a);
    clock.clearTimeout(12345);
    expect(clock.pending).toBe(1);
    expect(clock.nextDue()).toBe(10);
    clock.advance(10);
    expect(ran).toEqual(['b']);
    expect(clock.pending).toBe(0);
  });

  it('drives an xstate `after` delay: the machine moves exactly when 1000 ms have passed', () => {
    const machine = createMachine({
      initial: 'waiting',
      states: { waiting: { after: { 1000: 'done' } }, done: {} },
    });
    const clock = new VirtualClock();
    const actor = createActor(machine, { clock }).start();
    clock.advance(999);
    expect(actor.getSnapshot().value).toBe('waiting');
    clock.advance(1);
    expect(actor.getSnapshot().value).toBe('done');
    actor.stop();
  });

  it('drives `after` delays of actors spawned in a simulated ActorSystem', async () => {
    const sim = new Simulation({ seed: 1 });
    const system = sim.addSystem({ cluster: 't', host: '10.0.0.1', port: 2552 });
    const machine = createMachine({
      initial: 'waiting',
      states: { waiting: { after: { 1000: 'done' } }, done: {} },
    });
    const ref = system.spawn(machine, { name: 'timer' });
    await sim.runFor(999);
    expect((system.snapshotOf(ref) as { value: string }).value).toBe('waiting');
    await sim.runFor(1);
    expect((system.snapshotOf(ref) as { value: string }).value).toBe('done');
    sim.shutdown();
  });
});

describe('ManualScheduler', () => {
  it('runs turns in order, including turns scheduled by turns', () => {
    const scheduler = new ManualScheduler();
    const ran: number[] = [];
    scheduler.schedule(() => {
      ran.push(1);
      scheduler.schedule(() => ran.push(3));
    });
    scheduler.schedule(() => ran.push(2));
    expect(scheduler.pending).toBe(2);
    expect(scheduler.runAll()).toBe(3);
    expect(ran).toEqual([1, 2, 3]);
    expect(scheduler.pending).toBe(0);
  });
});

describe('SeededRandom', () => {
  it('is reproducible from its seed and differs across seeds', () => {
    const draw = (seed: number) => {
      const r = new SeededRandom(seed);
      return Array.from({ length: 8 }, () => r.next());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
    for (const x of draw(9)) expect(x >= 0 && x < 1).toBe(true);
  });

  it('int, pick and shuffle stay in range', () => {
    const r = new SeededRandom(3);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(r.int(5));
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4]);
    expect(['a', 'b', 'c']).toContain(r.pick(['a', 'b', 'c']));
    expect(r.shuffle([1, 2, 3, 4]).sort()).toEqual([1, 2, 3, 4]);
    expect(() => r.int(0)).toThrow(RangeError);
    expect(() => r.pick([])).toThrow(RangeError);
  });

  it('fork gives independent streams that do not depend on draws made so far', () => {
    const a = new SeededRandom(11);
    const b = new SeededRandom(11);
    b.next();
    b.next();
    expect(a.fork('net').next()).toBe(b.fork('net').next());
    expect(a.fork('net').next()).not.toBe(a.fork('disk').next());
  });
});
