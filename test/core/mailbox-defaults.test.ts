import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import {
  ActorSystem,
  type ActorSystemConfig,
  ChunkedQueue,
  createLogger,
  defaultDispatcherConfig,
  defaultMailboxConfig,
  Mailbox,
  RingBuffer,
} from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';

type LogLine = Record<string, unknown> & { event?: string; path?: string; msg?: string };

function makeSystem(extra: Partial<ActorSystemConfig> = {}) {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const { system, scheduler, letters } = makeCoreSystem({
    logger: createLogger({ level: 'warn', destination }),
    dispatcher: { maxTurnMs: 1e9 },
    ...extra,
  });
  return { system, scheduler, lines, letters };
}

const counter = () => fromTransition((n: number) => n + 1, 0);

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

describe('mailbox defaults', () => {
  it('are unbounded: a burst of 1M local tells is processed in full, nothing dropped', () => {
    const { system, scheduler, letters } = makeSystem();
    current = system;
    expect(defaultMailboxConfig.capacity).toBe(Number.POSITIVE_INFINITY);
    const ref = system.spawn(counter(), { name: 'burst' });
    for (let i = 0; i < 1_000_000; i++) ref.send({ type: 'inc' });
    expect(system.mailboxSize(ref)).toBe(1_000_000);
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: 1_000_000 });
    expect(letters).toEqual([]);
    expect(system.metrics.total('doyen_mailbox_dropped_total')).toBe(0);
  });

  it('show the depth as a gauge and warn, with the actor path, when a backlog passes the high-water mark', async () => {
    const { system, scheduler, lines } = makeSystem();
    current = system;
    const ref = system.spawn(counter(), { name: 'slow' });
    const mark = defaultMailboxConfig.highWaterMark;
    for (let i = 0; i < mark - 1; i++) ref.send({ type: 'inc' });
    // positive control: one short of the mark, no warning yet
    expect(lines.filter((l) => l.event === 'mailbox.high-water')).toEqual([]);
    expect(system.metrics.value('doyen_mailbox_depth', { path: '/user/slow' })).toBe(mark - 1);
    for (let i = 0; i < mark + 1; i++) ref.send({ type: 'inc' });
    const warnings = lines.filter((l) => l.event === 'mailbox.high-water');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ path: '/user/slow', highWaterMark: mark, depth: mark });
    expect(system.metrics.value('doyen_mailbox_high_water_total')).toBe(1);
    expect(system.metrics.value('doyen_mailbox_depth', { path: '/user/slow' })).toBe(2 * mark);
    expect(await system.metrics.render()).toContain(`doyen_mailbox_depth{path="/user/slow"} ${2 * mark}`);
    scheduler.runAll();
    expect(system.metrics.value('doyen_mailbox_depth', { path: '/user/slow' })).toBe(0);
    expect(system.snapshotOf(ref)).toMatchObject({ context: 2 * mark });
  });

  it('a bounded mailbox keeps its bound; every drop is counted and logged (rate-limited) with the actor path', () => {
    const { system, scheduler, lines, letters } = makeSystem();
    current = system;
    const ref = system.spawn(counter(), {
      name: 'bounded',
      mailbox: { capacity: 2, overflow: 'drop-newest' },
    });
    for (let i = 0; i < 5; i++) ref.send({ type: 'inc' });
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: 2 });
    expect(system.metrics.value('doyen_mailbox_dropped_total', { policy: 'drop-newest' })).toBe(3);
    expect(letters.map((l) => l.reason)).toEqual(['mailbox-full', 'mailbox-full', 'mailbox-full']);
    const overflow = lines.filter((l) => l.event === 'mailbox.overflow');
    // one line per second per actor: three drops within the same instant make one line
    expect(overflow).toHaveLength(1);
    expect(overflow[0]).toMatchObject({ path: '/user/bounded', capacity: 2, policy: 'drop-newest' });

    const oldest = system.spawn(counter(), {
      name: 'oldest',
      mailbox: { capacity: 1, overflow: 'drop-oldest' },
    });
    oldest.send({ type: 'a' });
    oldest.send({ type: 'b' });
    expect(system.metrics.value('doyen_mailbox_dropped_total', { policy: 'drop-oldest' })).toBe(1);
    expect(lines.filter((l) => l.event === 'mailbox.overflow').map((l) => l.path)).toEqual([
      '/user/bounded',
      '/user/oldest',
    ]);
  });

  it('an unbounded mailbox with the warning turned off never logs', () => {
    const { system, lines } = makeSystem({ mailbox: { highWaterMark: Number.POSITIVE_INFINITY } });
    current = system;
    const ref = system.spawn(counter(), { name: 'quiet' });
    for (let i = 0; i < 20_000; i++) ref.send({ type: 'inc' });
    expect(lines).toEqual([]);
    expect(system.mailboxSize(ref)).toBe(20_000);
  });

  it('refuses nonsensical bounds and marks', () => {
    expect(() => new Mailbox({ capacity: 1.5, overflow: 'reject' })).toThrow(/capacity/);
    expect(() => new Mailbox({ capacity: 10, overflow: 'reject', highWaterMark: 0 })).toThrow(
      /highWaterMark/,
    );
    expect(new Mailbox({ capacity: Number.POSITIVE_INFINITY, overflow: 'reject' }).bounded).toBe(false);
  });
});

describe('chunked queue', () => {
  it('keeps FIFO order across chunk growth, emptying and chunk reuse', () => {
    const q = new ChunkedQueue<number>();
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 10_000 * (round + 1); i++) q.push(next++);
      let wrong = 0;
      for (let i = 0; i < 7_000 * (round + 1); i++) if (q.shift() !== expected++) wrong++;
      expect(wrong).toBe(0);
    }
    const rest = q.drain();
    expect(rest).toHaveLength(next - expected);
    expect(rest[0]).toBe(expected);
    expect(rest.at(-1)).toBe(next - 1);
    expect(q.shift()).toBeUndefined();
    q.push(42);
    expect(q.length).toBe(1);
    expect(q.shift()).toBe(42);
  });
});

describe('ring buffer', () => {
  it('clear empties it and it keeps FIFO order after', () => {
    const ring = new RingBuffer<number>(4);
    for (let i = 0; i < 6; i++) ring.push(i);
    ring.shift();
    ring.clear();
    expect(ring.length).toBe(0);
    expect(ring.shift()).toBeUndefined();
    for (let i = 10; i < 20; i++) ring.push(i);
    expect(ring.drain()).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });
});

describe('a burst from outside any actor', () => {
  it('is worked off as it arrives: the backlog stays at the drain depth, every message is processed', async () => {
    // the default scheduler (setImmediate), as a node runs
    const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1 });
    current = system;
    const drainAt = defaultDispatcherConfig.drainBacklogAt;
    const ref = system.spawn(counter(), { name: 'burst' });
    let deepest = 0;
    for (let i = 0; i < 1_000_000; i++) {
      ref.send({ type: 'inc' });
      const depth = system.mailboxSize(ref);
      if (depth > deepest) deepest = depth;
    }
    // the send that makes the drain depth runs a turn before it returns
    expect(deepest).toBeLessThan(drainAt);
    // positive control: the sends did queue up to it before any turn ran
    expect(deepest).toBe(drainAt - 1);
    while (system.mailboxSize(ref) > 0) await new Promise((r) => setImmediate(r));
    expect(system.snapshotOf(ref)).toMatchObject({ context: 1_000_000 });
    expect(system.deadLetters.count).toBe(0);
  });

  it('sends from inside an actor never run a turn: the actor keeps processing one message at a time', async () => {
    const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1 });
    current = system;
    const sink = system.spawn(counter(), { name: 'sink' });
    let depthSeenBySender = -1;
    const fanout = system.spawn(
      fromTransition((n: number) => {
        for (let i = 0; i < 10_000; i++) sink.send({ type: 'inc' });
        depthSeenBySender = system.mailboxSize(sink);
        return n + 1;
      }, 0),
      { name: 'fanout' },
    );
    fanout.send({ type: 'go' });
    while (system.mailboxSize(fanout) > 0 || system.mailboxSize(sink) > 0)
      await new Promise((r) => setImmediate(r));
    expect(depthSeenBySender).toBe(10_000);
    expect(system.snapshotOf(sink)).toMatchObject({ context: 10_000 });
  });

  it('can be turned off: then the burst queues in full', () => {
    const system = new ActorSystem({
      cluster: 'test',
      host: '127.0.0.1',
      port: 1,
      dispatcher: { drainBacklogAt: 0 },
    });
    current = system;
    const ref = system.spawn(counter(), { name: 'q' });
    for (let i = 0; i < 20_000; i++) ref.send({ type: 'inc' });
    expect(system.mailboxSize(ref)).toBe(20_000);
  });
});
