// The messaging bench's local figures, each in a fresh process (messaging-local-child.ts): taken in the
// bench's own process they came after the remote sections (their sockets, timers, child process and heap
// still there), and a full run's local ask read 2.1 µs against 1.2 µs in a probe; a fresh process gives
// every figure, doyen's and its baseline's, the same start.
import { fileURLToPath } from 'node:url';
import { startIpcChild } from './ipc-child.js';
import type { LocalFigure, LocalReport } from './messaging-local-child.js';

const script = fileURLToPath(new URL('./messaging-local-child.ts', import.meta.url));

/** Runs one figure in a fresh process and returns its report. */
export async function localFigure(figure: LocalFigure, count: number): Promise<LocalReport> {
  const { ready, stop } = await startIpcChild<LocalReport>(
    script,
    `messaging-local-child (${figure})`,
    { DOYEN_BENCH_LOCAL: figure, DOYEN_BENCH_LOCAL_COUNT: String(count) },
    120_000,
  );
  await stop();
  return ready;
}

export type MachinePair = { doyen: LocalReport; xstate: LocalReport };

/**
 * doyen's machine actor and bare xstate, each in its own fresh process, one after the other; `doyenFirst`
 * alternates from round to round so neither side always runs on the machine the other just left.
 */
export async function machinePair(messages: number, doyenFirst: boolean): Promise<MachinePair> {
  if (doyenFirst) {
    const doyen = await localFigure('machine-doyen', messages);
    return { doyen, xstate: await localFigure('machine-xstate', messages) };
  }
  const xstate = await localFigure('machine-xstate', messages);
  return { doyen: await localFigure('machine-doyen', messages), xstate };
}
