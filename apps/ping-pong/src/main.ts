/**
 * Two nodes in one process, talking over real WebSockets on 127.0.0.1: a `pinger` actor on
 * node A asks a `ponger` machine on node B, which answers through the ref it was sent.
 */
import { type ActorRef, createLogger, type Message } from '@doyen/core';
import { WsTransport } from '@doyen/wire';
import { assign, setup } from 'xstate';

type Ping = { type: 'demo.ping'; n: number; replyTo: ActorRef<Pong> };
type Pong = { type: 'demo.pong'; n: number; served: number; by: string };

const ponger = setup({
  types: {
    context: {} as { served: number; name: string },
    events: {} as Ping,
    input: {} as { name: string },
  },
}).createMachine({
  context: ({ input }) => ({ served: 0, name: input.name }),
  on: {
    'demo.ping': {
      actions: [
        assign({ served: ({ context }) => context.served + 1 }),
        ({ context, event }) =>
          event.replyTo.send({ type: 'demo.pong', n: event.n, served: context.served, by: context.name }),
      ],
    },
  },
});

async function main(): Promise<void> {
  const logger = createLogger({ level: process.env.DOYEN_LOG_LEVEL ?? 'warn' });
  const secret = 'ping-pong-demo';
  const a = await WsTransport.start({
    cluster: 'demo',
    host: '127.0.0.1',
    port: 0,
    logger,
    wire: { secret },
  });
  const b = await WsTransport.start({
    cluster: 'demo',
    host: '127.0.0.1',
    port: 0,
    logger,
    wire: { secret },
  });
  for (const t of [a, b]) t.system.messageTypes.register(['demo.ping', 'demo.pong']);

  const pongerRef = b.system.spawn(ponger, { name: 'ponger', input: { name: b.system.nodeName } });
  console.log(`node A at ${a.system.nodeName}, node B at ${b.system.nodeName}`);
  console.log(`ponger lives at ${pongerRef.id}`);

  // Node A knows the ponger only by its address string: location transparency.
  const remote = a.system.refFor<Ping>(pongerRef.id);
  for (let n = 1; n <= 5; n++) {
    const started = process.hrtime.bigint();
    const pong = await remote.ask<Pong>((replyTo) => ({ type: 'demo.ping', n, replyTo }), { timeout: 2000 });
    const micros = Number(process.hrtime.bigint() - started) / 1000;
    console.log(`A -> B ping ${n}: pong from ${pong.by} (served ${pong.served}) in ${micros.toFixed(0)} µs`);
  }

  // And a burst of tells, answered to a function actor on A.
  let pongs = 0;
  const done = new Promise<void>((resolve) => {
    a.system.functionRef(
      'pong-counter',
      (m: Message) => {
        if (m.type === 'demo.pong' && ++pongs === 10_000) resolve();
      },
      'user',
    );
  });
  const counter = a.system.lookup('/user/pong-counter')! as ActorRef<Pong>;
  const started = Date.now();
  for (let n = 0; n < 10_000; n++) remote.send({ type: 'demo.ping', n, replyTo: counter });
  await done;
  console.log(`10000 pings and pongs across the wire in ${Date.now() - started} ms`);
  console.log(`dead letters: A ${a.system.deadLetters.count}, B ${b.system.deadLetters.count}`);
  await Promise.all([a.close(), b.close()]);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
