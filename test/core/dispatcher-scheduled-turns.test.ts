// A turn handed to the scheduler covers everything made ready until it runs (dispatcher.ts,
// `schedulerTurnPending`): a caller-runs drain (`drainNow`) working the ready queue off before that
// turn comes must not make the next sends queue another one. A burst of a million tells used to
// leave one setImmediate per drain alive until the sender returned (thousands of handles the
// young-generation collections copied and promoted). The positive control shows the sequence does
// reach the scheduler again once the queued turn has run.
import { describe, expect, it } from 'vitest';
import { Dispatcher, defaultDispatcherConfig } from '../../packages/core/src/dispatcher.js';
import { QueuedWork as Counter, HeldTurns } from '../support/dispatcher-fakes.js';

const config = { ...defaultDispatcherConfig, microtaskTurns: false };

describe('dispatcher: one scheduler turn pending at a time', () => {
  it('drains on the caller stack many times while one scheduled turn is pending: the scheduler sees one turn', () => {
    const scheduler = new HeldTurns();
    const dispatcher = new Dispatcher(scheduler, config);
    const counter = new Counter();
    for (let burst = 0; burst < 100; burst++) {
      counter.work += 10;
      dispatcher.schedule(counter);
      dispatcher.drainNow();
      expect(counter.work).toBe(0);
    }
    expect(counter.processed).toBe(1_000);
    expect(scheduler.queued).toHaveLength(1);
  });

  it('work made ready after a drain is still run by the pending turn', () => {
    const scheduler = new HeldTurns();
    const dispatcher = new Dispatcher(scheduler, config);
    const counter = new Counter();
    counter.work = 5;
    dispatcher.schedule(counter);
    dispatcher.drainNow();
    counter.work = 7;
    dispatcher.schedule(counter);
    expect(scheduler.queued).toHaveLength(1);
    scheduler.runAll();
    expect(counter.processed).toBe(12);
    expect(dispatcher.idle).toBe(true);
  });

  it('positive control: once the pending turn has run, new work is handed to the scheduler again', () => {
    const scheduler = new HeldTurns();
    const dispatcher = new Dispatcher(scheduler, config);
    const counter = new Counter();
    let handedOver = 0;
    for (let round = 0; round < 3; round++) {
      counter.work = 3;
      dispatcher.schedule(counter);
      handedOver += scheduler.queued.length;
      scheduler.runAll();
      expect(counter.work).toBe(0);
    }
    expect(handedOver).toBe(3);
  });

  it('a turn cut short by maxPerTurn hands the rest to the scheduler once', () => {
    const scheduler = new HeldTurns();
    const dispatcher = new Dispatcher(scheduler, { ...config, maxPerTurn: 10, throughput: 5 });
    const counter = new Counter();
    counter.work = 25;
    dispatcher.schedule(counter);
    dispatcher.drainNow();
    expect(counter.processed).toBe(10);
    expect(scheduler.queued).toHaveLength(1);
    scheduler.runOne();
    expect(counter.processed).toBe(20);
    expect(scheduler.queued).toHaveLength(1);
    scheduler.runOne();
    expect(counter.processed).toBe(25);
    expect(scheduler.queued).toHaveLength(0);
  });
});
