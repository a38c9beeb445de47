// `pnpm chaos sharding [--runs N] [--seed S] [--faults F] [--entities E] [--unsafe-skip-fence] [--lease-ms N] [--log-dir DIR]`: the
// witness of sharded entities' guarantees (issue 29). Each run starts five hosting `doyen node`
// processes and one sender node, each a host of its own in a network namespace, plays F seeded
// faults (kill -9 + restart, SIGSTOP past the detector, symmetric and one-way nftables cuts,
// graceful leaves + joins) under a steady load of sequence-numbered asks to E entities, heals,
// probes every entity, and checks from the nodes' logs and the sender's records: overlapping
// activations, messages lost outside unplanned faults, duplicates, per-sender order, entities
// unreachable after healing (bench/lib/chaos-sharding-checker.ts). Run i uses seed S + i; the
// seed of every failing run is printed, and the exit code is 1 when any run failed.
// `--log-dir DIR` keeps every run's log lines (chaos-sharding-<seed>.jsonl: the evidence).
// `--unsafe-skip-fence` is the positive control: the keepers skip the fence; with `--lease-ms 10000`
// (an owner lease longer than detection + downing, so that only the fence orders a successor after a
// cut-off owner) the partitions of the plan must show overlaps.
// Needs root, `ip netns` and nft (or iptables).
import { join } from 'node:path';
import { createTopology, netnsMissing } from '../test/support/netns.js';
import { describeViolations } from './lib/chaos-sharding-checker.js';
import { CHAOS_HOSTS, type ChaosRunResult, runChaos } from './lib/chaos-sharding-run.js';

const USAGE =
  'usage: pnpm chaos sharding [--runs N] [--seed S] [--faults F] [--entities E] [--unsafe-skip-fence] [--lease-ms N] [--log-dir DIR]';

function parse(argv: readonly string[]) {
  const [what, ...rest] = argv;
  if (what !== 'sharding') throw new Error(USAGE);
  const flags: Record<string, number> = {};
  let unsafeSkipFence = false;
  let logDir: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const name = rest[i]!.replace(/^--/, '');
    if (name === 'unsafe-skip-fence') {
      unsafeSkipFence = true;
      continue;
    }
    if (name === 'log-dir') {
      logDir = rest[++i];
      if (!logDir) throw new Error(USAGE);
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
    logDir,
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

const log = (line: string) => process.stderr.write(`${line}\n`);
log(
  `chaos sharding: ${options.runs} run(s) from seed ${options.seed}, ${options.faults} faults each, ` +
    `${options.entities} entities${options.unsafeSkipFence ? ', FENCE SKIPPED (positive control)' : ''}`,
);
const topo = createTopology(CHAOS_HOSTS, { tag: 'chaos' });
const results: ChaosRunResult[] = [];
try {
  for (let i = 0; i < options.runs; i++) {
    const seed = options.seed + i;
    const logFile =
      options.logDir === undefined ? undefined : join(options.logDir, `chaos-sharding-${seed}.jsonl`);
    const { leaseMs, ...rest } = options;
    const r = await runChaos({
      topo,
      ...rest,
      seed,
      log,
      ...(logFile ? { logFile } : {}),
      ...(leaseMs !== undefined ? { leaseMs } : {}),
    });
    if (logFile) console.log(`  logs: ${logFile}`);
    results.push(r);
    const f = r.verdict.figures;
    const failed = r.verdict.violations.length > 0 || r.error !== undefined;
    console.log(
      `run ${i + 1}/${options.runs} seed ${seed}: ${failed ? 'FAILED' : 'ok'} in ${(r.runMs / 1000).toFixed(0)} s; ` +
        `${f.sent} sent, ${f.received} received, ${f.lostInFaults} lost in unplanned faults, ` +
        `${f.lostOnLeaseLoss.length} lost to an owner-lease loss outside them, ` +
        `${f.activations} activations, ${f.frozenOverlaps} overlaps with a frozen side, ` +
        `probe ${f.probeAnswered}/${f.probed}${r.error ? `; ${r.error}` : ''}`,
    );
    for (const p of r.played) console.log(`  ${p}`);
    for (const l of r.verdict.figures.lostOnLeaseLoss.slice(0, 5))
      console.log(`  lost on a lease loss: ${l}`);
    if (r.verdict.violations.length > 0) console.log(describeViolations(r.verdict.violations));
  }
} finally {
  await topo.teardown();
}
const failing = results.filter((r) => r.verdict.violations.length > 0 || r.error !== undefined);
console.log(
  `\n${results.length} runs, ${failing.length} failed` +
    (failing.length > 0 ? `; failing seeds: ${failing.map((r) => r.seed).join(', ')}` : ''),
);
console.log(
  JSON.stringify({
    runs: results.length,
    failed: failing.map((r) => ({
      seed: r.seed,
      rules: [...new Set(r.verdict.violations.map((v) => v.rule))],
      error: r.error,
    })),
    unsafeSkipFence: options.unsafeSkipFence,
  }),
);
process.exit(failing.length > 0 ? 1 : 0);
