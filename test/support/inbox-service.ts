// The service the receptionist tests register and look up: one inbox per node that says where it runs.
import { setup } from 'xstate';
import { ServiceKey } from '../../packages/cluster/src/index.js';
import type { ActorRef } from '../../packages/core/src/index.js';

export type Hi = { type: 'hi'; from: string };
export type Hello = { type: 'hello'; replyTo: ActorRef<Hi> };

export const Inbox = new ServiceKey<Hello>('inbox');

/** Answers with the ref id of where it runs (its node incarnation's uid included). */
export const inbox = setup({
  types: { context: {} as { at: string }, events: {} as Hello, input: {} as { at: string } },
}).createMachine({
  context: ({ input }) => ({ at: input.at }),
  on: { hello: { actions: ({ event, context }) => event.replyTo.send({ type: 'hi', from: context.at }) } },
});
