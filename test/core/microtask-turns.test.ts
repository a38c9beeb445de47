// Work queued from outside any turn gets its dispatcher turn in a microtask (dispatcher.ts,
// `microtaskTurns`), so an ask from outside is answered without waiting an event-loop iteration,
// and such turns are bounded: within maxTurnMs of them the event loop gets its iteration, so a
// caller asking in a loop cannot starve I/O and timers. The positive control lifts the bound.
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import {
  type ActorRef,
  ActorSystem,
  type ActorSystemConfig,
  type Message,
} from '../../packages/core/src/index.js';

type Ping = { type: 'ping'; n: number; replyTo: ActorRef<Pong> };
type Pong = { type: 'pong'; n: number };

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

function echoSystem(extra: Partial<ActorSystemConfig> = {}) {
  const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1, ...extra });
  current = system;
  const echo = system.spawn(
    fromTransition((count: number, event: Message) => {
      const ping = event as Ping;
      ping.replyTo.send({ type: 'pong', n: ping.n });
      return count + 1;
    }, 0),
    { name: 'echo' },
  );
  const ask = (n: number) =>
    echo.ask<Pong>((replyTo) => ({ type: 'ping', n, replyTo }) as Message, { timeout: 5_000 });
  return { system, echo, ask };
}

/** How many sequential asks run before a setImmediate queued first gets to run (at most `cap`). */
async function asksBeforeTheLoopTurns(ask: (n: number) => Promise<Pong>, cap: number): Promise<number> {
  let immediateRan = false;
  setImmediate(() => {
    immediateRan = true;
  });
  let n = 0;
  while (!immediateRan && n < cap) {
    const pong = await ask(n);
    expect(pong.n).toBe(n);
    n++;
  }
  return n;
}

describe('microtask turns for work queued from outside any turn', () => {
  it('a tell from outside is processed before the event loop turns, still after the sender returns', async () => {
    const { system, echo } = echoSystem();
    const sink: number[] = [];
    const counter = system.spawn(
      fromTransition((n: number) => {
        sink.push(n);
        return n + 1;
      }, 0),
      { name: 'counter' },
    );
    counter.send({ type: 'inc' });
    // asynchronous, as a tell is: nothing ran on the sender's stack
    expect(sink).toEqual([]);
    await Promise.resolve();
    await Promise.resolve();
    expect(sink).toEqual([0]);
    expect(echo.path).toBe('/user/echo');
  });

  it('turned off (or with a scheduler of its own), the turn waits for the event loop', async () => {
    const { system } = echoSystem({ dispatcher: { microtaskTurns: false } });
    const sink: number[] = [];
    const counter = system.spawn(
      fromTransition((n: number) => {
        sink.push(n);
        return n + 1;
      }, 0),
      { name: 'counter' },
    );
    counter.send({ type: 'inc' });
    await Promise.resolve();
    await Promise.resolve();
    expect(sink).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink).toEqual([0]);
  });

  it('asks in a loop from outside cannot starve the event loop: it turns within maxTurnMs of them', async () => {
    const { ask } = echoSystem({ dispatcher: { maxTurnMs: 2 } });
    const cap = 200_000;
    const started = performance.now();
    const n = await asksBeforeTheLoopTurns(ask, cap);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(cap);
    // one window of 2 ms, and the asks in flight when it closed (generous: a loaded machine)
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('positive control: without the bound, the same loop holds the event loop for all its asks', async () => {
    const { ask } = echoSystem({ dispatcher: { maxTurnMs: Number.POSITIVE_INFINITY } });
    const cap = 5_000;
    expect(await asksBeforeTheLoopTurns(ask, cap)).toBe(cap);
  });
});
