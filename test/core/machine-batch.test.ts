// A machine actor's batch (XstateRuntime.run) ends at the message that fails or stops the actor: the
// messages queued behind it in the same batch wait for the next incarnation, or become dead letters,
// and are never handed to the xstate actor that is gone (which would drop them without a trace).
import { afterEach, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import type { ActorRef, ActorSystem, Message } from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';

let current: ActorSystem | undefined;
afterEach(() => current?.terminate());

/** Counts `inc`; `boom` throws; `quit` calls `onQuit` (the test stops the actor there). */
function counter(onQuit: () => void = () => {}) {
  return setup({ types: { context: {} as { count: number }, events: {} as Message } }).createMachine({
    context: { count: 0 },
    on: {
      inc: { actions: assign({ count: ({ context }) => context.count + 1 }) },
      boom: {
        actions: () => {
          throw new Error('boom');
        },
      },
      quit: { actions: () => onQuit() },
    },
  });
}

describe('a machine actor batch', () => {
  it('ends at the failing message: the rest of the batch goes to the restarted actor', () => {
    const { system, clock, scheduler, letters } = makeCoreSystem();
    current = system;
    const ref = system.spawn(counter(), { name: 'fragile' });
    for (const type of ['inc', 'boom', 'inc', 'inc']) ref.send({ type });
    // positive control: all four wait in the mailbox, so one turn hands them out in one batch
    expect(system.mailboxSize(ref)).toBe(4);
    scheduler.runAll();
    // failed on `boom`: the two behind it stay queued through the backoff
    expect(system.mailboxSize(ref)).toBe(2);
    clock.increment(100);
    scheduler.runAll();
    expect(system.snapshotOf(ref)).toMatchObject({ context: { count: 2 } });
    expect(letters).toEqual([]);
  });

  it('ends where the actor is stopped: the rest of the batch become dead letters', () => {
    const { system, scheduler, letters } = makeCoreSystem();
    current = system;
    let self: ActorRef | undefined;
    const ref = system.spawn(
      counter(() => system.stop(self!)),
      { name: 'quitter' },
    );
    self = ref;
    for (const type of ['inc', 'quit', 'inc', 'inc']) ref.send({ type });
    // positive control: the stop comes inside one batch of four, not at a turn boundary
    expect(system.mailboxSize(ref)).toBe(4);
    // What ends this batch is the stop itself: it drains the mailbox into dead letters in the same
    // call, so the batch loop finds nothing more (its actor check matters for a failure, above). A
    // stop that left the mailbox queued fails this test whether or not the loop checks the actor.
    scheduler.runAll();
    expect(letters.map((l) => [l.reason, l.message.type])).toEqual([
      ['actor-stopped', 'inc'],
      ['actor-stopped', 'inc'],
    ]);
  });
});
