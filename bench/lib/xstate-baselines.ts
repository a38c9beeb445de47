// Bare xstate v5 actors: the floor under any framework that wraps xstate for its actors' behaviour.
import { type AnyActorRef, assign, createActor, createMachine, fromTransition } from 'xstate';
import { perSecond } from './stats.js';
import { withTimeout } from './timeout.js';

type Inc = { type: 'inc' };

/** msgs/s of `send({ type: 'inc' })` into a `createMachine` actor whose only action is an `assign` that counts. */
export async function bareXstateMachineSendRate(messages: number): Promise<number> {
  const machine = createMachine({
    types: {} as { context: { count: number }; events: Inc },
    context: { count: 0 },
    on: { inc: { actions: assign({ count: ({ context }) => context.count + 1 }) } },
  });
  return sendRate(createActor(machine), messages, (snapshot) => snapshot.context.count);
}

/** Same as `bareXstateMachineSendRate`, with a `fromTransition` reducer in place of a machine. */
export async function bareXstateTransitionSendRate(messages: number): Promise<number> {
  const logic = fromTransition((state: { count: number }, _event: Inc) => ({ count: state.count + 1 }), {
    count: 0,
  });
  return sendRate(createActor(logic), messages, (snapshot) => snapshot.context.count);
}

async function sendRate<A extends AnyActorRef>(
  actor: A,
  messages: number,
  countOf: (snapshot: ReturnType<A['getSnapshot']>) => number,
): Promise<number> {
  actor.start();
  try {
    const start = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) actor.send({ type: 'inc' });
    // xstate processes sends synchronously today; wait anyway so the figure stays honest if that changes.
    await withTimeout(reached(actor, messages, countOf), 30_000, 'xstate counter');
    return perSecond(messages, start, process.hrtime.bigint());
  } finally {
    actor.stop();
  }
}

function reached<A extends AnyActorRef>(
  actor: A,
  n: number,
  countOf: (snapshot: ReturnType<A['getSnapshot']>) => number,
): Promise<void> {
  if (countOf(actor.getSnapshot()) >= n) return Promise.resolve();
  return new Promise((resolve) => {
    const sub = actor.subscribe((snapshot: ReturnType<A['getSnapshot']>) => {
      if (countOf(snapshot) < n) return;
      sub.unsubscribe();
      resolve();
    });
  });
}
