import { fromTransition } from 'xstate';
import type { Ping } from './bench-messages.js';

/** An xstate echo actor (through a mailbox): answers each `bench.ping` with a `bench.pong` to its `replyTo`. */
export const echoLogic = fromTransition((state: null, event: Ping) => {
  if (event.type === 'bench.ping') event.replyTo.send({ type: 'bench.pong', n: event.n });
  return state;
}, null);
