// The createMachine counter's CPU per message in steady state, for the messaging bench's section 9: one
// actor, doyen's or bare xstate's, takes `messages` sends as warm-up and then `messages` more, measured.
// A fresh system and actor for the measured run (as section 1 does) made V8 throw away and recompile the
// hot code of both sides inside the measured window (new machine objects, new maps: "wrong map"
// deopts); that one-time compiler work on its helper threads was ~240 ns of the ~1,800 ns per message
// of 300k and moved from run to run, more on doyen's side, whose send path the sender's loop inlines.
// Kept warm, both sides show what each message costs.
import { createActor } from 'xstate';
import { counterMachine, type Inc } from './counter-machine.js';
import { ActorSystem } from './doyen.js';
import { type CpuReading, cpuNow, cpuPer } from './messaging-cpu.js';
import { settleHeap } from './settle-heap.js';
import { withTimeout } from './timeout.js';

export type MachineSide = 'doyen' | 'xstate';

/** CPU per message (main thread and all threads) and msgs/s of the measured round. */
export async function steadyMachineCpu(
  side: MachineSide,
  messages: number,
): Promise<CpuReading & { perSec: number }> {
  let target = 0;
  let reached: () => void = () => {};
  // the same counter on both sides
  const machine = counterMachine((count) => {
    if (count === target) reached();
  });
  const until = (count: number) =>
    new Promise<void>((resolve) => {
      target = count;
      reached = resolve;
    });
  let send: (message: Inc) => void;
  let close: () => void;
  if (side === 'doyen') {
    const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 0 });
    const ref = system.spawn(machine, { name: 'counter' });
    send = (message) => ref.send(message);
    close = () => system.terminate();
  } else {
    const actor = createActor(machine).start();
    send = (message) => actor.send(message);
    close = () => actor.stop();
  }
  const round = async (from: number) => {
    const done = until(from + messages);
    for (let i = 0; i < messages; i++) send({ type: 'inc' });
    await withTimeout(done, 60_000, `${side} counter`);
  };
  try {
    await round(0);
    settleHeap();
    const started = performance.now();
    const from = cpuNow();
    await round(messages);
    const cpu = cpuPer(messages, from);
    return { ...cpu, perSec: messages / ((performance.now() - started) / 1_000) };
  } finally {
    close();
  }
}
