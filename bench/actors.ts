// `pnpm bench actors [--runs N] [--actors N] [--machines N] [--burst N]`: many actors on one node, each
// figure beside bare xstate's in the same run (interleaved, round by round) and the ratio. Prints tables,
// then one JSON line of medians.
//   1. population: spawn `--actors` (1M) `fromTransition` actors and `--machines` (100k) `createMachine`
//      actors, each population in a fresh process (actor-population-child.ts): spawn rate, heap and RSS
//      per idle actor after a full GC, tells (a fifth of the actors' number for `fromTransition`, as
//      many for machines) to random targets until all were processed. Bare xstate:
//      `createActor(logic).start()` per actor, the same logic object and the same target sequence.
//      The target: doyen's bytes per idle `fromTransition` actor minus bare xstate's ≤ 400.
//   2. bursts (`--burst` messages each, in this process): one caller → one actor, actor → actor (a
//      ring), k actors → one actor; doyen with the caller-runs drain on and off, and bare xstate. Each
//      figure is the best of BURST_TRIES interleaved tries per round (the least disturbed, both sides).
import { type BurstShape, externalBurst, fanInBurst, ringBurst, type Side } from './lib/actor-bursts.js';
import { measurePopulation, type PopulationCase, type PopulationFigures } from './lib/actor-population.js';
import { intArg, runsArg } from './lib/runs-arg.js';
import { settleHeap } from './lib/settle-heap.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const RUNS = runsArg(3);
const ACTORS = intArg('actors', 1_000_000);
const MACHINES = intArg('machines', 100_000);
const BURST = intArg('burst', 1_000_000);
const BURST_TRIES = 3;
/** Target: doyen's heap bytes per idle `fromTransition` actor over bare xstate's. */
const OVERHEAD_TARGET_BYTES = 400;

startWatchdog('actors', 20 + Math.ceil((RUNS * ACTORS) / 200_000));

type Figures = Record<string, number>;
const perRun: Figures[] = Array.from({ length: RUNS }, () => ({}));

// ---- 1. population -------------------------------------------------------------------------
const populations: { prefix: string; spec: Omit<PopulationCase, 'impl'> }[] = [
  // a fifth as many tells as actors: enough for the rate; a tell per actor would double bare xstate's time
  { prefix: 'transition', spec: { logic: 'transition', actors: ACTORS, tells: Math.ceil(ACTORS / 5) } },
  { prefix: 'machine', spec: { logic: 'machine', actors: MACHINES, tells: MACHINES } },
];
const populationFigures: { key: keyof PopulationFigures; label: string; digits: number }[] = [
  { key: 'spawnPerSec', label: 'spawns/s', digits: 0 },
  { key: 'heapBytesPerActor', label: 'heap bytes per idle actor', digits: 0 },
  { key: 'rssBytesPerActor', label: 'RSS bytes per idle actor', digits: 0 },
  { key: 'tellPerSec', label: 'tells/s, random targets', digits: 0 },
  { key: 'heapBytesPerActorAfterTells', label: 'heap bytes per actor after the tells', digits: 0 },
];

// ---- 2. bursts -----------------------------------------------------------------------------
const shape: BurstShape = { messages: BURST, ringSize: 1_000, hops: 100, senders: 8, perKick: 16 };
const bursts = [
  { name: 'external', label: '1 caller -> 1 actor', run: externalBurst },
  { name: 'ring', label: 'actor -> actor, ring of 1,000, 100 hops a token', run: ringBurst },
  { name: 'fanIn', label: '8 actors -> 1 actor, 16 tells per kick', run: fanInBurst },
] as const;
const sides: { side: Side; key: string; label: string }[] = [
  { side: 'bare', key: 'Bare', label: 'bare xstate' },
  { side: 'doyen-drain', key: 'DoyenDrain', label: 'doyen, drain on (default)' },
  { side: 'doyen-no-drain', key: 'DoyenNoDrain', label: 'doyen, drain off' },
];

const startedAt = performance.now();
for (let run = 0; run < RUNS; run++) {
  for (const { prefix, spec } of populations) {
    for (const impl of ['doyen', 'bare'] as const) {
      process.stderr.write(`run ${run + 1}/${RUNS}: ${impl} ${spec.logic} ×${spec.actors} …\n`);
      const figures = await measurePopulation({ impl, ...spec });
      for (const { key } of populationFigures)
        perRun[run]![`${prefix}${cap(impl)}${cap(key)}`] = figures[key];
    }
  }
  process.stderr.write(`run ${run + 1}/${RUNS}: bursts …\n`);
  if (run === 0) for (const b of bursts) for (const { side } of sides) await b.run(side, warmShape());
  for (let t = 0; t < BURST_TRIES; t++) {
    for (const b of bursts) {
      for (const { side, key } of sides) {
        settleHeap();
        const rate = await b.run(side, shape);
        const k = `${b.name}${key}PerSec`;
        perRun[run]![k] = Math.max(perRun[run]![k] ?? 0, rate);
      }
    }
  }
}

// ---- report --------------------------------------------------------------------------------
const medians: Figures = {};
const rows: string[][] = [['figure', ...perRun.map((_, i) => `run ${i + 1}`), 'median']];
const row = (key: string, label: string, digits: number) => {
  const xs = perRun.map((f) => f[key] ?? Number.NaN);
  medians[key] = Number(median(xs).toFixed(digits));
  rows.push([`  ${label}`, ...xs.map((x) => formatFigure(x, digits)), formatFigure(medians[key], digits)]);
};
for (const { prefix, spec } of populations) {
  rows.push([
    `1. ${spec.actors.toLocaleString('en-US')} ${spec.logic} actors, ${spec.tells.toLocaleString('en-US')} tells`,
  ]);
  for (const { key, label, digits } of populationFigures)
    for (const impl of ['bare', 'doyen'] as const)
      row(
        `${prefix}${cap(impl)}${cap(key)}`,
        `${impl === 'bare' ? 'bare xstate' : 'doyen'}: ${label}`,
        digits,
      );
}
for (const b of bursts) {
  rows.push([`2. burst, ${BURST.toLocaleString('en-US')} messages: ${b.label} (msgs/s)`]);
  for (const { key, label } of sides) row(`${b.name}${key}PerSec`, label, 0);
}

const ratios: Figures = {};
const missed: string[] = [];
const comparisonRows: string[][] = [['comparison (median of per-run values)', 'value', 'target', 'met']];
const compare = (
  key: string,
  label: string,
  value: (f: Figures) => number,
  target?: (v: number) => boolean,
  bound = '',
) => {
  const v = Number(median(perRun.map(value)).toFixed(key.endsWith('Bytes') ? 0 : 2));
  ratios[key] = v;
  const met = target?.(v);
  if (met === false) missed.push(key);
  comparisonRows.push([
    label,
    formatFigure(v, key.endsWith('Bytes') ? 0 : 2),
    bound,
    met === undefined ? '' : met ? 'yes' : 'NO',
  ]);
};
const over = (a: string, b: string) => (f: Figures) => f[a]! / f[b]!;
compare(
  'transitionOverheadBytes',
  'doyen - bare xstate, heap bytes per idle fromTransition actor',
  (f) => f.transitionDoyenHeapBytesPerActor! - f.transitionBareHeapBytesPerActor!,
  (v) => v <= OVERHEAD_TARGET_BYTES,
  `<= ${OVERHEAD_TARGET_BYTES}`,
);
compare(
  'machineOverheadBytes',
  'doyen - bare xstate, heap bytes per idle createMachine actor',
  (f) => f.machineDoyenHeapBytesPerActor! - f.machineBareHeapBytesPerActor!,
);
for (const { prefix } of populations) {
  compare(
    `${prefix}SpawnVsBareRatio`,
    `${prefix}: spawn rate, doyen / bare`,
    over(`${prefix}DoyenSpawnPerSec`, `${prefix}BareSpawnPerSec`),
  );
  compare(
    `${prefix}HeapVsBareRatio`,
    `${prefix}: heap per idle actor, doyen / bare`,
    over(`${prefix}DoyenHeapBytesPerActor`, `${prefix}BareHeapBytesPerActor`),
  );
  compare(
    `${prefix}RssVsBareRatio`,
    `${prefix}: RSS per idle actor, doyen / bare`,
    over(`${prefix}DoyenRssBytesPerActor`, `${prefix}BareRssBytesPerActor`),
  );
  compare(
    `${prefix}TellVsBareRatio`,
    `${prefix}: tells to random targets, doyen / bare`,
    over(`${prefix}DoyenTellPerSec`, `${prefix}BareTellPerSec`),
  );
}
for (const b of bursts) {
  compare(
    `${b.name}DrainVsBareRatio`,
    `${b.name}: doyen drain on / bare`,
    over(`${b.name}DoyenDrainPerSec`, `${b.name}BarePerSec`),
  );
  compare(
    `${b.name}NoDrainVsBareRatio`,
    `${b.name}: doyen drain off / bare`,
    over(`${b.name}DoyenNoDrainPerSec`, `${b.name}BarePerSec`),
  );
}

console.log(formatTable(rows));
console.log();
console.log(formatTable(comparisonRows));
console.log(`\n${RUNS} runs in ${formatFigure((performance.now() - startedAt) / 1_000, 1)} s`);
printResult({
  bench: 'actors',
  runs: RUNS,
  actors: ACTORS,
  machines: MACHINES,
  burst: BURST,
  ...medians,
  ...ratios,
  targetsMissed: missed,
});

function cap(s: string): string {
  return s[0]!.toUpperCase() + s.slice(1);
}

/** A tenth of the burst, to warm the JIT on every workload and side before the first timed one. */
function warmShape(): BurstShape {
  return { ...shape, messages: Math.max(shape.hops, Math.floor(shape.messages / 10)) };
}
