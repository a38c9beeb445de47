// doyen's in-process tell: the same counting logic as xstate-baselines.ts, spawned as a doyen actor, so
// the difference is the mailbox and dispatcher between `ref.send` and xstate's `send` (for `fromTransition`,
// doyen runs the reducer on its own cell: no xstate actor underneath).
import { type AnyActorLogic, fromTransition } from 'xstate';
import { counterMachine, type Inc } from './counter-machine.js';
import { ActorSystem } from './doyen.js';
import { perSecond } from './stats.js';
import { withTimeout } from './timeout.js';

/** msgs/s of `ref.send({ type: 'inc' })` to a `createMachine` actor whose only action is an `assign` that counts. */
export function doyenMachineTellRate(messages: number): Promise<number> {
  return tellRate(messages, (reached) =>
    counterMachine((count) => {
      if (count === messages) reached();
    }),
  );
}

/** Same as `doyenMachineTellRate`, with a `fromTransition` reducer in place of a machine. */
export function doyenTransitionTellRate(messages: number): Promise<number> {
  return tellRate(messages, (reached) =>
    fromTransition(
      (state: { count: number }, _event: Inc) => {
        const count = state.count + 1;
        if (count === messages) reached();
        return { count };
      },
      { count: 0 },
    ),
  );
}

export type BurstFigures = { processed: number; dropped: number; ms: number };

/**
 * A burst of `messages` tells from this (non-actor) caller to a `fromTransition` counter with the DEFAULT
 * mailbox, as a user would spawn it: how many it processed, how many were dropped (dead letters, mailbox
 * drops), and the time until the last one was processed.
 */
export async function doyenLocalBurst(messages: number): Promise<BurstFigures> {
  const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 0 });
  try {
    let processed = 0;
    let target = Number.POSITIVE_INFINITY;
    let reached!: () => void;
    const done = new Promise<void>((resolve) => (reached = resolve));
    const counter = system.spawn(
      fromTransition((n: number, _event: Inc) => {
        if (++processed === target) reached();
        return n + 1;
      }, 0),
      { name: 'burst' },
    );
    const start = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) counter.send({ type: 'inc' });
    // Drops happen on send: after the loop we know how many the actor will ever see.
    const dropped = system.deadLetters.count;
    target = messages - dropped;
    if (processed < target) await withTimeout(done, 60_000, 'doyen burst');
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    return { processed, dropped, ms };
  } finally {
    system.terminate();
  }
}

/**
 * Spawns the counter with the default (unbounded) mailbox, sends every message from this (non-actor)
 * caller, and stops the clock when the actor has processed the last one: the logic itself reports it,
 * so nothing else (a snapshot listener, a poll) runs per message.
 */
async function tellRate(messages: number, logicOf: (reached: () => void) => AnyActorLogic): Promise<number> {
  const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 0 });
  try {
    let reached!: () => void;
    const done = new Promise<void>((resolve) => (reached = resolve));
    const counter = system.spawn(logicOf(reached), { name: 'counter' });
    const start = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) counter.send({ type: 'inc' });
    await withTimeout(done, 30_000, 'doyen counter');
    const rate = perSecond(messages, start, process.hrtime.bigint());
    if (system.deadLetters.count > 0) throw new Error(`${system.deadLetters.count} dead letters`);
    return rate;
  } finally {
    system.terminate();
  }
}
