import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type AnyActorLogic,
  createActor,
  initialTransition,
  SimulatedClock,
  type SnapshotFrom,
  transition,
} from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import {
  type ActorSystem,
  type Message,
  nodeKey,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';
import {
  createProxyMachine,
  oldestPlacement,
  type ProxyContext,
  type ProxyEffect,
  type ProxyEvent,
} from '../../packages/singleton/src/index.js';
import type * as Decisions from '../../packages/singleton/src/proxy-decisions.js';
import { delayedEvent, stateName } from '../support/machine-paths.js';
import { member, membershipEvents, refTo, stubSystem } from '../support/singleton-fixtures.js';

/**
 * The singleton proxy alone: events in, effects out. Its safety property is exactly-once
 * delivery across a hand-over, checked on every path xstate/graph finds (and on every edge out
 * of each state it reaches):
 * - every message told to the proxy is forwarded once, or dead-lettered with a reason, or still
 *   in its buffer: never twice, never silently dropped;
 * - each sender's messages are forwarded in the order it told them;
 * - when the proxy stops forwarding to an inbox, it sends that inbox the `drained` marker in the
 *   same step, and forwards nothing more there until that inbox's node identifies it again (the
 *   manager that waits for the marker never sends an identity after its hand-over started).
 */

const node = (i: number): UniqueNodeAddress => ({ host: `10.0.0.${i}`, port: 2552, uid: `u${i}` });
const A = node(1); // the oldest first
const B = node(2); // the oldest once A is gone
const SELF = node(3); // the proxy's node
const key = (n: UniqueNodeAddress) => nodeKey(n);
const BUFFER_SIZE = 2;

const membership = membershipEvents();
const system = stubSystem(SELF);

const inboxOf = (n: UniqueNodeAddress) => refTo(n, '/user/singleton-s');
const settings = {
  name: 's',
  role: undefined,
  bufferSize: BUFFER_SIZE,
  identifyIntervalMs: 100,
  placement: oldestPlacement,
};

// the views and events the proxy sees
const viewA = membership([member(A, 1), member(B, 2), member(SELF, 3)]);
const viewA2 = membership([member(A, 1), member(B, 2), member(SELF, 3)]); // same host, newer
const viewB = membership([member(B, 2), member(SELF, 3)]);
const viewNone = membership([]);
const identity = (n: UniqueNodeAddress) => ({ type: 'singleton.identity', name: 's', inbox: inboxOf(n) });
const started = (n: UniqueNodeAddress) => ({
  type: 'singleton.hand-over-started',
  name: 's',
  inbox: inboxOf(n),
});
/** A message for the singleton; the replay numbers each one it tells. */
const tell = (sender: string) => ({ type: 'app.msg', sender });
const retry = delayedEvent<ProxyEvent>('identifyInterval', 'singletonProxy.identifying');

const EVENTS = [
  viewA,
  viewA2,
  viewB,
  viewNone,
  identity(A),
  identity(B),
  started(A),
  started(B),
  tell('s1'),
  tell('s2'),
] as unknown as ProxyEvent[];

/** The retry timer only runs out in `identifying` (leaving it cancels the timer). */
const eventsIn = (value: unknown): ProxyEvent[] => (value === 'identifying' ? [...EVENTS, retry] : EVENTS);

/** Where the walks start: fresh, forwarding after delivering, and with an overflowed buffer. */
const PREFIXES = [
  [],
  [viewA, identity(A), tell('s1'), tell('s2')],
  [viewA, tell('s1'), tell('s2'), tell('s1')],
] as unknown as ProxyEvent[][];

type ProxyLogic = ReturnType<typeof createProxyMachine>;

interface Told extends Message {
  readonly type: 'app.msg';
  readonly sender: string;
  readonly seq: number;
}

/** A live actor of `logic` on a simulated clock, recording every effect it runs, in order. */
function recordingProxy(logic: ProxyLogic) {
  const effects: ProxyEffect[] = [];
  const actor = createActor(
    logic.provide({ actions: { run: (_, effect: ProxyEffect) => effects.push(effect) } }),
    { clock: new SimulatedClock() },
  ).start();
  return { actor, effects };
}

/**
 * Replays `events` on a live actor of `logic`, numbering each message told, and returns every
 * breach of the proxy's safety property (empty when it holds).
 */
function violations(logic: ProxyLogic, events: readonly ProxyEvent[]): string[] {
  const found: string[] = [];
  const { actor, effects } = recordingProxy(logic);
  const told: Told[] = [];
  const fate = new Map<Told, string>(); // forwarded or dead-lettered
  const lastForwarded = new Map<string, number>();
  const closed = new Set<string>(); // inboxes sent `drained` and not identified again since
  let seq = 0;
  for (const raw of events) {
    const event =
      raw.type === 'app.msg' ? ({ ...raw, seq: ++seq } as unknown as Told) : (raw as unknown as ProxyEvent);
    if (event.type === 'app.msg') told.push(event as Told);
    const before = actor.getSnapshot().context.target;
    const from = effects.length;
    actor.send(event);
    const snapshot = actor.getSnapshot();
    const after = snapshot.context.target;
    const at = `${event.type} → ${stateName(snapshot.value)}`;
    if (before === undefined && after !== undefined) closed.delete(after.id);
    const step = effects.slice(from);
    for (const effect of step) {
      if (effect.kind === 'drained') closed.add(effect.to.id);
      if (effect.kind !== 'forward' && effect.kind !== 'dead-letter') continue;
      const m = effect.message as Told;
      if (!told.includes(m)) {
        found.push(`${at}: ${effect.kind} of a message never told`);
        continue;
      }
      if (fate.has(m))
        found.push(`${at}: message ${m.seq} ${effect.kind} after it was already ${fate.get(m)}`);
      if (effect.kind === 'dead-letter') {
        if (!effect.reason) found.push(`${at}: message ${m.seq} dead-lettered without a reason`);
        fate.set(m, 'dead-lettered');
        continue;
      }
      fate.set(m, 'forwarded');
      if (closed.has(effect.to.id))
        found.push(`${at}: message ${m.seq} forwarded to ${effect.to.id} after draining it`);
      if ((lastForwarded.get(m.sender) ?? 0) > m.seq)
        found.push(`${at}: message ${m.seq} of ${m.sender} forwarded after a later one`);
      lastForwarded.set(m.sender, m.seq);
    }
    if (before !== undefined && after?.id !== before.id) {
      if (!step.some((e) => e.kind === 'drained' && e.to.id === before.id))
        found.push(`${at}: stopped forwarding to ${before.id} without draining it`);
    }
    if ((snapshot.value === 'identifying') !== (after === undefined))
      found.push(`${at}: a target in identifying, or none while forwarding`);
    if (snapshot.context.buffer.length > BUFFER_SIZE) found.push(`${at}: buffer beyond its size`);
  }
  // what is neither forwarded nor dead-lettered must still be buffered, once
  const buffered = actor.getSnapshot().context.buffer as readonly Told[];
  for (const m of told) {
    const inBuffer = buffered.filter((b) => b === m).length;
    if (fate.has(m) && inBuffer > 0) found.push(`message ${m.seq} ${fate.get(m)} and still buffered`);
    if (!fate.has(m) && inBuffer !== 1) found.push(`message ${m.seq} silently dropped`);
  }
  return found;
}

/** Every path from every prefix, and every one-event step out of each state it reaches. */
function walks(logic: ProxyLogic): ProxyEvent[][] {
  const runs: ProxyEvent[][] = [];
  const quiet = logic.provide({ actions: { run: () => {} } }) as unknown as AnyActorLogic;
  for (const prefix of PREFIXES) {
    let [fromState] = initialTransition(quiet);
    for (const e of prefix) [fromState] = transition(quiet, fromState, e);
    const paths = getShortestPaths(quiet, {
      fromState,
      events: (s: SnapshotFrom<AnyActorLogic>) => eventsIn(s.value),
      serializeState: (s: SnapshotFrom<AnyActorLogic>) => {
        const c = s.context as ProxyContext;
        return JSON.stringify({
          v: s.value,
          o: c.oldestKey,
          t: c.target?.id,
          b: c.buffer.map((m) => (m as unknown as Told).sender),
        });
      },
    });
    for (const path of paths) {
      const events = path.steps
        .map((s) => s.event as ProxyEvent)
        .filter((e) => !e.type.startsWith('xstate.init'));
      for (const next of eventsIn(path.state.value)) runs.push([...prefix, ...events, next]);
    }
  }
  return runs;
}

const RUNS = walks(createProxyMachine(system, settings));

describe('singleton proxy machine, alone', () => {
  it('the walks reach both states, every host, a full buffer and both inboxes', () => {
    const logic = createProxyMachine(system, settings).provide({ actions: { run: () => {} } });
    const seen = new Set<string>();
    for (const run of RUNS) {
      const actor = createActor(logic, { clock: new SimulatedClock() }).start();
      for (const e of run) actor.send(e);
      const { value, context } = actor.getSnapshot();
      seen.add(`${value}:${context.target?.id ?? context.oldestKey ?? '-'}:${context.buffer.length}`);
    }
    for (const s of [
      'identifying:-:0',
      `identifying:${key(A)}:${BUFFER_SIZE}`,
      `identifying:${key(B)}:${BUFFER_SIZE}`,
      `forwarding:${inboxOf(A).id}:0`,
      `forwarding:${inboxOf(B).id}:0`,
    ])
      expect(seen).toContain(s);
    expect(RUNS.length).toBeGreaterThan(300);
  });

  it('on every path: each message forwarded once in its sender order, or dead-lettered, or still buffered; drained before the proxy lets go of an inbox', () => {
    const logic = createProxyMachine(system, settings);
    for (const run of RUNS)
      expect(violations(logic, run), JSON.stringify(run.map((e) => e.type))).toEqual([]);
  });

  it('a hand-over: drained behind what went to the old inbox, the rest buffered and forwarded to the new one in order', () => {
    const { actor, effects } = recordingProxy(createProxyMachine(system, settings));
    const m = (n: number) => ({ type: 'app.msg', sender: 's1', n }) as unknown as ProxyEvent;
    for (const e of [viewA, identity(A), m(1), started(A), m(2), m(3), viewB, identity(A), identity(B), m(4)])
      actor.send(e as ProxyEvent);
    expect(
      effects.map((e) =>
        e.kind === 'forward'
          ? `forward ${(e.message as unknown as { n: number }).n} to ${e.to.address.node.host}`
          : e.kind === 'identify'
            ? `identify ${e.hostKey}`
            : `${e.kind} ${'to' in e ? e.to.address.node.host : ''}`,
      ),
    ).toEqual([
      `identify ${key(A)}`,
      'forward 1 to 10.0.0.1',
      'drained 10.0.0.1',
      `identify ${key(A)}`,
      `identify ${key(B)}`,
      // the identity from A is no longer believed: B is the host now
      'forward 2 to 10.0.0.2',
      'forward 3 to 10.0.0.2',
      'forward 4 to 10.0.0.2',
    ]);
  });

  it('a full buffer sends the oldest to dead letters, logged with an event', () => {
    const { actor, effects } = recordingProxy(createProxyMachine(system, settings));
    for (const e of [tell('s1'), tell('s1'), tell('s2')]) actor.send(e as unknown as ProxyEvent);
    expect(effects.map((e) => e.kind)).toEqual(['log', 'dead-letter']);
    expect(effects[0]).toMatchObject({
      event: 'singleton.proxy-buffer-full',
      fields: { bufferSize: BUFFER_SIZE },
    });
    expect(effects[1]).toMatchObject({ reason: 'mailbox-overflow-dropped-oldest' });
    expect(actor.getSnapshot().context).toMatchObject({ dropped: 1, buffer: [tell('s1'), tell('s2')] });
  });
});

describe('singleton proxy machine, pure transitions', () => {
  it('computing a transition does no I/O: an overflowing buffer logs and dead-letters only when `run` runs', () => {
    const io: string[] = [];
    const recording = {
      ...system,
      logger: { info: () => io.push('log'), warn: () => io.push('log'), debug() {}, error() {} },
      deadLetter: () => io.push('dead-letter'),
      remoteRef: (n: UniqueNodeAddress, path: string) => ({ ...refTo(n, path), send: () => io.push('send') }),
    } as unknown as ActorSystem;
    const logic = createProxyMachine(recording, settings);
    let [s] = initialTransition(logic);
    const kinds: string[] = [];
    for (const e of [viewA, tell('s1'), tell('s1'), tell('s2'), identity(A), tell('s2')]) {
      const [next, actions] = transition(logic, s, e as unknown as ProxyEvent);
      s = next;
      for (const a of actions) if (a.type === 'run') kinds.push((a.params as ProxyEffect).kind);
    }
    expect(io).toEqual([]);
    expect(kinds).toEqual(['identify', 'log', 'dead-letter', 'forward', 'forward', 'forward']);
  });
});

describe('positive controls: the same walks catch a proxy that breaks exactly-once', () => {
  const DECISIONS = '../../packages/singleton/src/proxy-decisions.js';
  afterEach(() => {
    vi.doUnmock(DECISIONS);
    vi.resetModules();
  });

  /** The proxy machine built over decisions with one of them replaced by `mutate(original)`. */
  async function mutantProxy(
    mutate: (real: typeof Decisions) => Partial<typeof Decisions>,
  ): Promise<ProxyLogic> {
    vi.resetModules();
    vi.doMock(DECISIONS, async (importOriginal) => {
      const real = await importOriginal<typeof Decisions>();
      return { ...real, ...mutate(real) };
    });
    const { createProxyMachine: create } = await import('../../packages/singleton/src/proxy-machine.js');
    return create(system, settings);
  }

  const caught = (logic: ProxyLogic) => RUNS.flatMap((run) => violations(logic, run));

  it('the unmutated machine built the same way passes (the mock itself changes nothing)', async () => {
    expect(caught(await mutantProxy(() => ({})))).toEqual([]);
  });

  it('forwarding a buffered message twice is caught', async () => {
    const logic = await mutantProxy((real) => ({
      takeIdentity: (c, e) => {
        const step = real.takeIdentity(c, e);
        return { ...step, effects: [...step.effects, ...step.effects.slice(0, 1)] };
      },
    }));
    expect(caught(logic).some((v) => v.includes('forward after it was already forwarded'))).toBe(true);
  });

  it('dropping a buffered message on identity is caught', async () => {
    const logic = await mutantProxy((real) => ({
      takeIdentity: (c, e) => {
        const step = real.takeIdentity(c, e);
        return { ...step, effects: step.effects.slice(1) };
      },
    }));
    expect(caught(logic).some((v) => v.includes('silently dropped'))).toBe(true);
  });

  it('an overflowing buffer that drops without a dead letter is caught', async () => {
    const logic = await mutantProxy((real) => ({
      bufferMessage: (p, c, e) => {
        const step = real.bufferMessage(p, c, e);
        return { ...step, effects: step.effects.filter((f) => f.kind !== 'dead-letter') };
      },
    }));
    expect(caught(logic).some((v) => v.includes('silently dropped'))).toBe(true);
  });

  it('flushing the buffer out of order is caught', async () => {
    const logic = await mutantProxy((real) => ({
      takeIdentity: (c, e) => {
        const step = real.takeIdentity(c, e);
        return { ...step, effects: [...step.effects].reverse() };
      },
    }));
    expect(caught(logic).some((v) => v.includes('forwarded after a later one'))).toBe(true);
  });

  it('following a new host without draining the old inbox is caught', async () => {
    const logic = await mutantProxy((real) => ({
      followHost: (p, c, e) => ({ ...real.followHost(p, c, e), effects: [] }),
    }));
    expect(caught(logic).some((v) => v.includes('without draining it'))).toBe(true);
  });
});
