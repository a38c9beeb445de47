import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { type ActorRef, nodeKey, type UniqueNodeAddress } from '../../packages/core/src/index.js';
import {
  createManagerMachine,
  type ManagerEffect,
  type ManagerEvent,
  managerPath,
  oldestPlacement,
  type SingletonPlacement,
  singletonHostOf,
} from '../../packages/singleton/src/index.js';
import { delayedEvent, reachedStates, stateName } from '../support/machine-paths.js';
import { member, membershipEvents, refTo, stubSystem } from '../support/singleton-fixtures.js';

/**
 * The singleton manager alone: events in, effects out. Its decisions read nothing but its
 * events (the instance's backlog comes back as an event too), so every path through its states
 * can be enumerated with xstate/graph and replayed, and the safety rules checked on each.
 */

const node = (i: number): UniqueNodeAddress => ({ host: `10.0.0.${i}`, port: 2552, uid: `u${i}` });
const A = node(1); // older than us
const SELF = node(2);
const C = node(3); // younger than us
const key = (n: UniqueNodeAddress) => nodeKey(n);

const membership = membershipEvents();
const system = stubSystem(SELF);

const INBOX = refTo(SELF, '/user/singleton-s');

function machine(placement: SingletonPlacement = oldestPlacement) {
  return createManagerMachine(
    system,
    {
      name: 's',
      role: undefined,
      handOverRetryIntervalMs: 100,
      maxHandOverRetries: 3,
      downRemovalMarginMs: 1000,
      drainTimeoutMs: 1000,
      placement,
    },
    { startInstance() {}, stopInstance: () => ({ state: 'last' }), instanceBacklog: () => 0, inbox: INBOX },
  );
}

// the views this node goes through
const together = membership([member(A, 1), member(SELF, 2), member(C, 3)]);
const aLeaving = membership([member(A, 1, 'leaving'), member(SELF, 2), member(C, 3)]);
const aRemoved = membership([member(SELF, 2), member(C, 3)]);
const aDowned = membership([member(SELF, 2), member(C, 3)], [member(A, 1, 'down')]);
const selfLeaving = membership([member(SELF, 2, 'leaving'), member(C, 3)]);
const selfExiting = membership([member(SELF, 2, 'exiting'), member(C, 3)]);
const selfDowned = membership([member(C, 3)], [member(SELF, 2, 'down')]);

const delayed = (delay: string, state: string) =>
  delayedEvent<ManagerEvent>(delay, `singletonManager.${state}`);
const EVENTS = [
  together,
  aLeaving,
  aRemoved,
  aDowned,
  selfLeaving,
  selfExiting,
  selfDowned,
  { type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(C, managerPath('s')) },
  { type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(A, managerPath('s')) },
  { type: 'singleton.handed-over', name: 's', snapshot: { state: 'from A' }, from: key(A) },
  { type: 'singleton.handed-over', name: 's', snapshot: null, from: key(C) }, // not the one asked
  { type: 'singleton.identify', name: 's', replyTo: refTo(C, '/system/singleton-proxy-s') },
  { type: 'singleton.drain-progress', proxy: key(SELF) },
  { type: 'singleton.drain-progress', proxy: key(C) },
  { type: 'singleton.backlog', size: 3 },
  { type: 'singleton.backlog', size: 0 },
  delayed('retry', 'becomingOldest.asking'),
  delayed('margin', 'takingOver'),
  delayed('drainTimeout', 'handingOver.draining'),
  delayed('drainTimeout', 'handingOver.finishing'),
  delayed('backlogPoll', 'handingOver.finishing.measuring'),
] as unknown as ManagerEvent[];

/** Replays events on a live actor of the machine, recording every effect its action `run` gets. */
function replay(events: readonly ManagerEvent[]) {
  const effects: { effect: ManagerEffect; state: string; oldest: boolean }[] = [];
  const logic = machine().provide({
    actions: {
      run: ({ context }, effect: ManagerEffect) =>
        effects.push({ effect, state: '', oldest: context.oldestKey === key(SELF) }),
    },
  });
  const actor = createActor(logic, { clock: new SimulatedClock() });
  actor.start();
  const states: string[] = [stateName(actor.getSnapshot().value)];
  for (const event of events) {
    const before = effects.length;
    actor.send(event);
    const state = stateName(actor.getSnapshot().value);
    for (const e of effects.slice(before)) e.state = state;
    states.push(state);
  }
  return { actor, effects, states };
}

/** What tells two of the manager's snapshots apart for the graph walk (the lease's fields with `leased`). */
function managerPaths(placement: SingletonPlacement, events: ManagerEvent[], leased = false) {
  return getShortestPaths(machine(placement).provide({ actions: { run: () => {} } }), {
    events,
    serializeState: (s) =>
      JSON.stringify({
        v: s.value,
        o: s.context.oldestKey,
        f: s.context.formerOldest,
        i: s.context.inbox !== undefined,
        h: s.context.handOverTo?.id,
        p: s.context.pendingDrains,
        m: s.context.membership?.version,
        ...(leased ? { l: s.context.mandate, b: s.context.blockedBy, a: s.context.askedBlocker } : {}),
      }),
  });
}

describe('singleton manager machine, alone', () => {
  const paths = managerPaths(oldestPlacement, EVENTS);

  it('every state is reachable (path coverage from xstate/graph)', () => {
    expect(reachedStates(paths)).toEqual(
      [
        'start',
        'younger',
        'becomingOldest.asking',
        'takingOver',
        'oldest',
        'handingOver.draining',
        'handingOver.finishing.measuring',
        'end',
      ].sort(),
    );
    expect(paths.length).toBeGreaterThan(50);
  });

  it('on every path: one instance at most, started only as the oldest, stopped before the end; hand-overs never to itself', () => {
    let checked = 0;
    for (const path of paths) {
      const events = path.steps.map((s) => s.event).filter((e) => !e.type.startsWith('xstate.init'));
      const { actor, effects, states } = replay(events);
      // the replay reaches the state the traversal found
      expect(states.at(-1), JSON.stringify(events.map((e) => e.type))).toBe(stateName(path.state.value));
      let running = 0;
      for (const { effect, oldest } of effects) {
        if (effect.kind === 'start-instance') {
          running++;
          expect(running, 'two instances on one node').toBe(1);
          expect(oldest, 'started while not the oldest').toBe(true);
        }
        if (effect.kind === 'stop-instance') running--;
        expect(running).toBeGreaterThanOrEqual(0);
        // hand-overs go between this node and another member, never to itself
        if (effect.kind === 'stop-instance' && effect.confirmTo)
          expect(key(effect.confirmTo.address.node)).not.toBe(key(SELF));
        if (effect.kind === 'ask-hand-over') expect(effect.formerKey).not.toBe(key(SELF));
      }
      const snapshot = actor.getSnapshot();
      const holds = ['oldest', 'handingOver.draining', 'handingOver.finishing.measuring'].includes(
        stateName(snapshot.value),
      );
      expect(running, `instance running in ${stateName(snapshot.value)}`).toBe(holds ? 1 : 0);
      expect(snapshot.context.inbox !== undefined).toBe(holds);
      checked++;
    }
    expect(checked).toBe(paths.length);
  });

  it('graceful hand-over from the leaving oldest: ask, only its confirmation counts, start with its snapshot', () => {
    const { effects, states } = replay([
      together,
      aLeaving,
      { type: 'singleton.handed-over', name: 's', snapshot: null, from: key(C) },
      delayed('retry', 'becomingOldest.asking'),
      { type: 'singleton.handed-over', name: 's', snapshot: { state: 'from A' }, from: key(A) },
    ] as unknown as ManagerEvent[]);
    expect(states).toEqual([
      'start',
      'younger',
      'becomingOldest.asking',
      'becomingOldest.asking',
      'becomingOldest.asking',
      'oldest',
    ]);
    expect(effects.map((e) => e.effect.kind)).toEqual([
      'log',
      'ask-hand-over',
      'ask-hand-over',
      'start-instance',
      'log',
    ]);
    expect(effects.find((e) => e.effect.kind === 'start-instance')!.effect).toEqual({
      kind: 'start-instance',
      snapshot: { state: 'from A' },
    });
  });

  it('a downed former oldest: wait the margin before starting; a removed one too', () => {
    for (const gone of [aDowned, aRemoved]) {
      const { effects, states } = replay([together, aLeaving, gone, delayed('margin', 'takingOver')]);
      expect(states.slice(-3)).toEqual(['becomingOldest.asking', 'takingOver', 'oldest']);
      expect(effects.filter((e) => e.effect.kind === 'start-instance').map((e) => e.state)).toEqual([
        'oldest',
      ]);
    }
  });

  it('handing over waits for every proxy to drain and for the backlog to empty, then stops and confirms', () => {
    const askC = { type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(C, managerPath('s')) };
    const { effects, states } = replay([
      aRemoved,
      delayed('margin', 'takingOver'),
      selfLeaving,
      askC,
      { type: 'singleton.drain-progress', proxy: key(SELF) },
      { type: 'singleton.drain-progress', proxy: key(C) },
      { type: 'singleton.backlog', size: 3 },
      delayed('backlogPoll', 'handingOver.finishing.measuring'),
      { type: 'singleton.backlog', size: 0 },
    ] as unknown as ManagerEvent[]);
    expect(states.slice(1, 4)).toEqual(['oldest', 'oldest', 'oldest']);
    expect(states.slice(4)).toEqual([
      'handingOver.draining',
      'handingOver.draining',
      'handingOver.finishing.measuring',
      'handingOver.finishing.measuring',
      'handingOver.finishing.measuring',
      'younger',
    ]);
    const kinds = effects.map((e) => e.effect.kind);
    expect(kinds.filter((k) => k === 'check-backlog')).toHaveLength(2);
    const stop = effects.find((e) => e.effect.kind === 'stop-instance')!.effect;
    expect(stop).toMatchObject({ reason: 'handed over' });
    expect((stop as { confirmTo: ActorRef }).confirmTo.address.node).toEqual(C);
  });

  it('the backlog is measured again every backlogPoll and the drain timeout ends a hand-over whose backlog never empties', () => {
    let backlog = 5;
    let stopped = 0;
    const logic = createManagerMachine(
      system,
      {
        name: 's',
        role: undefined,
        handOverRetryIntervalMs: 100,
        maxHandOverRetries: 3,
        downRemovalMarginMs: 0,
        drainTimeoutMs: 1000,
        placement: oldestPlacement,
      },
      {
        startInstance() {},
        stopInstance: () => void stopped++,
        instanceBacklog: () => backlog,
        inbox: INBOX,
      },
    );
    const clock = new SimulatedClock();
    const actor = createActor(logic, { clock }).start();
    actor.send(membership([member(SELF, 2), member(C, 3)]));
    expect(stateName(actor.getSnapshot().value)).toBe('oldest');
    actor.send(selfLeaving);
    actor.send({ type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(C, managerPath('s')) });
    actor.send({ type: 'singleton.drain-progress', proxy: key(SELF) });
    actor.send({ type: 'singleton.drain-progress', proxy: key(C) });
    expect(stateName(actor.getSnapshot().value)).toBe('handingOver.finishing.measuring');
    // the real effect executor measures the backlog and sends it back: not empty yet
    for (let t = 0; t < 500; t += 5) clock.increment(5);
    expect(stateName(actor.getSnapshot().value)).toBe('handingOver.finishing.measuring');
    backlog = 0; // the instance worked through it: the next poll finishes
    clock.increment(5);
    expect(stateName(actor.getSnapshot().value)).toBe('younger');
    expect(stopped).toBe(1);

    // a backlog that never empties: the drain timeout still ends the hand-over
    backlog = 7;
    const stuck = createActor(logic, { clock: new SimulatedClock() });
    const stuckClock = (stuck as unknown as { clock: SimulatedClock }).clock;
    stuck.start();
    stuck.send(membership([member(SELF, 2), member(C, 3)]));
    stuck.send(selfLeaving);
    stuck.send({ type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(C, managerPath('s')) });
    stuck.send({ type: 'singleton.drain-progress', proxy: key(SELF) });
    stuck.send({ type: 'singleton.drain-progress', proxy: key(C) });
    for (let t = 0; t < 995; t += 5) stuckClock.increment(5);
    expect(stateName(stuck.getSnapshot().value)).toBe('handingOver.finishing.measuring');
    stuckClock.increment(10);
    expect(stateName(stuck.getSnapshot().value)).toBe('younger');
    expect(stopped).toBe(2);
  });
});

/**
 * A leased placement (the emergent default): the host runs the instance only while the event
 * says it holds the lease (`mandate`), and asks a live member still holding it to hand over
 * (`blockedBy`). On every path: an instance starts only with the mandate, and none survives an
 * event that withdraws it.
 */
describe('singleton manager machine, leased', () => {
  const leased: SingletonPlacement = {
    kind: 'leased-test',
    exclusive: true,
    leased: true,
    hostOf: (m) => singletonHostOf(m),
    subscribe: () => () => {},
  };
  const withLease = <E extends { type: string }>(e: E, mandate: boolean, blockedBy?: string) =>
    ({ ...e, mandate, ...(blockedBy ? { blockedBy } : {}) }) as unknown as ManagerEvent;
  const cUnreachable = membership([member(A, 1), member(SELF, 2), member(C, 3)], [], [key(A)]);
  const LEASED_EVENTS = [
    withLease(together, false),
    withLease(aLeaving, false),
    withLease(aLeaving, true),
    withLease(aRemoved, false),
    withLease(aRemoved, true),
    withLease(aRemoved, false, key(C)),
    withLease(cUnreachable, false),
    withLease(cUnreachable, true),
    withLease(selfLeaving, true),
    withLease(selfDowned, false),
    { type: 'singleton.hand-over-to-me', name: 's', replyTo: refTo(C, managerPath('s')) },
    { type: 'singleton.handed-over', name: 's', snapshot: { state: 'from A' }, from: key(A) },
    { type: 'singleton.handed-over', name: 's', snapshot: null, from: key(C) },
    { type: 'singleton.drain-progress', proxy: key(SELF) },
    { type: 'singleton.drain-progress', proxy: key(C) },
    { type: 'singleton.backlog', size: 0 },
    delayed('retry', 'becomingOldest.asking'),
    delayed('drainTimeout', 'handingOver.draining'),
  ] as unknown as ManagerEvent[];
  const paths = managerPaths(leased, LEASED_EVENTS, true);

  it('reaches the lease gate, the running host, a hand-over and a lease lost', () => {
    const states = reachedStates(paths);
    for (const s of ['starting', 'oldest', 'becomingOldest.asking', 'handingOver.draining'])
      expect(states).toContain(s);
    expect(paths.length).toBeGreaterThan(30);
  });

  it('on every path: started only with the mandate, stopped at once when it is withdrawn', () => {
    let checked = 0;
    for (const path of paths) {
      const events = path.steps.map((s) => s.event).filter((e) => !e.type.startsWith('xstate.init'));
      const effects: ManagerEffect[] = [];
      const actor = createActor(
        machine(leased).provide({ actions: { run: (_, effect: ManagerEffect) => effects.push(effect) } }),
        { clock: new SimulatedClock() },
      );
      actor.start();
      let running = 0;
      for (const event of events) {
        const before = effects.length;
        actor.send(event);
        const mandate = actor.getSnapshot().context.mandate;
        for (const effect of effects.slice(before)) {
          if (effect.kind === 'start-instance') {
            running++;
            expect(mandate, 'started without the lease').toBe(true);
          }
          if (effect.kind === 'stop-instance') running--;
        }
        expect(running).toBeLessThanOrEqual(1);
        if (!mandate) expect(running, `running without the lease after ${event.type}`).toBe(0);
      }
      checked++;
    }
    expect(checked).toBe(paths.length);
  });

  it('a running host whose lease is withdrawn stops at once; a blocked host asks the holder once', () => {
    const effects: ManagerEffect[] = [];
    const actor = createActor(
      machine(leased).provide({ actions: { run: (_, effect: ManagerEffect) => effects.push(effect) } }),
      { clock: new SimulatedClock() },
    );
    actor.start();
    actor.send(withLease(aRemoved, false));
    expect(stateName(actor.getSnapshot().value)).toBe('starting');
    actor.send(withLease(aRemoved, true));
    expect(stateName(actor.getSnapshot().value)).toBe('oldest');
    actor.send(withLease(aRemoved, false));
    // still the host to be: back at the gate, bidding again
    expect(stateName(actor.getSnapshot().value)).toBe('starting');
    expect(effects.filter((e) => e.kind === 'stop-instance')).toEqual([
      { kind: 'stop-instance', reason: 'lost the host lease', confirmTo: undefined },
    ]);
    // C still holds the lease we bid for: ask it, once
    actor.send(withLease(aRemoved, false, key(C)));
    expect(stateName(actor.getSnapshot().value)).toBe('becomingOldest.asking');
    expect(effects.filter((e) => e.kind === 'ask-hand-over')).toEqual([
      { kind: 'ask-hand-over', formerKey: key(C) },
    ]);
    actor.send({ type: 'singleton.handed-over', name: 's', snapshot: null, from: key(C) } as ManagerEvent);
    actor.send(withLease(aRemoved, false, key(C)));
    expect(stateName(actor.getSnapshot().value)).toBe('starting');
    expect(effects.filter((e) => e.kind === 'ask-hand-over')).toHaveLength(1);
  });
});
