// `pnpm bench baselines`: what messaging costs without doyen, on this machine, today.
// Prints a table, then one JSON line of medians that doyen's figures are compared against.
import {
  bareXstateMachineSendRate,
  bareXstateTransitionSendRate,
  nactTellRate,
  rawWsMsgpackrRemoteRate,
  rawWsPingPongLatency,
} from './lib/baselines.js';
import { median, printResult, runs } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';

const RUNS = 5;

type Figures = Record<string, number>;
type Case = {
  name: string;
  unit: 'msgs/s' | 'µs';
  /** In-process cases warm the JIT once first; the raw ws ones warm up inside each measurement. */
  warmup?: () => Promise<unknown>;
  measure: () => Promise<Figures>;
};

const cases: Case[] = [
  {
    name: 'xstate createMachine send',
    unit: 'msgs/s',
    warmup: () => bareXstateMachineSendRate(50_000),
    measure: async () => ({ xstateMachineSendPerSec: await bareXstateMachineSendRate(200_000) }),
  },
  {
    name: 'xstate fromTransition send',
    unit: 'msgs/s',
    warmup: () => bareXstateTransitionSendRate(100_000),
    measure: async () => ({ xstateTransitionSendPerSec: await bareXstateTransitionSendRate(500_000) }),
  },
  {
    name: 'nact dispatch',
    unit: 'msgs/s',
    warmup: () => nactTellRate(50_000),
    measure: async () => ({ nactTellPerSec: await nactTellRate(200_000) }),
  },
  {
    name: 'raw ws+msgpackr, ≤64 KiB frames',
    unit: 'msgs/s',
    measure: async () => ({
      rawWsBatchedPerSec: await rawWsMsgpackrRemoteRate({ messages: 2_000_000, batchBytes: 64 * 1024 }),
    }),
  },
  {
    name: 'raw ws+msgpackr, frame per message',
    unit: 'msgs/s',
    measure: async () => ({
      rawWsFramePerMessagePerSec: await rawWsMsgpackrRemoteRate({ messages: 250_000, batchBytes: 0 }),
    }),
  },
  {
    name: 'raw ws+msgpackr ping-pong',
    unit: 'µs',
    measure: async () => {
      const { p50, p99 } = await rawWsPingPongLatency(20_000);
      return { rawWsPingPongP50Us: p50, rawWsPingPongP99Us: p99 };
    },
  },
];

const header = ['figure', 'unit', ...Array.from({ length: RUNS }, (_, i) => `run ${i + 1}`), 'median'];
const rows: string[][] = [header];
const medians: Figures = {};

for (const c of cases) {
  process.stderr.write(`measuring ${c.name} …\n`);
  await c.warmup?.();
  const figures = await runs(RUNS, c.measure);
  for (const key of Object.keys(figures[0] ?? {})) {
    const xs = figures.map((f) => f[key] ?? Number.NaN);
    const digits = c.unit === 'µs' ? 1 : 0;
    medians[key] = Number(median(xs).toFixed(digits));
    rows.push([key, c.unit, ...xs.map((x) => formatFigure(x, digits)), formatFigure(medians[key], digits)]);
  }
}

console.log(formatTable(rows));
printResult({ bench: 'baselines', runs: RUNS, ...medians });
