// A caller-runs drain (dispatcher.ts, `drainNow`) runs every `drainBacklogAt` sends of a burst from
// outside any actor: at 32 queued messages (issue 31: at 512, queued machine messages outlived
// young-generation collections and cost ~5 % of all threads' CPU), so the drain itself must cost next
// to nothing. A drain that takes one actor's backlog in one batch reads no clock, and once the
// microtask window's time is spent the next sends do not read it again until the event loop turns.
// The budget still holds: a drain that goes on to other actors stops within maxTurnMs of its second
// batch. Each test has a control showing the clock reads it counts do happen.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  Dispatcher,
  type DispatcherConfig,
  defaultDispatcherConfig,
} from '../../packages/core/src/dispatcher.js';
import { FakeClock, HeldTurns, QueuedWork } from '../support/dispatcher-fakes.js';

/** Queued work whose every batch takes `msPerBatch` of fake time. */
const timedWork = (clock: FakeClock, msPerBatch = 0) =>
  new QueuedWork(() => {
    clock.ms += msPerBatch;
  });

afterEach(() => {
  vi.restoreAllMocks();
});

function dispatcher(clock: FakeClock, config: Partial<DispatcherConfig> = {}): Dispatcher {
  clock.install();
  return new Dispatcher(new HeldTurns(), { ...defaultDispatcherConfig, microtaskTurns: false, ...config });
}

describe('dispatcher: the caller-runs drain costs next to nothing', () => {
  it('a drain that takes one actor’s backlog in one batch reads no clock', () => {
    const clock = new FakeClock();
    const d = dispatcher(clock);
    const counter = timedWork(clock);
    for (let burst = 0; burst < 100; burst++) {
      counter.work += 32;
      d.schedule(counter);
      d.drainNow();
    }
    expect(counter.processed).toBe(3_200);
    expect(clock.reads).toBe(0);
  });

  it('control: a drain that goes on to a second batch reads the clock between batches', () => {
    const clock = new FakeClock();
    const d = dispatcher(clock);
    const a = timedWork(clock);
    const b = timedWork(clock);
    a.work = 10;
    b.work = 10;
    d.schedule(a);
    d.schedule(b);
    d.drainNow();
    expect(a.processed + b.processed).toBe(20);
    expect(clock.reads).toBe(1);
  });

  it('a drain that goes on to other actors stops within maxTurnMs of its second batch', () => {
    const clock = new FakeClock();
    const d = dispatcher(clock, { maxTurnMs: 4 });
    const counters = Array.from({ length: 6 }, () => timedWork(clock, 3));
    for (const c of counters) {
      c.work = 10;
      d.schedule(c);
    }
    d.drainNow();
    // first batch (not counted), then the clock starts: 3 ms, then 6 ms ≥ 4 ends the drain
    expect(counters.filter((c) => c.processed > 0)).toHaveLength(3);
    expect(d.idle).toBe(false);
  });

  it('control: without the bound the same drain runs every actor', () => {
    const clock = new FakeClock();
    const d = dispatcher(clock, { maxTurnMs: Number.POSITIVE_INFINITY });
    const counters = Array.from({ length: 6 }, () => timedWork(clock, 3));
    for (const c of counters) {
      c.work = 10;
      d.schedule(c);
    }
    d.drainNow();
    expect(counters.every((c) => c.processed === 10)).toBe(true);
    expect(d.idle).toBe(true);
  });

  it('a turn from the scheduler still counts its budget from its start', () => {
    const clock = new FakeClock();
    clock.install();
    const scheduler = new HeldTurns();
    const d = new Dispatcher(scheduler, { ...defaultDispatcherConfig, microtaskTurns: false, maxTurnMs: 4 });
    const counters = Array.from({ length: 6 }, () => timedWork(clock, 3));
    for (const c of counters) {
      c.work = 10;
      d.schedule(c);
    }
    scheduler.queued.shift()!();
    // 3 ms, then 6 ms ≥ 4: two batches, one fewer than a drain runs
    expect(counters.filter((c) => c.processed > 0)).toHaveLength(2);
  });

  it('once the microtask window is spent, sends read no clock until the event loop turns', async () => {
    const clock = new FakeClock();
    clock.install();
    const scheduler = new HeldTurns();
    const d = new Dispatcher(scheduler, { ...defaultDispatcherConfig, microtaskTurns: true, maxTurnMs: 1 });
    const counter = timedWork(clock);
    const burst = () => {
      for (let i = 0; i < 100; i++) {
        counter.work += 32;
        d.schedule(counter);
        clock.ms += 1;
        d.drainNow();
      }
    };
    burst();
    // one read opens the window, the next finds it spent; the other 98 sends read nothing
    expect(clock.reads).toBe(2);
    // control: the microtask turn the first send queued reads the clock as it starts, and once the
    // event loop has turned (the turn the spent window handed to the scheduler ran, reading the
    // clock as it starts) the next send opens a new window and reads again (then finds it spent)
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.reads).toBe(3);
    burst();
    expect(clock.reads).toBe(3);
    expect(scheduler.queued).toHaveLength(1);
    scheduler.queued.shift()!();
    expect(clock.reads).toBe(4);
    burst();
    expect(clock.reads).toBe(6);
    expect(counter.processed).toBe(9_600);
  });
});
