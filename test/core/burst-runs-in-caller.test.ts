// A burst of tells from outside any actor is worked off in the caller (dispatcher.ts, `drainBurst` and
// `runInCaller`): once the backlog reached `drainBacklogAt` and a turn ran, the sender's next sends in
// the same task hand their message to the actor at once instead of queueing it (issue 31: queued
// messages outlived young-generation collections). What must not change: a single tell is still
// asynchronous, the burst ends with the sender's task, order per sender holds (also for an actor's
// sends to itself), another actor waiting keeps its turn first, a pipeline's next stage is drained
// with the burst, failures are supervised, inspection sees every message, and an ask answered in the
// caller settles. The positive control turns the drain off: then nothing runs on the sender's stack.
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition, type InspectionEvent } from 'xstate';
import {
  type ActorRef,
  ActorSystem,
  type ActorSystemConfig,
  defaultDispatcherConfig,
  type Message,
} from '../../packages/core/src/index.js';

type Numbered = { type: string; n: number };

/** A depth below the default (512), so a burst of a hundred or so reaches it; the rule is the same at any depth. */
const DRAIN_AT = Math.min(32, defaultDispatcherConfig.drainBacklogAt);

let current: ActorSystem | undefined;
afterEach(() => {
  current?.terminate();
  current = undefined;
});

function makeSystem(extra: Partial<ActorSystemConfig> = {}): ActorSystem {
  current = new ActorSystem({
    cluster: 'test',
    host: '127.0.0.1',
    port: 1,
    ...extra,
    dispatcher: { drainBacklogAt: DRAIN_AT, ...extra.dispatcher },
  });
  return current;
}

/** An actor that records the `n` of every message it processes, in order. */
function recorder(system: ActorSystem, name: string, log: (string | number)[]) {
  return system.spawn(
    fromTransition((count: number, event: Message) => {
      log.push((event as Numbered).n);
      return count + 1;
    }, 0),
    { name },
  );
}

/** Sends `count` messages from this (non-actor) caller; returns how many were processed before their send returned. */
function burst(ref: ActorRef, count: number, processed: () => number, from = 0): number {
  let inCaller = 0;
  for (let i = from; i < from + count; i++) {
    const before = processed();
    ref.send({ type: 'inc', n: i } as Message);
    if (processed() > before && processed() === i + 1) inCaller++;
  }
  return inCaller;
}

const settle = async (system: ActorSystem) => {
  for (let i = 0; i < 100 && !system.idle; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('a burst from outside any actor runs in the caller once the drain depth is reached', () => {
  it('each send after the drain is processed before it returns, in order; the mailbox stays empty', async () => {
    const system = makeSystem();
    const log: (string | number)[] = [];
    const ref = recorder(system, 'counter', log);
    const inCaller = burst(ref, 1_000, () => log.length);
    // the first DRAIN_AT - 1 queue (the tell is asynchronous), the next send's drain works them off with
    // its own, the rest run in the caller
    expect(inCaller).toBe(1_000 - (DRAIN_AT - 1));
    expect(system.mailboxSize(ref)).toBe(0);
    expect(log).toEqual(Array.from({ length: 1_000 }, (_, i) => i));
  });

  it('positive control: with the drain off, nothing runs on the sender’s stack', async () => {
    const system = makeSystem({ dispatcher: { drainBacklogAt: 0 } });
    const log: (string | number)[] = [];
    const ref = recorder(system, 'counter', log);
    expect(burst(ref, 1_000, () => log.length)).toBe(0);
    expect(log).toEqual([]);
    await settle(system);
    expect(log).toHaveLength(1_000);
  });

  it('the burst ends with the sender’s task: the next single tell is asynchronous again', async () => {
    const system = makeSystem();
    const log: (string | number)[] = [];
    const ref = recorder(system, 'counter', log);
    burst(ref, 100, () => log.length);
    expect(log).toHaveLength(100);
    await Promise.resolve();
    ref.send({ type: 'inc', n: 100 } as Message);
    expect(log).toHaveLength(100);
    await settle(system);
    expect(log).toHaveLength(101);
  });

  it('an actor sending to itself keeps each sender’s order, and every message is processed once', async () => {
    const system = makeSystem();
    const log: string[] = [];
    let incs = 0;
    let self: ActorRef | undefined;
    self = system.spawn(
      fromTransition((count: number, event: Message) => {
        const { type, n } = event as Numbered;
        log.push(`${type}:${n}`);
        if (type === 'inc') incs++;
        if (type === 'inc' && n % 10 === 0) self!.send({ type: 'echo', n } as Message);
        return count + 1;
      }, 0),
      { name: 'echoer' },
    );
    const inCaller = burst(self, 500, () => incs);
    await settle(system);
    expect(inCaller).toBeGreaterThan(0);
    const incOrder = log.filter((e) => e.startsWith('inc:')).map((e) => Number(e.slice(4)));
    const echoes = log.filter((e) => e.startsWith('echo:')).map((e) => Number(e.slice(5)));
    expect(incOrder).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(echoes).toEqual(Array.from({ length: 50 }, (_, i) => i * 10));
    for (const n of echoes) expect(log.indexOf(`echo:${n}`)).toBeGreaterThan(log.indexOf(`inc:${n}`));
  });

  it('another actor with work waiting has its turn before the burst goes on in the caller', () => {
    const system = makeSystem();
    const log: (string | number)[] = [];
    const a = recorder(system, 'a', log);
    const b = recorder(system, 'b', log);
    burst(a, 100, () => log.length);
    expect(log).toHaveLength(100);
    b.send({ type: 'inc', n: -1 } as Message);
    // b now waits for its turn: a's next messages queue behind it rather than overtake it
    burst(a, DRAIN_AT, () => log.length, 100);
    expect(log.indexOf(-1)).toBeGreaterThan(-1);
    expect(log.indexOf(-1)).toBeLessThan(log.indexOf(100));
  });

  it('a pipeline’s next stage is drained with the burst: its backlog stays bounded', async () => {
    const system = makeSystem();
    let last = 0;
    let sinkProcessed = 0;
    const sink = system.spawn(
      fromTransition((count: number) => {
        sinkProcessed++;
        return count + 1;
      }, 0),
      { name: 'sink' },
    );
    const forwarder = system.spawn(
      fromTransition((count: number, event: Message) => {
        last = (event as Numbered).n;
        sink.send(event);
        return count + 1;
      }, 0),
      { name: 'forwarder' },
    );
    let deepest = 0;
    let forwardedInCaller = 0;
    for (let i = 0; i < 10_000; i++) {
      forwarder.send({ type: 'inc', n: i } as Message);
      if (last === i) forwardedInCaller++;
      deepest = Math.max(deepest, system.mailboxSize(sink));
    }
    // not vacuous: the burst did run in the caller (a forwarded message waiting sends the next ones to the queue)
    expect(forwardedInCaller).toBeGreaterThan(0);
    expect(deepest).toBeLessThanOrEqual(2 * DRAIN_AT);
    await settle(system);
    expect(sinkProcessed).toBe(10_000);
  });

  it('a failure in the caller is supervised as in a turn: restart, and the rest of the burst is processed', async () => {
    const system = makeSystem({
      supervision: {
        kind: 'restart',
        minBackoffMs: 1,
        maxBackoffMs: 1,
        randomFactor: 0,
        maxRestarts: 5,
        withinMs: 60_000,
      },
    });
    const log: number[] = [];
    const ref = system.spawn(
      fromTransition((count: number, event: Message) => {
        const { n } = event as Numbered;
        if (n === 100) throw new Error('boom at 100');
        log.push(n);
        return count + 1;
      }, 0),
      { name: 'fragile' },
    );
    burst(ref, 300, () => log.length);
    for (let i = 0; i < 200 && log.length < 299; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(log).toEqual(Array.from({ length: 300 }, (_, i) => i).filter((n) => n !== 100));
    expect(system.deadLetters.count).toBe(0);
  });

  it('with an inspector attached every message of the burst is still inspected', async () => {
    const events: InspectionEvent[] = [];
    const system = makeSystem({ inspect: (event) => events.push(event) });
    const log: (string | number)[] = [];
    const ref = recorder(system, 'inspected', log);
    burst(ref, 200, () => log.length);
    await settle(system);
    expect(log).toHaveLength(200);
    const seen = events.filter((e) => e.type === '@xstate.event' && (e.event as Message).type === 'inc');
    expect(seen).toHaveLength(200);
  });

  it('an ask answered in the caller during a burst settles with its reply', async () => {
    const system = makeSystem();
    const echo = system.spawn(
      fromTransition((count: number, event: Message) => {
        const { replyTo, n } = event as Numbered & { replyTo?: ActorRef };
        replyTo?.send({ type: 'pong', n } as Message);
        return count + 1;
      }, 0),
      { name: 'echo' },
    );
    const replies: Promise<Message>[] = [];
    for (let i = 0; i < 200; i++)
      replies.push(echo.ask((replyTo) => ({ type: 'ping', n: i, replyTo }) as Message, { timeout: 5_000 }));
    const answered = await Promise.all(replies);
    expect(answered.map((m) => (m as Numbered).n)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });
});
