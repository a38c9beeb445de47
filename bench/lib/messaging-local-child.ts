// Child process for the messaging bench's local figures: each measurement runs in a fresh process, so no
// figure depends on what ran before it in the bench (JIT feedback, the heap's size and state, open sockets
// and timers of the remote sections). DOYEN_BENCH_LOCAL selects the figure:
//   machine-doyen / machine-xstate: `ref.send` / `actor.send` of N `inc` to a createMachine counter, in steady
//     state: the same actor first takes N as warm-up (machine-steady-cpu.ts)
//   ask: N sequential local asks to a fromTransition echo
// It reports once over IPC and exits when the parent disconnects.

import { doyenLocalAskLatency } from './doyen-local-ask.js';
import { steadyMachineCpu } from './machine-steady-cpu.js';
import { cpuNow, cpuPer } from './messaging-cpu.js';
import { settleHeap } from './settle-heap.js';

export type LocalFigure = 'machine-doyen' | 'machine-xstate' | 'ask';
export type LocalReport = {
  figure: LocalFigure;
  /** Messages (or asks) per second, wall clock. */
  perSec: number;
  /** Main-thread CPU per message (or ask), ns. */
  threadNs: number;
  /** CPU of every thread per message (or ask), ns: adds the GC's helper threads and the compilers. */
  processNs: number;
  /** Ask round trip, µs (ask only). */
  p50Us?: number;
  p99Us?: number;
};

if (!process.send) {
  console.error('messaging-local-child reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const figure = process.env.DOYEN_BENCH_LOCAL as LocalFigure;
const count = Number(process.env.DOYEN_BENCH_LOCAL_COUNT ?? 200_000);

async function measure(): Promise<LocalReport> {
  if (figure === 'ask') {
    await doyenLocalAskLatency(count);
    settleHeap();
    const started = performance.now();
    const from = cpuNow();
    const latency = await doyenLocalAskLatency(count, 0);
    const cpu = cpuPer(count, from);
    const perSec = count / ((performance.now() - started) / 1_000);
    return { figure, perSec, ...cpu, p50Us: latency.p50, p99Us: latency.p99 };
  }
  if (figure !== 'machine-doyen' && figure !== 'machine-xstate') throw new Error(`unknown figure ${figure}`);
  // The same warm-up on both sides, as long as the run and on the same actor: with a quarter of it the
  // optimising compiler was still at work in the measured window, and with a fresh actor it recompiled
  // there (its threads' CPU showed up as ~250 ns per message, varying from run to run).
  return { figure, ...(await steadyMachineCpu(figure === 'machine-doyen' ? 'doyen' : 'xstate', count)) };
}

process.send(await measure());
process.on('disconnect', () => process.exit(0));
