// `pnpm bench fanout [--runs N] [--nodes N] [--actors N] [--messages N] [--wire JSON] [--prof DIR]`:
// fan-in and fan-out across a cluster. `--nodes` (5) doyen node processes on 127.0.0.1, all-to-all, `--actors` (1,000) actors each;
// every actor, kicked locally, tells random actors of the other nodes (nodes round-robin, so each node
// sends and receives `--messages` (200k) a round). Aggregate throughput (all nodes' messages over the
// span from the first start to the last arrival) and latency p50/p99 (each message carries its send
// time, CLOCK_MONOTONIC, one clock for every process on the machine), beside raw ws + msgpackr in the
// same topology and traffic (fanout-raw-node.ts), round by round, and the ratios. Prints a table, then
// one JSON line of medians. Beside them, CPU per message (all node processes' CPU time over the
// messages received) and event-loop utilisation: on a loaded machine the throughput says how much CPU
// the bench got, these what a message cost and whether the nodes ever waited (issue 31: ~1.0, so
// throughput is CPU share over CPU per message). `--wire JSON` gives the doyen nodes wire settings to
// try (e.g. '{"inboundTurnBudgetMs":10}'); `--prof DIR` writes a CPU profile of each doyen node's rounds.
import { FanoutCluster, type FanoutRound } from './lib/fanout-cluster.js';
import { intArg, runsArg } from './lib/runs-arg.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const RUNS = runsArg(3);
const NODES = intArg('nodes', 5);
const ACTORS = intArg('actors', 1_000);
/** Per node, rounded up to a multiple of (nodes - 1) × 16: nodes round-robin, 16 tells per kick. */
const MESSAGES = roundUp(intArg('messages', 200_000), Math.max(1, NODES - 1) * 16);
if (NODES < 2) throw new Error('--nodes must be at least 2');
const profAt = process.argv.indexOf('--prof');
if (profAt >= 0) process.env.FANOUT_PROF_DIR = process.argv[profAt + 1] ?? '.';
const wireAt = process.argv.indexOf('--wire');
if (wireAt >= 0) {
  const wire = process.argv[wireAt + 1] ?? '';
  JSON.parse(wire); // fails here, not in five child processes
  process.env.FANOUT_WIRE = wire;
}

startWatchdog('fanout', 10 + RUNS * 2);

type Figures = Record<string, number>;
const perRun: Figures[] = [];
const startedAt = performance.now();
const clusters: FanoutCluster[] = [];
try {
  process.stderr.write(`starting ${NODES} doyen and ${NODES} raw ws node processes …\n`);
  const doyen = await FanoutCluster.start('doyen', NODES, ACTORS);
  clusters.push(doyen);
  const raw = await FanoutCluster.start('raw', NODES, ACTORS);
  clusters.push(raw);
  // warm-up: connections, handshakes and the JIT, on both
  await doyen.round(roundUp(MESSAGES / 5, (NODES - 1) * 16));
  await raw.round(roundUp(MESSAGES / 5, (NODES - 1) * 16));
  for (let run = 0; run < RUNS; run++) {
    process.stderr.write(`run ${run + 1}/${RUNS} …\n`);
    const d = checked(await doyen.round(MESSAGES));
    const r = await raw.round(MESSAGES);
    perRun.push({
      doyenPerSec: d.perSec,
      rawPerSec: r.perSec,
      doyenP50Us: d.p50Us,
      doyenP99Us: d.p99Us,
      rawP50Us: r.p50Us,
      rawP99Us: r.p99Us,
      doyenCpuUsPerMsg: d.cpuUsPerMsg,
      rawCpuUsPerMsg: r.cpuUsPerMsg,
      doyenElu: d.elu,
      rawElu: r.elu,
    });
  }
} finally {
  await Promise.all(clusters.map((cluster) => cluster.close()));
}

const figures = [
  { key: 'rawPerSec', label: 'raw ws + msgpackr: aggregate msgs/s', digits: 0 },
  { key: 'doyenPerSec', label: 'doyen: aggregate msgs/s', digits: 0 },
  { key: 'rawP50Us', label: 'raw ws + msgpackr: latency p50 (µs)', digits: 0 },
  { key: 'doyenP50Us', label: 'doyen: latency p50 (µs)', digits: 0 },
  { key: 'rawP99Us', label: 'raw ws + msgpackr: latency p99 (µs)', digits: 0 },
  { key: 'doyenP99Us', label: 'doyen: latency p99 (µs)', digits: 0 },
  { key: 'rawCpuUsPerMsg', label: 'raw ws + msgpackr: CPU µs per message', digits: 2 },
  { key: 'doyenCpuUsPerMsg', label: 'doyen: CPU µs per message', digits: 2 },
  { key: 'rawElu', label: 'raw ws + msgpackr: event-loop utilisation', digits: 2 },
  { key: 'doyenElu', label: 'doyen: event-loop utilisation', digits: 2 },
];
const medians: Figures = {};
const rows: string[][] = [
  [
    `${NODES} nodes all-to-all, ${ACTORS.toLocaleString('en-US')} actors each, ${MESSAGES.toLocaleString('en-US')} msgs per node`,
    ...perRun.map((_, i) => `run ${i + 1}`),
    'median',
  ],
];
for (const { key, label, digits } of figures) {
  const xs = perRun.map((f) => f[key]!);
  medians[`fanout${key[0]!.toUpperCase()}${key.slice(1)}`] = Number(median(xs).toFixed(digits));
  rows.push([`  ${label}`, ...xs.map((x) => formatFigure(x, digits)), formatFigure(median(xs), digits)]);
}
const ratio = (a: string, b: string) => Number(median(perRun.map((f) => f[a]! / f[b]!)).toFixed(2));
const ratios = {
  fanoutVsRawRatio: ratio('doyenPerSec', 'rawPerSec'),
  fanoutP50VsRawRatio: ratio('doyenP50Us', 'rawP50Us'),
  fanoutP99VsRawRatio: ratio('doyenP99Us', 'rawP99Us'),
  fanoutCpuPerMsgVsRawRatio: ratio('doyenCpuUsPerMsg', 'rawCpuUsPerMsg'),
};
rows.push(['doyen / raw ws (median of per-run ratios)']);
rows.push(['  aggregate throughput', ...perRun.map(() => ''), formatFigure(ratios.fanoutVsRawRatio, 2)]);
rows.push(['  latency p50', ...perRun.map(() => ''), formatFigure(ratios.fanoutP50VsRawRatio, 2)]);
rows.push(['  latency p99', ...perRun.map(() => ''), formatFigure(ratios.fanoutP99VsRawRatio, 2)]);
rows.push(['  CPU per message', ...perRun.map(() => ''), formatFigure(ratios.fanoutCpuPerMsgVsRawRatio, 2)]);

console.log(formatTable(rows));
console.log(`\n${RUNS} runs in ${formatFigure((performance.now() - startedAt) / 1_000, 1)} s`);
printResult({
  bench: 'fanout',
  runs: RUNS,
  nodes: NODES,
  actors: ACTORS,
  messages: MESSAGES,
  ...(process.env.FANOUT_WIRE ? { wire: JSON.parse(process.env.FANOUT_WIRE) as object } : {}),
  ...medians,
  ...ratios,
});

/** A doyen round that lost messages on the way would be timed on fewer: fail instead. */
function checked(round: FanoutRound): FanoutRound {
  if (round.lost > 0) throw new Error(`doyen lost ${round.lost} messages (dead letters, rejections)`);
  return round;
}

function roundUp(n: number, multiple: number): number {
  return Math.ceil(n / multiple) * multiple;
}
