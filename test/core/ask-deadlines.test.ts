import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition, SimulatedClock } from 'xstate';
import {
  type ActorRef,
  type ActorSystem,
  AskTimeoutError,
  type Message,
} from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

function makeSystem() {
  const clock = new SimulatedClock();
  let timers = 0;
  const counting = {
    setTimeout: (fn: () => void, ms: number) => {
      timers++;
      return clock.setTimeout(fn, ms);
    },
    clearTimeout: (id: unknown) => clock.clearTimeout(id as never),
    now: () => clock.now(),
  };
  const { system, scheduler } = makeCoreSystem({ clock: counting });
  current = system;
  return { system, clock, scheduler, timers: () => timers };
}

type Q = Message & { replyTo: ActorRef; answer: boolean };

describe('ask deadlines (no timer per ask)', () => {
  it('answered asks settle, unanswered ones time out at their own deadline, whatever the order of timeouts', async () => {
    const { system, clock, scheduler, timers } = makeSystem();
    const echo = system.spawn(
      fromTransition((s: number, e: Q) => {
        if (e.answer) e.replyTo.send({ type: 'a' });
        return s;
      }, 0),
      { name: 'echo' },
    );
    // many sequential answered asks: none of them may fire later
    for (let i = 0; i < 3000; i++) {
      const p = echo.ask((replyTo) => ({ type: 'q', replyTo, answer: true }), { timeout: 100 });
      scheduler.runAll();
      await expect(p).resolves.toEqual({ type: 'a' });
    }
    // one timer for the lane of 100 ms asks, not one per ask
    expect(timers()).toBe(1);
    const outcome: string[] = [];
    const long = echo.ask((replyTo) => ({ type: 'q', replyTo, answer: false }), { timeout: 100 });
    const short = echo.ask((replyTo) => ({ type: 'q', replyTo, answer: false }), { timeout: 50 });
    const answered = echo.ask((replyTo) => ({ type: 'q', replyTo, answer: true }), { timeout: 50 });
    for (const [name, p] of [
      ['long', long],
      ['short', short],
      ['answered', answered],
    ] as const)
      p.then(
        () => outcome.push(`${name}:ok`),
        (e) => outcome.push(`${name}:${e instanceof AskTimeoutError ? 'timeout' : 'other'}`),
      );
    scheduler.runAll();
    await Promise.resolve();
    await Promise.resolve();
    expect(outcome).toEqual(['answered:ok']);
    clock.increment(49);
    await Promise.resolve();
    expect(outcome).toEqual(['answered:ok']);
    clock.increment(1);
    await Promise.resolve();
    expect(outcome).toEqual(['answered:ok', 'short:timeout']);
    clock.increment(50);
    await Promise.resolve();
    expect(outcome).toEqual(['answered:ok', 'short:timeout', 'long:timeout']);
  });
});
