// The counter the singleton tests register: `count` adds one, `total` answers the count so far
// (a hand-over with a snapshot keeps it, a restart starts again at 0).
import { assign, setup } from 'xstate';
import type { ActorRef } from '../../packages/core/src/index.js';

export type CounterEvent =
  | { type: 'count' }
  | { type: 'total'; replyTo: ActorRef<{ type: 'total.is'; count: number }> };

export const counter = setup({
  types: { context: {} as { count: number }, events: {} as CounterEvent },
}).createMachine({
  context: { count: 0 },
  on: {
    count: { actions: assign({ count: ({ context }) => context.count + 1 }) },
    total: {
      actions: ({ context, event }) => event.replyTo.send({ type: 'total.is', count: context.count }),
    },
  },
});
