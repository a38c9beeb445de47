// `pnpm chaos sharding [--runs N] [--seed S] [--faults F] [--entities E] [--unsafe-skip-fence] [--lease-ms N] [--log-dir DIR] [--out FILE] [--from-source]`: the
// witness of sharded entities' guarantees (issue 29). Each run starts five hosting `doyen node`
// processes and one sender node, each a host of its own in a network namespace, plays F seeded
// faults (kill -9 + restart, SIGSTOP past the detector, symmetric and one-way nftables cuts,
// graceful leaves + joins) under a steady load of sequence-numbered asks to E entities, heals,
// probes every entity, and checks from the nodes' logs and the sender's records: overlapping
// activations, messages lost outside unplanned faults, duplicates, per-sender order, entities
// unreachable after healing (bench/lib/chaos-sharding-checker.ts). Run i uses seed S + i; the
// seed of every failing run is printed, and the exit code is 1 when any run failed.
// `--log-dir DIR` keeps every run's log lines (chaos-sharding-<seed>.jsonl: the evidence).
// `--out FILE` (default .bench-out/chaos-sharding-<seed>-<time>.jsonl) gets one JSON line per
// finished run as it finishes (seed, verdict, duration, phases, load), so a partial series is
// quotable; SIGINT / SIGTERM stop the series at once, killing the nodes and deleting the namespaces.
// The namespaces are set up once and reused by every run; each run starts its own processes.
// `--unsafe-skip-fence` is the positive control: the keepers skip the fence; with `--lease-ms 10000`
// (an owner lease longer than detection + downing, so that only the fence orders a successor after a
// cut-off owner) the partitions of the plan must show overlaps.
// The nodes run the built CLI (`pnpm build` first: a bundle older than any package's sources is
// refused); `--from-source` runs them from the TypeScript sources under tsx instead (~3× the CPU
// per node start). Needs root, `ip netns` and nft (or iptables).
import { appendFileSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTopology, netnsMissing } from '../test/support/netns.js';
import { bundleStaleness } from './lib/built-cli.js';
import { describeViolations } from './lib/chaos-sharding-checker.js';
import { CHAOS_HOSTS, type ChaosRunResult, runChaos } from './lib/chaos-sharding-run.js';
import { median } from './lib/stats.js';

const USAGE =
  'usage: pnpm chaos sharding [--runs N] [--seed S] [--faults F] [--entities E] [--unsafe-skip-fence] [--lease-ms N] [--log-dir DIR] [--out FILE] [--from-source]';
/** The issue's figure: this many runs, none failed. */
const RUNS_TARGET = 200;

function parse(argv: readonly string[]) {
  const [what, ...rest] = argv;
  if (what !== 'sharding') throw new Error(USAGE);
  const flags: Record<string, number> = {};
  let unsafeSkipFence = false;
  let fromSource = false;
  let logDir: string | undefined;
  let out: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const name = rest[i]!.replace(/^--/, '');
    if (name === 'unsafe-skip-fence') {
      unsafeSkipFence = true;
      continue;
    }
    if (name === 'from-source') {
      fromSource = true;
      continue;
    }
    if (name === 'log-dir') {
      logDir = rest[++i];
      if (!logDir) throw new Error(USAGE);
      continue;
    }
    if (name === 'out') {
      out = rest[++i];
      if (!out) throw new Error(USAGE);
      continue;
    }
    const value = Number(rest[++i]);
    if (
      !['runs', 'seed', 'faults', 'entities', 'lease-ms'].includes(name) ||
      !Number.isInteger(value) ||
      value < 0
    )
      throw new Error(USAGE);
    flags[name] = value;
  }
  return {
    runs: flags.runs ?? 1,
    seed: flags.seed ?? Math.floor(Math.random() * 2 ** 31),
    faults: flags.faults ?? 6,
    entities: flags.entities ?? 500,
    unsafeSkipFence,
    fromSource,
    logDir,
    out,
    leaseMs: flags['lease-ms'],
  };
}

let options: ReturnType<typeof parse>;
try {
  options = parse(process.argv.slice(2));
} catch (e) {
  console.error((e as Error).message);
  process.exit(2);
}
const missing = netnsMissing();
if (missing.length > 0) {
  console.error(`chaos sharding needs network namespaces: missing ${missing.join(', ')}`);
  process.exit(2);
}

// the nodes run the built bundle: a bundle older than the sources would test old code
const stale = options.fromSource ? undefined : bundleStaleness();
if (stale) {
  console.error(`chaos sharding: ${stale} (or pass --from-source)`);
  process.exit(2);
}

const log = (line: string) => process.stderr.write(`${line}\n`);
log(
  `chaos sharding: ${options.runs} run(s) from seed ${options.seed}, ${options.faults} faults each, ` +
    `${options.entities} entities${options.unsafeSkipFence ? ', FENCE SKIPPED (positive control)' : ''}`,
);
const out =
  options.out ??
  join(
    fileURLToPath(new URL('../.bench-out', import.meta.url)),
    `chaos-sharding-${options.seed}-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`,
  );
mkdirSync(dirname(out), { recursive: true });
if (options.logDir !== undefined) mkdirSync(options.logDir, { recursive: true });
const record = (line: Record<string, unknown>) =>
  appendFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), ...line })}\n`);
log(`chaos sharding: one line per finished run in ${out}`);
let current: number | undefined;
// Stop at once: the run under way is abandoned (the lines of the finished ones are in `out`);
// process.exit runs the exit hooks, which kill -9 every node (testkit's NodeProcess) and delete
// every namespace (the topology's).
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`${signal}: stopping; run of seed ${current ?? '-'} abandoned, nodes killed, namespaces deleted`);
    record({ stopped: signal, abandonedSeed: current ?? null });
    process.exit(130);
  });
const topoStart = Date.now();
const topo = createTopology(CHAOS_HOSTS, { tag: 'chaos' });
log(`chaos sharding: ${CHAOS_HOSTS.length} namespaces and a bridge set up in ${Date.now() - topoStart} ms`);
const results: ChaosRunResult[] = [];
/** Each finished run's whole wall-clock time, ms. */
const durations: number[] = [];
try {
  for (let i = 0; i < options.runs; i++) {
    const seed = options.seed + i;
    current = seed;
    const logFile =
      options.logDir === undefined ? undefined : join(options.logDir, `chaos-sharding-${seed}.jsonl`);
    const { leaseMs, out: _out, ...rest } = options;
    const runStart = Date.now();
    const r = await runChaos({
      topo,
      ...rest,
      seed,
      log,
      ...(logFile ? { logFile } : {}),
      ...(leaseMs !== undefined ? { leaseMs } : {}),
    });
    // the whole run: start, faults, probe, stop and check
    const ms = Date.now() - runStart;
    if (logFile) console.log(`  logs: ${logFile}`);
    results.push(r);
    durations.push(ms);
    const f = r.verdict.figures;
    const failed = r.verdict.violations.length > 0 || r.error !== undefined;
    record({
      run: i + 1,
      seed,
      verdict: failed ? 'failed' : 'ok',
      ms,
      rules: [...new Set(r.verdict.violations.map((v) => v.rule))],
      ...(r.error ? { error: r.error } : {}),
      phases: r.phases,
      sent: f.sent,
      received: f.received,
      activations: f.activations,
      lossChecked: f.lossChecked,
      linesLost: Object.values(r.linesLost).reduce((a, b) => a + b, 0),
      probe: `${f.probeAnswered}/${f.probed}`,
      played: r.played,
      load1: Number(loadavg()[0]!.toFixed(2)),
      ...(logFile ? { logFile } : {}),
    });
    console.log(
      `run ${i + 1}/${options.runs} seed ${seed}: ${failed ? 'FAILED' : 'ok'} in ${(ms / 1000).toFixed(0)} s; ` +
        `${f.sent} sent (${f.lossChecked} outside every fault window: their loss is not excused), ` +
        `${f.received} received, ${f.lostInFaults} lost in unplanned faults, ` +
        `${f.lostOnLeaseLoss.length} lost to an owner-lease loss outside them, ` +
        `${f.activations} activations, ${f.frozenOverlaps} overlaps with a frozen side, ` +
        `probe ${f.probeAnswered}/${f.probed}${r.error ? `; ${r.error}` : ''}`,
    );
    if (Object.keys(r.linesLost).length > 0)
      console.log(`  log lines lost on the way to the runner: ${JSON.stringify(r.linesLost)}`);
    console.log(
      `  phases: ${Object.entries(r.phases)
        .map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s`)
        .join(', ')}`,
    );
    for (const p of r.played) console.log(`  ${p}`);
    for (const l of r.verdict.figures.lostOnLeaseLoss.slice(0, 5))
      console.log(`  lost on a lease loss: ${l}`);
    if (r.verdict.violations.length > 0) console.log(describeViolations(r.verdict.violations));
  }
} finally {
  current = undefined;
  await topo.teardown();
}
const failing = results.filter((r) => r.verdict.violations.length > 0 || r.error !== undefined);
console.log(
  `\n${results.length} runs, ${failing.length} failed` +
    (failing.length > 0 ? `; failing seeds: ${failing.map((r) => r.seed).join(', ')}` : ''),
);
const runSeconds = durations.map((ms) => ms / 1000).sort((a, b) => a - b);
const summary = {
  runs: results.length,
  runsTarget: RUNS_TARGET,
  failedRuns: failing.length,
  failedRunsTarget: 0,
  // the checker reads lines: any lost on the way weakens what a run shows
  logLinesLost: results.reduce((n, r) => n + Object.values(r.linesLost).reduce((a, b) => a + b, 0), 0),
  logLinesLostTarget: 0,
  medianRunS: runSeconds.length > 0 ? Number(median(runSeconds).toFixed(1)) : null,
  maxRunS: runSeconds.length > 0 ? Number(runSeconds[runSeconds.length - 1]!.toFixed(1)) : null,
  failed: failing.map((r) => ({
    seed: r.seed,
    rules: [...new Set(r.verdict.violations.map((v) => v.rule))],
    error: r.error,
  })),
  unsafeSkipFence: options.unsafeSkipFence,
  out,
};
record({ summary });
console.log(JSON.stringify(summary));
process.exit(failing.length > 0 ? 1 : 0);
