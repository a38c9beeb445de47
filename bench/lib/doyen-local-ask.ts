// doyen's in-process ask: sequential asks from this (non-actor) caller to a `fromTransition` actor that
// answers each on its reply ref, timed from the call to the settled promise (the round trip a caller sees).
import { fromTransition } from 'xstate';
import { type ActorRef, ActorSystem, type Message } from './doyen.js';
import type { Latency } from './raw-ws.js';
import { percentile } from './stats.js';

type Ping = { type: 'bench.ping'; n: number; replyTo: ActorRef<Pong> };
type Pong = { type: 'bench.pong'; n: number };

/** p50 and p99 round trip (µs) of `rounds` sequential asks, after `warmup` unmeasured ones. */
export async function doyenLocalAskLatency(rounds: number, warmup = 5_000): Promise<Latency> {
  const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 0 });
  try {
    const echo = system.spawn(
      fromTransition((state: null, event: Message) => {
        const ping = event as Ping;
        ping.replyTo.send({ type: 'bench.pong', n: ping.n });
        return state;
      }, null),
      { name: 'echo' },
    );
    const ask = (n: number) =>
      echo.ask<Pong>((replyTo) => ({ type: 'bench.ping', n, replyTo }) as Message, { timeout: 5_000 });
    for (let i = 0; i < warmup; i++) await ask(i);
    const rtts: number[] = new Array(rounds);
    for (let i = 0; i < rounds; i++) {
      const start = process.hrtime.bigint();
      const pong = await ask(i);
      rtts[i] = Number(process.hrtime.bigint() - start) / 1_000;
      if (pong.n !== i) throw new Error(`pong ${pong.n} for ping ${i}`);
    }
    return { p50: percentile(rtts, 50), p99: percentile(rtts, 99) };
  } finally {
    system.terminate();
  }
}
