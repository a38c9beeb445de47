// The `createMachine` counter the local messaging figures send to: one `assign` that counts.
import { assign, createMachine } from 'xstate';

export type Inc = { type: 'inc' };

/** The counter; `onCount` sees each new count (it tells the bench when a round is done). */
export function counterMachine(onCount: (count: number) => void) {
  return createMachine({
    types: {} as { context: { count: number }; events: Inc },
    context: { count: 0 },
    on: {
      inc: {
        actions: assign({
          count: ({ context }) => {
            const count = context.count + 1;
            onCount(count);
            return count;
          },
        }),
      },
    },
  });
}
