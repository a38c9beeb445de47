// The dispatcher's microtask window (dispatcher.ts, `microtaskTurns`) ends by the clock, not by a
// setImmediate armed as it opens: at a steady low rate of asks every ask is a wake-up of its own, and
// that immediate was one more hop through Node's check phase per ask (issue 29). A window lasts
// `maxTurnMs`; then turns go to the scheduler until one of its turns ran (the event loop came round)
// or another `maxTurnMs` passed, so the bound on how long microtask turns hold I/O stays.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dispatcher, defaultDispatcherConfig } from '../../packages/core/src/dispatcher.js';
import { HeldTurns, QueuedWork as Work } from '../support/dispatcher-fakes.js';

let now = 0;
afterEach(() => vi.restoreAllMocks());

function setup() {
  now = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
  const immediate = vi.spyOn(globalThis, 'setImmediate');
  const scheduler = new HeldTurns();
  const dispatcher = new Dispatcher(scheduler, {
    ...defaultDispatcherConfig,
    microtaskTurns: true,
    maxTurnMs: 4,
  });
  const work = new Work();
  const send = () => {
    work.work++;
    dispatcher.schedule(work);
  };
  return { immediate, scheduler, work, send };
}

const microtasks = async () => {
  await Promise.resolve();
  await Promise.resolve();
};

describe('dispatcher: the microtask window ends by the clock', () => {
  it('sends from outside at a steady low rate each get a microtask turn, and no setImmediate is armed', async () => {
    const { immediate, scheduler, work, send } = setup();
    for (let i = 0; i < 10; i++) {
      send();
      await microtasks();
      expect(work.processed).toBe(i + 1);
      now += 10; // 1 ask each 10 ms: each window long over when the next one comes
    }
    expect(scheduler.queued).toHaveLength(0);
    expect(immediate).not.toHaveBeenCalled();
  });

  it('control: once a window is used up, the next sends wait for the scheduler until the loop came round', async () => {
    const { scheduler, work, send } = setup();
    send();
    await microtasks();
    expect(work.processed).toBe(1);
    now = 5; // past the window's 4 ms, within the 4 ms after it: spent
    send();
    await microtasks();
    expect(work.processed).toBe(1);
    expect(scheduler.queued).toHaveLength(1);
    now = 100; // long after, but spent stays spent until a scheduler turn ran
    send();
    await microtasks();
    expect(work.processed).toBe(1);
    scheduler.queued.shift()!();
    expect(work.processed).toBe(3);
    // the loop came round: the next send opens a window again
    send();
    await microtasks();
    expect(work.processed).toBe(4);
    expect(scheduler.queued).toHaveLength(0);
  });
});
