// @ts-check
// An app module for `doyen node --app ./app.js` (or DOYEN_APP): doyen calls `setup` for every
// incarnation of the node, so what it builds here comes back after a downing.
import { parseNodeAddress } from 'doyen';
import { assign, fromTransition, setup as machineSetup } from 'xstate';

/** Defaults this app brings (flags, DOYEN_* variables and --config win): it routes no keys. */
export const config = { partitions: { count: 0 } };

/** The message types peers may send this app's actors. */
export const MESSAGE_TYPES = ['counter.increment', 'counter.value', 'greeter.greet'];

/** @typedef {{ type: 'counter.value'; count: number }} CounterValue */
/** @typedef {{ type: 'counter.increment'; replyTo: import('doyen').ActorRef<CounterValue> }} Increment */
/** @typedef {{ type: 'greeter.greet'; from: string }} Greet */

/** One count for the whole cluster: a singleton on the oldest member; each increment answers the new count. */
const counter = machineSetup({
  types: { context: /** @type {{ count: number }} */ ({}), events: /** @type {Increment} */ ({}) },
}).createMachine({
  context: { count: 0 },
  on: {
    'counter.increment': {
      actions: [
        assign({ count: ({ context }) => context.count + 1 }),
        ({ context, event }) => event.replyTo.send({ type: 'counter.value', count: context.count }),
      ],
    },
  },
});

/** @param {import('doyen').ActorRef<CounterValue>} replyTo @returns {Increment} */
const increment = (replyTo) => ({ type: 'counter.increment', replyTo });

/**
 * @param {import('doyen').DoyenNode} node
 * @param {import('doyen').IncarnationInfo} incarnation
 */
export function setup(node, incarnation) {
  node.system.messageTypes.register(MESSAGE_TYPES);
  // every node runs a greeter; the others tell it hello when they see this node up
  node.system.spawn(
    fromTransition((greetings, /** @type {Greet} */ event) => {
      node.logger.info({ event: 'example.greeted', from: event.from });
      return greetings + 1;
    }, 0),
    { name: 'greeter' },
  );
  const proxy = node.singletons.register('counter', counter);
  // this incarnation's membership (setup runs again, with a new one, after a restart)
  const cluster = node.cluster;
  const self = cluster.self;
  const greeted = new Set();
  /** @param {{ address: string; uid: string; status: string }} member */
  const greet = (member) => {
    if (member.status !== 'up' || member.uid === self.node.uid || greeted.has(member.uid)) return;
    greeted.add(member.uid);
    // a ref to the greeter on that member's incarnation (host:port#uid names it exactly)
    /** @type {import('doyen').ActorRef<Greet>} */
    const greeter = node.system.remoteRef(
      { ...parseNodeAddress(member.address), uid: member.uid },
      '/user/greeter',
    );
    greeter.send({ type: 'greeter.greet', from: self.key });
  };
  cluster.subscribe((event) => {
    if (event.type === 'member.up') greet(event.member);
  });
  cluster
    .whenUp()
    .then(() => {
      for (const member of cluster.state().membership?.members ?? []) greet(member);
      // count once through the proxy, wherever the singleton runs
      return proxy.ask(increment, { timeout: 10_000 });
    })
    .then(
      (reply) =>
        node.logger.info({ event: 'example.counter', count: reply.count, incarnation: incarnation.number }),
      (error) => node.logger.warn({ event: 'example.counter-failed', error: String(error) }),
    );
}
