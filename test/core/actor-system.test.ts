import { afterEach, describe, expect, it } from 'vitest';
import { assign, fromCallback, fromPromise, fromTransition, setup } from 'xstate';
import {
  ActorNameTakenError,
  type ActorRef,
  type ActorSystem,
  AskTimeoutError,
  InvalidActorNameError,
  MailboxFullError,
  type Message,
  type Terminated,
} from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';
import { terminationsOf } from '../support/terminations.js';

type Inc = { type: 'inc'; by: number };
type Get = { type: 'get'; replyTo: ActorRef<{ type: 'value'; value: number }> };

const counter = setup({
  types: { context: {} as { value: number }, events: {} as Inc | Get },
}).createMachine({
  context: { value: 0 },
  on: {
    inc: { actions: assign({ value: ({ context, event }) => context.value + event.by }) },
    get: { actions: ({ context, event }) => event.replyTo.send({ type: 'value', value: context.value }) },
  },
});

const makeSystem = makeCoreSystem;

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

describe('ActorSystem', () => {
  it('spawns a machine under /user and answers ask through the mailbox', async () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const ref = system.spawn(counter, { name: 'counter' });
    expect(ref.path).toBe('/user/counter');
    expect(ref.id).toBe('doyen://test@127.0.0.1:1/user/counter#u1');
    ref.send({ type: 'inc', by: 2 });
    ref.send({ type: 'inc', by: 3 });
    const reply = ref.ask<{ type: 'value'; value: number }>((replyTo) => ({ type: 'get', replyTo }));
    scheduler.runAll();
    await expect(reply).resolves.toEqual({ type: 'value', value: 5 });
    expect(system.lookup('/user/counter')?.equals(ref)).toBe(true);
  });

  it('runs fromTransition, fromCallback and fromPromise logic', async () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const seen: string[] = [];
    const t = system.spawn(
      fromTransition((n: number, e: Message) => {
        seen.push(`t:${e.type}`);
        return n + 1;
      }, 0),
      { name: 't' },
    );
    const cb = system.spawn(
      fromCallback<Message>(({ receive }) => {
        receive((e) => seen.push(`cb:${e.type}`));
      }),
      { name: 'cb', parent: 'system' },
    );
    const p = system.spawn(
      fromPromise(async () => 42),
      { name: 'p' },
    );
    const watcherSeen: Terminated[] = [];
    const watcher = system.functionRef('w', (m) => watcherSeen.push(m as Terminated));
    system.watch(p, watcher);
    t.send({ type: 'a' });
    cb.send({ type: 'b' });
    expect(cb.path).toBe('/system/cb');
    scheduler.runAll();
    expect(seen).toEqual(['t:a', 'cb:b']);
    expect(system.snapshotOf(t)).toMatchObject({ context: 1 });
    await new Promise((r) => setImmediate(r));
    // a promise actor that resolved is done: it stops and its watchers hear of it
    expect(watcherSeen.map((m) => m.reason)).toEqual(['stopped']);
  });

  it('validates names and refuses duplicates with typed errors', () => {
    const { system } = makeSystem();
    current = system;
    system.spawn(counter, { name: 'a' });
    expect(() => system.spawn(counter, { name: 'a' })).toThrow(ActorNameTakenError);
    expect(() => system.spawn(counter, { name: 'bad/name' })).toThrow(InvalidActorNameError);
  });

  it('processes one message at a time, in order, fairly between busy actors', () => {
    const { system, scheduler } = makeSystem({
      dispatcher: { throughput: 4, maxPerTurn: 1_000_000, maxTurnMs: 1e9 },
    });
    current = system;
    const order: string[] = [];
    const logic = (name: string) =>
      fromTransition((s: number, e: Message & { n?: number }) => {
        order.push(`${name}${e.n}`);
        return s;
      }, 0);
    const a = system.spawn(logic('a'), { name: 'a' });
    const b = system.spawn(logic('b'), { name: 'b' });
    for (let n = 0; n < 8; n++) a.send({ type: 'x', n } as Message);
    for (let n = 0; n < 8; n++) b.send({ type: 'x', n } as Message);
    scheduler.runAll();
    // throughput 4: a gets four, then b gets four, then a again: nobody starves
    expect(order.slice(0, 8)).toEqual(['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'b2', 'b3']);
    expect(order.filter((x) => x.startsWith('a'))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']);
  });

  it('yields to the event loop after a bounded batch per turn', () => {
    const { system, scheduler } = makeSystem({
      dispatcher: { throughput: 10, maxPerTurn: 25, maxTurnMs: 1e9 },
    });
    current = system;
    const a = system.spawn(
      fromTransition((s: number) => s + 1, 0),
      { name: 'a' },
    );
    for (let i = 0; i < 100; i++) a.send({ type: 'x' });
    const turns = scheduler.runAll();
    expect(turns).toBeGreaterThanOrEqual(4);
    expect(system.snapshotOf(a)).toMatchObject({ context: 100 });
  });

  it('ask rejects with AskTimeoutError on simulated time and late replies become dead letters', async () => {
    const { system, clock, scheduler, letters } = makeSystem();
    current = system;
    let held: ActorRef | undefined;
    const silent = system.spawn(
      fromTransition((s: number, e: Message & { replyTo?: ActorRef }) => {
        held = e.replyTo;
        return s;
      }, 0),
      { name: 'silent' },
    );
    const reply = silent.ask((replyTo) => ({ type: 'q', replyTo }), { timeout: 1000 });
    scheduler.runAll();
    clock.increment(999);
    let settled = false;
    reply.catch(() => {}).finally(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    clock.increment(1);
    await expect(reply).rejects.toBeInstanceOf(AskTimeoutError);
    held!.send({ type: 'late' });
    expect(letters.at(-1)?.reason).toBe('ask-reply-after-timeout');
  });

  it('mailbox overflow: drop-newest dead-letters, reject tells the sender (ask fails fast)', async () => {
    const { system, letters } = makeSystem();
    current = system;
    const full = system.spawn(
      fromTransition((s: number) => s, 0),
      {
        name: 'full',
        mailbox: { capacity: 1, overflow: 'reject' },
      },
    );
    full.send({ type: 'one' });
    await expect(full.ask((replyTo) => ({ type: 'two', replyTo }))).rejects.toBeInstanceOf(MailboxFullError);
    expect(letters.map((l) => l.reason)).toContain('mailbox-full');

    const lossy = system.spawn(
      fromTransition((s: number) => s, 0),
      {
        name: 'lossy',
        mailbox: { capacity: 1, overflow: 'drop-oldest' },
      },
    );
    lossy.send({ type: 'first' });
    lossy.send({ type: 'second' });
    expect(letters.at(-1)).toMatchObject({
      reason: 'mailbox-overflow-dropped-oldest',
      message: { type: 'first' },
    });
  });

  it('restarts a failing actor with backoff, then stops it after too many failures', () => {
    const { system, clock, scheduler } = makeSystem();
    current = system;
    let starts = 0;
    const fragile = setup({ types: { events: {} as Message } }).createMachine({
      entry: () => {
        starts++;
      },
      on: {
        boom: {
          actions: () => {
            throw new Error('boom');
          },
        },
      },
    });
    const ref = system.spawn(fragile, {
      name: 'fragile',
      supervision: {
        kind: 'restart',
        minBackoffMs: 100,
        maxBackoffMs: 1000,
        randomFactor: 0,
        maxRestarts: 2,
        withinMs: 60_000,
      },
    });
    const terminated = terminationsOf(system, ref);
    /** A failure, then the restart exactly `backoffMs` later: not a millisecond before. */
    const failAndRestartAfter = (backoffMs: number) => {
      const before = starts;
      ref.send({ type: 'boom' });
      scheduler.runAll();
      clock.increment(backoffMs - 1);
      expect(starts).toBe(before);
      clock.increment(1);
      expect(starts).toBe(before + 1);
    };
    expect(starts).toBe(1);
    failAndRestartAfter(100);
    expect(starts).toBe(2);
    failAndRestartAfter(200);
    expect(starts).toBe(3);
    ref.send({ type: 'boom' });
    scheduler.runAll();
    expect(terminated).toHaveLength(1);
    expect(terminated[0]!.reason).toBe('failed');
    expect(system.lookup('/user/fragile')).toBeUndefined();
    expect(system.metrics.value('doyen_actor_failures_total', { decision: 'stop' })).toBe(1);
  });

  it('keeps messages that arrive during a restart backoff and processes them after', () => {
    const { system, clock, scheduler } = makeSystem();
    current = system;
    const seen: string[] = [];
    const ref = system.spawn(
      fromTransition((s: number, e: Message) => {
        if (e.type === 'boom') throw new Error('boom');
        seen.push(e.type);
        return s;
      }, 0),
      { name: 'r' },
    );
    ref.send({ type: 'boom' });
    ref.send({ type: 'after' });
    scheduler.runAll();
    expect(seen).toEqual([]);
    clock.increment(100);
    scheduler.runAll();
    expect(seen).toEqual(['after']);
  });

  it('never lets an actor error escape to the process', async () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const p = system.spawn(
        fromPromise(async () => {
          throw new Error('async failure');
        }),
        { name: 'p', supervision: { kind: 'stop' } },
      );
      const r = system.spawn(
        fromTransition(() => {
          throw new Error('sync failure');
        }, 0),
        { name: 'r', supervision: { kind: 'stop' } },
      );
      r.send({ type: 'x' });
      scheduler.runAll();
      await new Promise((res) => setTimeout(res, 20));
      expect(system.lookup(p.path)).toBeUndefined();
      expect(system.lookup(r.path)).toBeUndefined();
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('death watch: Terminated on stop, not-found for a dead target, children stop with their parent', () => {
    const { system, scheduler } = makeSystem();
    current = system;
    const got: Terminated[] = [];
    const watcher = system.functionRef('w', (m) => got.push(m as Terminated));
    const parent = system.spawn(counter, { name: 'parent' });
    const child = system.spawn(counter, { name: 'child', parent });
    expect(child.path).toBe('/user/parent/child');
    system.watch(child, watcher);
    system.stop(parent);
    expect(got.map((t) => [t.ref.path, t.reason])).toEqual([['/user/parent/child', 'stopped']]);
    system.watch(child, watcher);
    expect(got.at(-1)?.reason).toBe('not-found');
    scheduler.runAll();
  });

  it('counts and publishes dead letters: unknown path, stopped actor with queued mail', () => {
    const { system, letters } = makeSystem();
    current = system;
    system.refFor('doyen://test@127.0.0.1:1/user/nobody#u1').send({ type: 'hello' });
    const a = system.spawn(counter, { name: 'a' });
    a.send({ type: 'inc', by: 1 });
    system.stop(a);
    a.send({ type: 'inc', by: 1 });
    expect(letters.map((l) => l.reason)).toEqual(['no-such-actor', 'actor-stopped', 'no-such-actor']);
    expect(system.deadLetters.count).toBe(3);
    expect(system.metrics.value('doyen_dead_letters_total', { reason: 'no-such-actor' })).toBe(2);
  });

  it('refs to a previous incarnation of this node are dead letters, remote refs without transport too', () => {
    const { system, letters } = makeSystem();
    current = system;
    system.refFor('doyen://test@127.0.0.1:1/user/a#oldincarnation').send({ type: 'x' });
    system.refFor('doyen://test@127.0.0.2:1/user/a#zz').send({ type: 'y' });
    expect(letters.map((l) => l.reason)).toEqual(['wrong-incarnation', 'no-transport']);
  });

  it('a remote watch gets Terminated when the cluster reports the node gone', () => {
    const { system } = makeSystem();
    current = system;
    const sent: unknown[] = [];
    system.attachTransport({ send: (_node, env) => sent.push(env.message) });
    const got: Terminated[] = [];
    const watcher = system.functionRef('w', (m) => got.push(m as Terminated));
    const remote = system.refFor('doyen://test@10.1.1.1:5/user/x#r1');
    system.watch(remote, watcher);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: 'doyen.watch', target: '/user/x' });
    system.nodeTerminated({ host: '10.1.1.1', port: 5 }, 'node-unreachable');
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ reason: 'node-unreachable' });
    expect(got[0]!.ref.equals(remote)).toBe(true);
  });
});
