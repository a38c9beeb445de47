// A turn reads the clock for its time budget once per CLOCK_EVERY (8) batches or messages, not after
// every batch (dispatcher.ts, issue 29): when a wire batch brings one message each to many actors
// (1,000 entities), a read per batch was a read per message. What must hold: the reads fall to one
// per 8 such batches, a turn of one-message batches still ends on its budget (at most 7 batches
// late), a batch of 8 or more messages is still followed by a read, and actors that process nothing
// (a gate refusing their turn) cannot keep a turn going. Each has a control.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dispatcher, defaultDispatcherConfig } from '../../packages/core/src/dispatcher.js';
import { FakeClock, HeldTurns, QueuedWork } from '../support/dispatcher-fakes.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A scheduler turn over `actors` runnables of `work` messages each, every batch taking `msPerBatch`. */
function turnOver(actors: number, work: number, maxTurnMs: number, msPerBatch = 0) {
  const clock = new FakeClock();
  clock.install();
  const scheduler = new HeldTurns();
  const d = new Dispatcher(scheduler, { ...defaultDispatcherConfig, microtaskTurns: false, maxTurnMs });
  const runnables = Array.from({ length: actors }, () => {
    const r = new QueuedWork(() => {
      clock.ms += msPerBatch;
    });
    r.work = work;
    return r;
  });
  for (const r of runnables) d.schedule(r);
  scheduler.queued.shift()!();
  return { clock, d, runnables };
}

describe('dispatcher: the clock read per turn of many one-message actors', () => {
  it('64 actors with one message each: the turn reads the clock 1 + 7 times, not 64', () => {
    const { clock, runnables } = turnOver(64, 1, 4);
    expect(runnables.every((r) => r.processed === 1)).toBe(true);
    // at its start, then after every 8th batch but the last (the turn ends with nothing ready)
    expect(clock.reads).toBe(8);
  });

  it('control: batches of 8 messages each are followed by a read each, as before', () => {
    const { clock, runnables } = turnOver(64, 8, 4);
    expect(runnables.every((r) => r.processed === 8)).toBe(true);
    expect(clock.reads).toBe(64);
  });

  it('a turn of one-message batches still ends on its budget, at most 7 batches late', () => {
    // each batch takes 1 ms against a budget of 4 ms: the 8th batch's read finds 8 ms and ends the turn
    const { d, runnables } = turnOver(64, 1, 4, 1);
    expect(runnables.filter((r) => r.processed > 0)).toHaveLength(8);
    expect(d.idle).toBe(false);
  });

  it('control: without the budget the same turn runs every actor', () => {
    const { d, runnables } = turnOver(64, 1, Number.POSITIVE_INFINITY, 1);
    expect(runnables.every((r) => r.processed === 1)).toBe(true);
    expect(d.idle).toBe(true);
  });

  it('actors that process nothing (a refused gate) cannot hold a turn: it ends on the clock', () => {
    const clock = new FakeClock();
    clock.install();
    const scheduler = new HeldTurns();
    const d = new Dispatcher(scheduler, { ...defaultDispatcherConfig, microtaskTurns: false, maxTurnMs: 4 });
    // work queued, every turn refused (as a closed gate does), each refusal taking 1 ms
    const refused = Array.from({ length: 3 }, () => ({
      scheduled: false,
      batches: 0,
      runBatch(): number {
        this.batches++;
        clock.ms += 1;
        return 0;
      },
      hasWork: () => true,
    }));
    for (const r of refused) d.schedule(r);
    scheduler.queued.shift()!();
    // read every 8 batches: the read after the 8th finds 8 ms ≥ 4 and the turn ends
    expect(refused.reduce((n, r) => n + r.batches, 0)).toBe(8);
    // control: the turn handed the rest to the scheduler, which runs it next
    expect(scheduler.queued).toHaveLength(1);
  });
});
