// Burst workloads for `pnpm bench actors`, each on doyen `fromTransition` actors (caller-runs drain on or
// off) and on bare xstate actors with the same reducers. Each returns messages processed per second,
// timed until the last one was processed.
//   external  one non-actor caller tells one actor `messages` times (the burst the drain was made for)
//   ring      `ringSize` actors pass `tokens` tokens around, each token hopping `hops` times: every
//             message is told by an actor to an actor (the drain never runs inside an actor's turn)
//   fan-in    `senders` actors each get `kicks` kicks from outside, round-robin, and tell one sink actor
//             `perKick` messages per kick: k senders to one actor
import { type AnyActorLogic, createActor, fromTransition } from 'xstate';
import { ActorSystem } from './doyen.js';
import { withTimeout } from './timeout.js';

export type Side = 'doyen-drain' | 'doyen-no-drain' | 'bare';

export type BurstShape = {
  messages: number;
  ringSize: number;
  hops: number;
  senders: number;
  perKick: number;
};

type Msg = { type: 'm'; left: number };
type Tell = (to: number, message: Msg) => void;

/** Spawns `logics` on one side and returns a tell by index and a close. */
function population(side: Side, logics: AnyActorLogic[]): { tell: Tell; close: () => void } {
  if (side === 'bare') {
    const actors = logics.map((logic) => createActor(logic).start());
    return {
      tell: (to, message) => actors[to]!.send(message),
      close: () => {
        for (const actor of actors) actor.stop();
      },
    };
  }
  const system = new ActorSystem({
    cluster: 'bench',
    host: '127.0.0.1',
    port: 0,
    // 0 turns the caller-runs drain off (see DispatcherConfig.drainBacklogAt)
    ...(side === 'doyen-no-drain' ? { dispatcher: { drainBacklogAt: 0 } } : {}),
  });
  const refs = logics.map((logic) => system.spawn(logic));
  return {
    tell: (to, message) => refs[to]!.send(message),
    close: () => {
      const dead = system.deadLetters.count;
      system.terminate();
      if (dead > 0) throw new Error(`${dead} dead letters`);
    },
  };
}

/** Runs `drive` against the population and resolves with msgs/s once `expected` messages were processed. */
async function timed(
  side: Side,
  expected: number,
  logicsOf: (count: () => void, tell: Tell) => AnyActorLogic[],
  drive: (tell: Tell) => void,
): Promise<number> {
  let processed = 0;
  let reached!: () => void;
  const done = new Promise<void>((resolve) => (reached = resolve));
  const count = () => {
    if (++processed === expected) reached();
  };
  // the reducers tell through `tell`, which exists only once the population does
  let tell: Tell = () => {
    throw new Error('told before the population was spawned');
  };
  const pop = population(
    side,
    logicsOf(count, (to, m) => tell(to, m)),
  );
  tell = pop.tell;
  try {
    const start = process.hrtime.bigint();
    drive(tell);
    if (processed < expected) await withTimeout(done, 120_000, `${side} burst`);
    return expected / (Number(process.hrtime.bigint() - start) / 1e9);
  } finally {
    pop.close();
  }
}

// Every tell carries a fresh message, as application code's do: a queued burst is garbage to collect.
export function externalBurst(side: Side, shape: BurstShape): Promise<number> {
  return timed(
    side,
    shape.messages,
    (count) => [
      fromTransition((n: number, _m: Msg) => {
        count();
        return n + 1;
      }, 0),
    ],
    (tell) => {
      for (let i = 0; i < shape.messages; i++) tell(0, { type: 'm', left: i });
    },
  );
}

export function ringBurst(side: Side, shape: BurstShape): Promise<number> {
  const { ringSize, hops } = shape;
  const tokens = Math.max(1, Math.round(shape.messages / hops));
  return timed(
    side,
    tokens * hops,
    (count, tell) =>
      Array.from({ length: ringSize }, (_, i) =>
        fromTransition((n: number, m: Msg) => {
          count();
          if (m.left > 1) tell((i + 1) % ringSize, { type: 'm', left: m.left - 1 });
          return n + 1;
        }, 0),
      ),
    (tell) => {
      for (let t = 0; t < tokens; t++) tell(t % ringSize, { type: 'm', left: hops });
    },
  );
}

export function fanInBurst(side: Side, shape: BurstShape): Promise<number> {
  const { senders, perKick } = shape;
  const kicks = Math.max(1, Math.round(shape.messages / (senders * perKick)));
  // index 0 is the sink, 1..senders the senders
  return timed(
    side,
    kicks * senders * perKick,
    (count, tell) => [
      fromTransition((n: number, _m: Msg) => {
        count();
        return n + 1;
      }, 0),
      ...Array.from({ length: senders }, () =>
        fromTransition((n: number, m: Msg) => {
          for (let i = 0; i < m.left; i++) tell(0, { type: 'm', left: i });
          return n + 1;
        }, 0),
      ),
    ],
    (tell) => {
      for (let k = 0; k < kicks; k++)
        for (let s = 1; s <= senders; s++) tell(s, { type: 'm', left: perKick });
    },
  );
}
