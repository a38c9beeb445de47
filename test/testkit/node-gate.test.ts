import { afterEach, describe, expect, it } from 'vitest';
import type { ActorSystem, Message } from '../../packages/core/src/index.js';
import { ManualScheduler, Simulation, VirtualClock } from '../../packages/testkit/src/index.js';
import { NodeGate } from '../../packages/testkit/src/node-gate.js';

describe('NodeGate', () => {
  it('passes timers and turns straight through while nothing is held (same ids, same times)', () => {
    const clock = new VirtualClock();
    const scheduler = new ManualScheduler();
    const gate = new NodeGate(clock, scheduler);
    const fired: string[] = [];
    const id = gate.setTimeout(() => fired.push(`t@${clock.now()}`), 10);
    gate.schedule(() => fired.push('turn'));
    expect(clock.pending).toBe(1);
    expect(scheduler.runAll()).toBe(1);
    clock.advance(20);
    expect(fired).toEqual(['turn', 't@10']);
    expect(typeof id).toBe('number');
  });

  it('holds timers that come due, then fires them in due order at the release; a cleared one never fires', () => {
    const clock = new VirtualClock();
    const gate = new NodeGate(clock, new ManualScheduler());
    const fired: string[] = [];
    gate.hold({ timers: true, turns: false });
    gate.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
    gate.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    const cleared = gate.setTimeout(() => fired.push('cleared'), 15);
    clock.advance(50);
    expect(fired).toEqual([]);
    gate.clearTimeout(cleared);
    gate.release();
    clock.advance(0);
    expect(fired).toEqual(['a@50', 'b@50']);
  });

  it('holds dispatcher turns until the release, then queues them in order', () => {
    const scheduler = new ManualScheduler();
    const gate = new NodeGate(new VirtualClock(), scheduler);
    const ran: number[] = [];
    gate.hold({ timers: false, turns: true });
    gate.schedule(() => ran.push(1));
    gate.schedule(() => ran.push(2));
    expect(scheduler.runAll()).toBe(0);
    gate.release();
    scheduler.runAll();
    expect(ran).toEqual([1, 2]);
  });
});

describe('Simulation: freeze and holdTimers', () => {
  let sim: Simulation;
  afterEach(() => sim?.shutdown());

  function two(): { a: ActorSystem; b: ActorSystem; inbox: number[] } {
    sim = new Simulation({ seed: 1, network: { jitterMs: 0 } });
    const a = sim.addSystem({ cluster: 't', host: '10.0.0.1', port: 2552 });
    const b = sim.addSystem({ cluster: 't', host: '10.0.0.2', port: 2552 });
    b.messageTypes.register('test.ping');
    const inbox: number[] = [];
    b.functionRef('inbox', () => inbox.push(sim.now), 'user');
    sim.clock.setTimeout(() => a.remoteRef<Message>(b.node, '/user/inbox').send({ type: 'test.ping' }), 10);
    return { a, b, inbox };
  }

  it('freeze stops a node like SIGSTOP: its timers and inbound messages wait for the thaw, the others run on', async () => {
    const { a, b, inbox } = two();
    const fired: string[] = [];
    a.clock.setTimeout(() => fired.push(`a@${sim.now}`), 30);
    b.clock.setTimeout(() => fired.push(`b@${sim.now}`), 30);
    sim.freeze(b, 100);
    expect(sim.isHeld(b)).toBe(true);
    await sim.runFor(99);
    expect(fired).toEqual(['a@30']);
    expect(inbox).toEqual([]);
    await sim.runFor(1);
    expect(fired).toEqual(['a@30', 'b@100']);
    expect(inbox).toEqual([100]);
    expect(sim.isHeld(b)).toBe(false);
  });

  it('holdTimers starves a node: its timers fire at the spell end, its messages are still handled', async () => {
    const { b, inbox } = two();
    const fired: number[] = [];
    b.clock.setTimeout(() => fired.push(sim.now), 30);
    sim.holdTimers(b, 100);
    await sim.runFor(50);
    expect(inbox).toEqual([11]);
    expect(fired).toEqual([]);
    await sim.runFor(50);
    expect(fired).toEqual([100]);
  });

  it('thaw ends a hold at once; a longer hold is never shortened by a shorter one', async () => {
    const { b } = two();
    const fired: number[] = [];
    b.clock.setTimeout(() => fired.push(sim.now), 30);
    sim.freeze(b, 200);
    sim.freeze(b, 50);
    await sim.runFor(150);
    expect(fired).toEqual([]);
    sim.thaw(b);
    await sim.runFor(1);
    expect(fired).toEqual([150]);
  });
});
