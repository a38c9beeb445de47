// A tell through a local ref: the ref the system made at spawn goes straight to its cell (no path
// lookup); any other local ref, and a spawn ref whose actor has stopped, goes by path. Issue 31 changed
// how `deliver` recognises the first kind (a module-private symbol instead of `instanceof`): these pin
// down that both kinds still arrive, and that a stale ref never reaches a stopped cell.
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import { type ActorSystem, LocalActorRef, type Message } from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

const counter = () => fromTransition((n: number, _e: Message) => n + 1, 0);

describe('a local tell', () => {
  it('from the spawn ref reaches its actor; after a stop it is a dead letter', () => {
    const { system, scheduler, letters } = makeCoreSystem();
    current = system;
    const ref = system.spawn(counter(), { name: 'c' });
    ref.send({ type: 'inc' });
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: 1 });
    system.stop(ref);
    ref.send({ type: 'inc' });
    expect(letters.map((l) => l.reason)).toEqual(['no-such-actor']);
  });

  it('from a stale spawn ref reaches the actor spawned again at its path, not the stopped one', () => {
    const { system, scheduler } = makeCoreSystem();
    current = system;
    const old = system.spawn(counter(), { name: 'c' });
    system.stop(old);
    const fresh = system.spawn(counter(), { name: 'c' });
    old.send({ type: 'inc' });
    old.send({ type: 'inc' });
    scheduler.runAll();
    expect(system.snapshotOf(fresh)).toMatchObject({ context: 2 });
  });

  it('from a local ref the system did not make at spawn goes by path', () => {
    const { system, scheduler, letters } = makeCoreSystem();
    current = system;
    const ref = system.spawn(counter(), { name: 'c' });
    // a plain LocalActorRef to the same address, as a user or another module could build one
    const other = new LocalActorRef(system, ref.address, ref.id);
    // positive control: it is not the spawn ref, so it holds no cell
    expect(other).not.toBe(ref);
    other.send({ type: 'inc' });
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: 1 });
    expect(letters).toEqual([]);
  });
});
