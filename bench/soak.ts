// `pnpm bench soak [--minutes 2] [--seed N] [--warmup-s S] [--pause-bound-ms 500] [--long-pauses]`: an
// hour of churn, flat (issue 28). Five real `doyen node` processes on 127.0.0.1 (the CLI from source
// under tsx, `--app lib/soak-app.ts`, `--pause-bound-ms` passed on) for `--minutes`, while a seeded
// scheduler kills (-9) and restarts, gracefully restarts, pauses (SIGSTOP/SIGCONT) and partitions
// (the nodes' POST /fault/blackhole both ways, then /fault/heal) members, one fault at a time with a
// quiet period after each; every node asks the counter singleton through its proxy every 50 ms.
// Pauses keep within the pause bound the singleton's guarantee is stated for (100 ms to the bound,
// default the host lease's 500 ms); `--long-pauses` makes half of them 50 ms over the bound to 3 s.
// Prints a table, then one JSON line:
//   - every process's heap (after a full GC, logged by the app) and RSS at start (its first sample
//     after warm-up: the run's first tenth, 20 s to 5 min, faults included, and 20 s of the process's
//     own), middle and end; a restarted slot starts a new series (n2.p1, n2.p2, …); slot 4 is the
//     witness, never killed, paused or restarted, so its series spans the run. Target: heap end
//     ≤ 1.10 × after warm-up. The ratio without compiled code (V8's code space) is shown beside it.
//   - asks sent / answered / failed and the distinct errors; target: none left hanging (pending
//     past its timeout); asks cut off by a kill -9 of the asking process are counted apart.
//   - overlaps of the singleton's instances (testkit's findInstanceOverlaps on the nodes' logs and the
//     processes' deaths, one clock), each attributed to the fault window it falls in: within the
//     stated assumptions (target 0), or during a pause whose measured stall exceeded the bound
//     (outside them: reported, expected, no target).
//   - false downings: a member downed in a quiet period, or one no fault touched; target 0.
// The seed is printed; the same seed plays the same faults (their timing follows the cluster).

import { DEFAULT_HOST_LEASE } from '../packages/singleton/src/leased-placement.js';
import { installSignalCleanup, liveProcesses } from './lib/node-processes.js';
import { defaultWarmupMs, runSoak } from './lib/soak-run.js';
import { formatBytes, soakRows, soakSummary } from './lib/soak-table.js';
import { printResult } from './lib/stats.js';
import { formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const USAGE =
  'usage: pnpm bench soak [--minutes N] [--seed N] [--warmup-s N] [--pause-bound-ms N] [--long-pauses]';

interface SoakFlags {
  minutes?: number;
  seed?: number;
  'warmup-s'?: number;
  'pause-bound-ms'?: number;
  'long-pauses'?: boolean;
}

function parseFlags(argv: readonly string[]): SoakFlags {
  const numeric = new Set(['minutes', 'seed', 'warmup-s', 'pause-bound-ms']);
  const flags: Record<string, number | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.replace(/^--/, '');
    if (name === 'long-pauses') {
      flags[name] = true;
      continue;
    }
    const value = Number(argv[++i]);
    if (!numeric.has(name) || !Number.isFinite(value) || value < 0) throw new Error(USAGE);
    flags[name] = value;
  }
  return flags as SoakFlags;
}

const flags = parseFlags(process.argv.slice(2));
const pauseBoundMs = flags['pause-bound-ms'] ?? DEFAULT_HOST_LEASE.pauseBoundMs;
const longPauses = flags['long-pauses'] ?? false;
const minutes = flags.minutes ?? 2;
const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);
const warmupMs = flags['warmup-s'] === undefined ? defaultWarmupMs(minutes) : flags['warmup-s'] * 1000;
installSignalCleanup();
// the run, the warm-up and up to a minute for the last fault, its recovery and the end
startWatchdog('soak', minutes + 3);

process.stderr.write(
  `soak: ${minutes} min, seed ${seed} (--seed ${seed} plays the same faults), pause bound ${pauseBoundMs} ms` +
    `${longPauses ? ', long pauses too' : ''}\n`,
);
const result = await runSoak({
  minutes,
  seed,
  warmupMs,
  pauseBoundMs,
  longPauses,
  log: (line) => process.stderr.write(`${line}\n`),
});
const summary = soakSummary(result);
console.log(formatTable(soakRows(result)));
console.log(
  `\nseed ${seed}: ${result.faults} faults in ${(result.runMs / 60_000).toFixed(1)} min, ${result.processes} processes` +
    `; overlaps within the stated assumptions ${summary.overlaps}` +
    `, during a pause beyond ${pauseBoundMs} ms ${summary.overlapsBeyondPauseBound}` +
    `; false downings ${summary.falseDownings}; hanging asks ${summary.asks.hanging}` +
    (result.figures.overlaps ? `\n${result.figures.overlapText}` : '') +
    (result.figures.overlapsBeyondPauseBound
      ? `\nbeyond the bound:\n${result.figures.overlapBeyondText}`
      : ''),
);
for (const e of summary.asks.errorKinds) console.log(`  asks failed ×${e.count}: ${e.message}`);
if (summary.witness) {
  const w = summary.witness;
  console.log(
    `witness ${w.proc}: heap ${formatBytes(w.heapStart)} → ${formatBytes(w.heapEnd)} (×${w.heapRatio.toFixed(3)}) over ${w.spanS} s`,
  );
}
printResult({ ...summary, liveProcessesAfter: liveProcesses() });
