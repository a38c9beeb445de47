// `pnpm bench sharding [--runs 1] [--entities 10000] [--rate 500] [--memory-entities 300000] [--cold 2000]
// [--cold-rate 5000] [--cold-warmup N] [--tells 100000] [--tell-rounds 15] [--measured 2000] [--probed 300] [--nodes 5] [--orders 2]
// [--remembered 10000] [--remember-rate N] [--no-scale] [--smallest] [--only-rolling] [--hot-path] [--from-source]`:
// the figures of issue 29, each beside its target, medians over --runs. Real `doyen node` processes on
// 127.0.0.1 (the built CLI, packages/doyen/dist: run `pnpm build` first; --from-source: its TypeScript
// sources under tsx; `--app bench/lib/sharding-app.ts`, which registers a sharded
// `fromTransition` counter with `handOverSnapshot`); five hosting nodes (`--roles shard`, partitions owned
// by that role) and a load generator: a sixth, proxy-only node (no role) that sends to the entities from
// outside the hosting nodes and measures every latency (bench/lib/sharding-load.ts). Per run:
//   1. local cold activation (first message to a fresh id, ask round trip) at --cold-rate/s, and the RSS of
//      --memory-entities active counters: a one-node cluster in a child process.
//   2. cold activation from another node: the load node asks fresh ids at --cold-rate/s, after --cold-warmup
//      asks to other fresh ids at that rate (default 2 s of them: a fresh cluster's first asks run code V8
//      has not optimised yet: after 500, the first second of a 4 s series still cost an owner about 2.7
//      times the CPU of each later one, compiler and GC threads included; the local child warms up on 500;
//      the warm-up's type, `cold-warmup`, is passivated before the measured asks, `warmupLeftActive`),
//      of a type of their own whose activations are logged at debug as an app's are (`cold-counter`).
//      Beside it, same rate: the same ids again (active: the round trip without an activation) and plain
//      actors on the hosting nodes (no sharding). Each cold ask is split where it crosses the processes
//      (pacing delay, out to the entity, reply back; the entity stamps its reply) and set beside every
//      process's GC pauses (`bench.gc` lines) and, with SHARDING_BENCH_STALLS=1, event-loop stalls and the
//      CPU used during each (none: the process waited for a core): `cold.remoteSplit`.
//      Beside those, the optimum in the same run at the same rate and pacing (`rawAskBaseline`): raw
//      `ws` + msgpackr child processes (bench/lib/raw-relay-*.ts), a generator asking an echo process
//      (doyen's topology: the load node asks the owner), one asking through a relay process, and one
//      asking one echo per hosting node, each ask to the echo its id hashes to (doyen's fan-out: each
//      owner wakes for a fifth of the asks, `rawSpread`), one round before doyen's asks and one after;
//      doyen's p50/p99 as multiples of the direct one's and the spread one's.
//      Per phase (idle, cold, active, plain, raw), each process group's CPU, main-thread CPU, kernel
//      CPU and run-queue wait per ask from /proc schedstat (`cpuPerAsk`), and the GC pauses meanwhile:
//      what the machine's load does not distort.
//   3. sharded tell to 1000 entities across the 5 nodes vs plain remote tell to one actor per node (the
//      wire's best case, `shardedVsRemoteTell`) and to 1000 plain actors over the same nodes (the same
//      fan-out: what sharding adds, `shardedVsRemoteTellSameFanout`), same run, alternating rounds of
//      --tells messages (each round ends with an ask to every node).
//   4. rolling restart under steady load (--rate asks/s round robin over --entities activated entities):
//      SIGTERM and restart of each node, youngest first (oldest last), then oldest first, each waited until
//      271 partitions are active and balanced ±1 again. Added latency = latency − the median of the 5 s
//      before (failed asks count as their 5 s timeout). Then every entity's count against what was sent
//      (lost, duplicated, out of per-sender order) and overlapping activations per entity id (the testkit's
//      instance-overlaps checker on the nodes' sharding.activated / sharding.passivated lines and the
//      processes' deaths).
//   5. kill -9 of the oldest node; added latency on --measured entities none of whose partitions it owns,
//      over the --kill-window-ms (12 s) after the kill. It is restarted and the table rebalanced.
//   6. remembered entities (with an etcd: Debian's etcd-server, started on free ports, or ETCD_ENDPOINTS):
//      --remembered ids of a type with `remember: true`, all in the youngest owner's partitions, asked once
//      each; kill -9 of that owner; nothing sent to them after, so each start on a survivor is a restart
//      from the store: all restarted, none twice or overlapping, each survivor's busiest second against
//      --remember-rate (the nodes' restartsPerSecond; default sharding's, 100/s). It is restarted after.
//   7. kill -9 of the youngest owner; --probed of its entities asked every 50 ms (250 ms timeout) from the
//      kill on: the time until each answers again.
//   8. scale 3 → 6 (a fresh cluster): 3 nodes started at once; time from all 6 up to 271 active partitions
//      balanced ±1; partitions activated more than once from the start of the scale-out.
// --only-rolling: only the rolling restart (4.), on a cluster started for it; the other figures show `-`.
// --smallest: 2 nodes, one restart order, a few hundred entities, a small memory figure, no scale-out: the
// test's configuration (its figures are not the issue's).
// --hot-path: only the entity hot path's figures (steps 1 to 3: cold activation local and from another node,
// sharded vs plain remote tell), a small memory population, no fault scenario, and the CPU per message of a
// sharded and a plain remote tell in this process (interleaved rounds, `tellCpu`); ~1 minute.
// Evidence: SHARDING_BENCH_LOG_DIR=dir keeps each process's log lines (`<proc>.log`; per-entity lines
// too, in `<proc>.entities.log`, with SHARDING_BENCH_LOG_ENTITIES=1: what an overlap is read from),
// SHARDING_BENCH_CPU_PROF=dir a CPU profile of every hosting process (and of the load generator's, the
// senders' side, with SHARDING_BENCH_CPU_PROF_LOAD=1; the processes are then stopped gracefully at the end, as
// a profile is written on exit, and each ask phase's window is printed on the profiles' clock, to slice them by),
// SHARDING_BENCH_NODE_FLAGS="--trace-gc --trace-gc-nvp" node options for every node process (their lines
// that are not JSON come out on stderr, `[proc] …`);
// `bench/sharding-join-path.ts dir`
// prints each join's path from the logs; DOYEN_BENCH_CLI=bin.js runs another build (an A/B).
import { bundleStaleness } from './lib/built-cli.js';
import { installSignalCleanup, liveProcesses } from './lib/node-processes.js';
import { ACTIVATION_LOG_ENV } from './lib/sharding-protocol.js';
import { runSharding, type ShardingRunFigures } from './lib/sharding-run.js';
import { measureTellCpu, type TellCpu } from './lib/sharding-tell-cpu.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const argv = process.argv.slice(2);
const smallest = argv.includes('--smallest');
const onlyRolling = argv.includes('--only-rolling');
const hotPath = argv.includes('--hot-path');
const noScale = argv.includes('--no-scale') || smallest || onlyRolling || hotPath;
const fromSource = argv.includes('--from-source');
const switches = new Set(['--smallest', '--no-scale', '--only-rolling', '--hot-path', '--from-source']);
/** The figures --hot-path measures (the others are not taken). */
const HOT_PATH_FIGURES = new Set([
  'coldLocalP99Ms',
  'coldRemoteP99Ms',
  'shardedVsRemoteTell',
  'shardedVsRemoteTellSameFanout',
]);
const numeric = parseFlags(argv.filter((a) => !switches.has(a)));
const opt = (name: string, normal: number, small: number) => numeric[name] ?? (smallest ? small : normal);
const runs = opt('runs', 1, 1);
const options = {
  nodes: opt('nodes', 5, 2),
  orders: opt('orders', 2, 1),
  entities: opt('entities', 10_000, 400),
  rate: opt('rate', 500, 200),
  measured: opt('measured', 2000, 100),
  probed: opt('probed', 300, 30),
  cold: opt('cold', 2000, 200),
  coldRate: opt('cold-rate', 5000, 5000),
  coldWarmup: opt('cold-warmup', 2 * opt('cold-rate', 5000, 5000), 500),
  memoryEntities: numeric['memory-entities'] ?? (smallest || hotPath ? 2000 : 300_000),
  // 15 interleaved rounds of 100k (~6 s in all): with 3 of 50k, eight runs of one build on the shared
  // machine gave ratios from 0.49 to 0.88 (session 40), with 15 of 100k 0.65 to 0.80 (session 41)
  tells: opt('tells', 100_000, 2000),
  tellRounds: opt('tell-rounds', 15, 1),
  settleMs: opt('settle-ms', 20_000, 5000),
  baselineMs: opt('baseline-ms', 5000, 1000),
  killWindowMs: opt('kill-window-ms', 12_000, 2000),
  remembered: opt('remembered', 10_000, 200),
  rememberRate: numeric['remember-rate'],
  skipScale: noScale,
  hotPathOnly: hotPath,
  onlyRolling,
  fromSource,
  log: (line: string) => process.stderr.write(`${line}\n`),
};

// the nodes run the built bundle, as users run `doyen node`: one older than the sources would test old code
const stale = fromSource ? undefined : bundleStaleness();
if (stale) {
  console.error(`bench sharding: ${stale} (or pass --from-source)`);
  process.exit(2);
}

// the hot path as an app runs it: entity activations logged at debug (no overlap check needs them)
if (hotPath) process.env[ACTIVATION_LOG_ENV] = 'debug';
// --hot-path: every process logs its GC pauses, to set beside the slowest cold asks
if (hotPath) process.env.SHARDING_BENCH_GC = '1';
// a default run takes ~4 minutes on 2 cores; every wait inside has its own bound
startWatchdog('sharding', 15 * runs);
installSignalCleanup();
const startedAt = performance.now();

const results: ShardingRunFigures[] = [];
for (let r = 0; r < runs; r++) {
  options.log(`run ${r + 1}/${runs}`);
  results.push(await runSharding(options));
}

// --hot-path: CPU per message in this process, sharded against plain, interleaved (load distorts it least)
let tellCpu: TellCpu | undefined;
if (hotPath) {
  tellCpu = await measureTellCpu(50_000, 6);
  options.log(
    `tell CPU per message (in-process, both nodes): sharded ${tellCpu.shardedUs} µs, plain to 1000 actors ${tellCpu.plainUs} µs, plain to one actor ${tellCpu.plainOneUs} µs`,
  );
}

const med = (pick: (f: ShardingRunFigures) => number | undefined) => {
  const xs = results.map(pick).filter((x): x is number => x !== undefined && !Number.isNaN(x));
  return xs.length ? median(xs) : Number.NaN;
};

interface Figure {
  readonly value: number;
  readonly target: number;
  /** `max`: the value must be at most the target; `min`: at least. */
  readonly kind: 'max' | 'min';
  readonly unit: string;
  readonly label: string;
}

const allFigures: Record<string, Figure> = {
  rollingAddedP99Ms: {
    value: med((f) => f.rolling?.addedP99Ms),
    target: 250,
    kind: 'max',
    unit: 'ms',
    label: `rolling restart of ${options.nodes} nodes: added latency p99`,
  },
  rollingAddedMaxMs: {
    value: med((f) => f.rolling?.addedMaxMs),
    target: 1000,
    kind: 'max',
    unit: 'ms',
    label: 'rolling restart: added latency max',
  },
  rollingLost: {
    value: med((f) => f.rolling?.lost),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'rolling restart: messages lost',
  },
  rollingDuplicated: {
    value: med((f) => f.rolling?.duplicated),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'rolling restart: messages duplicated',
  },
  rollingOutOfOrder: {
    value: med((f) => f.rolling?.outOfOrder),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'rolling restart: out of per-sender order',
  },
  rollingUnanswered: {
    value: med((f) => f.rolling?.unanswered),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'rolling restart: entities not answering the final check',
  },
  rollingOverlaps: {
    value: med((f) => f.rolling?.overlaps),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'overlapping activations (all phases up to then)',
  },
  // overlaps are read from log lines: a stop line lost on the way reads as an entity still active
  rollingLogLinesLost: {
    value: med((f) => f.rolling?.linesLost),
    target: 0,
    kind: 'max',
    unit: '',
    label: 'log lines lost between the nodes and the bench (all phases up to then)',
  },
  killNonOwnerAddedP99Ms: {
    value: med((f) => f.killNonOwner?.addedP99Ms),
    target: 20,
    kind: 'max',
    unit: 'ms',
    label: 'kill -9 of the oldest, on entities it does not host: added p99',
  },
  killOwnerRecoveryP99Ms: {
    value: med((f) => f.killOwner?.recoveryP99Ms),
    target: 3000,
    kind: 'max',
    unit: 'ms',
    label: 'kill -9 of an owner: its entities answer again, p99',
  },
  ...(noScale
    ? {}
    : {
        scaleBalancedMs: {
          value: med((f) => f.scale?.balancedAfterUpMs),
          target: 2000,
          kind: 'max',
          unit: 'ms',
          label: 'scale 3 → 6: balanced ±1 after the last join is up',
        } as Figure,
        scaleMovedTwice: {
          value: med((f) => f.scale?.movedMoreThanOnce),
          target: 0,
          kind: 'max',
          unit: '',
          label: 'scale 3 → 6: partitions moved more than once',
        } as Figure,
      }),
  // with an etcd for the store (Debian's etcd-server): the remembered ids of a killed owner
  ...(results.some((f) => f.remembered)
    ? {
        rememberedNotRestarted: {
          value: med((f) => f.remembered && f.remembered.ids - f.remembered.restarted),
          target: 0,
          kind: 'max',
          unit: '',
          label: `remembered entities after a kill -9 of their owner (${options.remembered} ids): not restarted`,
        } as Figure,
        rememberedStartedTwice: {
          value: med((f) => f.remembered && f.remembered.startedTwice + f.remembered.overlaps),
          target: 0,
          kind: 'max',
          unit: '',
          label: 'remembered entities: started twice or overlapping',
        } as Figure,
        // the pacer's slack: a start due at the edge of a window can land in it (2 %)
        rememberedBusiestSecondVsRate: {
          value: med((f) => f.remembered && f.remembered.busiestSecond / f.remembered.rate),
          target: 1.02,
          kind: 'max',
          unit: '×',
          label: "remembered entities: one survivor's busiest second vs the configured rate",
        } as Figure,
      }
    : {}),
  coldLocalP99Ms: {
    value: med((f) => f.cold?.localP99Ms),
    target: 1,
    kind: 'max',
    unit: 'ms',
    label: `cold activation, local, at ${options.coldRate}/s: p99`,
  },
  coldRemoteP99Ms: {
    value: med((f) => f.cold?.remoteP99Ms),
    target: 3,
    kind: 'max',
    unit: 'ms',
    label: `cold activation from another node, at ${options.coldRate}/s: p99`,
  },
  entitiesPerGB: {
    value: med((f) => f.memory?.entitiesPerGB),
    target: 300_000,
    kind: 'min',
    unit: '',
    label: 'active fromTransition entities in 1 GB RSS (one node)',
  },
  shardedVsRemoteTell: {
    value: med((f) => f.tell?.ratio),
    target: 0.7,
    kind: 'min',
    unit: '×',
    label: `sharded tell (1,000 entities on ${options.nodes} nodes) vs plain tell to 1 actor/node`,
  },
  // the same fan-out on both sides: what sharding adds to a remote tell, isolated
  shardedVsRemoteTellSameFanout: {
    value: med((f) => f.tell?.ratioFanout),
    target: 0.7,
    kind: 'min',
    unit: '×',
    label: `sharded tell vs plain tell to 1,000 actors on ${options.nodes} nodes`,
  },
};

const figures = hotPath
  ? Object.fromEntries(Object.entries(allFigures).filter(([k]) => HOT_PATH_FIGURES.has(k)))
  : onlyRolling
    ? Object.fromEntries(Object.entries(allFigures).filter(([k]) => k.startsWith('rolling')))
    : allFigures;
const met = (f: Figure) => (f.kind === 'max' ? f.value <= f.target : f.value >= f.target);
const show = (x: number, unit: string) =>
  Number.isNaN(x)
    ? '-'
    : `${formatFigure(x, Math.abs(x) < 10 && x !== Math.round(x) ? 2 : 0)}${unit ? ` ${unit}` : ''}`;
console.log(
  formatTable([
    ['figure', `median of ${runs}`, 'target', 'met'],
    ...Object.values(figures).map((f) => [
      f.label,
      show(f.value, f.unit),
      `${f.kind === 'max' ? '≤' : '≥'} ${show(f.target, f.unit)}`,
      met(f) ? 'yes' : 'NO',
    ]),
  ]),
);
const missed = Object.entries(figures)
  .filter(([, f]) => !met(f))
  .map(([k]) => k);
const json: Record<string, unknown> = {};
for (const [key, f] of Object.entries(figures)) {
  json[key] = Number.isNaN(f.value) ? null : Math.round(f.value * 1000) / 1000;
  json[`${key}Target`] = f.target;
  // beside its target as a ratio (value / target; for "at least" figures above 1 is met)
  json[`${key}VsTarget`] =
    f.target === 0 || Number.isNaN(f.value) ? null : Math.round((f.value / f.target) * 1000) / 1000;
}
const tookS = Math.round((performance.now() - startedAt) / 100) / 10;
console.log(`\ntook ${tookS} s; targets missed: ${missed.join(', ') || 'none'}`);
printResult({
  bench: 'sharding',
  runs,
  options: { ...options, log: undefined },
  ...json,
  targetsMissed: missed,
  ...(tellCpu ? { tellCpu } : {}),
  // beside the cold p99 from another node, same rate, no target: the cluster's first asks (the
  // warm-up), the same ids once active, and plain actors (no sharding): what the tail is made of
  coldRemoteBeside: {
    warmupP99Ms: med((f) => f.cold?.warmupP99Ms),
    warmupLeftActive: med((f) => f.cold?.warmupLeftActive),
    activeP50Ms: med((f) => f.cold?.activeP50Ms),
    activeP99Ms: med((f) => f.cold?.activeP99Ms),
    plainAskP99Ms: med((f) => f.cold?.plainAskP99Ms),
  },
  // the optimum, same run, rate and pacing: raw ws + msgpackr processes (generator → echo, doyen's
  // topology; and through a relay), and doyen's remote asks as multiples of it (medians over runs
  // of each run's own ratio)
  ...(hotPath ? { rawAskBaseline: rawAskBaseline() } : {}),
  errors: results.flatMap((r) => r.errors),
  perRun: results,
  tookS,
  nodeProcessesLeft: liveProcesses(),
});

/** The raw ask baseline's figures and doyen's remote asks against them, each a median over runs. */
function rawAskBaseline(): Record<string, number> {
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const ratio = (
    pick: (f: ShardingRunFigures) => number | undefined,
    base: (f: ShardingRunFigures) => number | undefined,
  ) =>
    r3(
      med((f) => {
        const [a, b] = [pick(f), base(f)];
        return a === undefined || b === undefined ? undefined : a / b;
      }),
    );
  const direct50 = (f: ShardingRunFigures) => f.cold?.raw.directP50Ms;
  const direct99 = (f: ShardingRunFigures) => f.cold?.raw.directP99Ms;
  return {
    rawDirectP50Ms: r3(med(direct50)),
    rawDirectP99Ms: r3(med(direct99)),
    rawRelayedP50Ms: r3(med((f) => f.cold?.raw.relayedP50Ms)),
    rawRelayedP99Ms: r3(med((f) => f.cold?.raw.relayedP99Ms)),
    rawSpreadP50Ms: r3(med((f) => f.cold?.raw.spreadP50Ms)),
    rawSpreadP99Ms: r3(med((f) => f.cold?.raw.spreadP99Ms)),
    rawFailed: med((f) => f.cold?.raw.failed),
    coldRemoteP50VsRaw: ratio((f) => f.cold?.remoteP50Ms, direct50),
    coldRemoteP99VsRaw: ratio((f) => f.cold?.remoteP99Ms, direct99),
    activeP50VsRaw: ratio((f) => f.cold?.activeP50Ms, direct50),
    activeP99VsRaw: ratio((f) => f.cold?.activeP99Ms, direct99),
    plainAskP50VsRaw: ratio((f) => f.cold?.plainAskP50Ms, direct50),
    plainAskP99VsRaw: ratio((f) => f.cold?.plainAskP99Ms, direct99),
    coldRemoteP99VsRawSpread: ratio(
      (f) => f.cold?.remoteP99Ms,
      (f) => f.cold?.raw.spreadP99Ms,
    ),
    activeP99VsRawSpread: ratio(
      (f) => f.cold?.activeP99Ms,
      (f) => f.cold?.raw.spreadP99Ms,
    ),
    coldRemoteP99VsRawRelayed: ratio(
      (f) => f.cold?.remoteP99Ms,
      (f) => f.cold?.raw.relayedP99Ms,
    ),
  };
}

function parseFlags(args: readonly string[]): Record<string, number> {
  const known = new Set([
    'baseline-ms',
    'kill-window-ms',
    'settle-ms',
    'nodes',
    'orders',
    'runs',
    'entities',
    'rate',
    'measured',
    'probed',
    'cold',
    'cold-rate',
    'cold-warmup',
    'memory-entities',
    'tells',
    'tell-rounds',
    'remembered',
    'remember-rate',
  ]);
  const flags: Record<string, number> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!.replace(/^--/, '');
    const value = Number(args[i + 1]);
    // --remembered 0 leaves the remembered scenario out
    const least = name === 'remembered' ? 0 : 1;
    if (!known.has(name) || !Number.isInteger(value) || value < least)
      throw new Error(
        `usage: pnpm bench sharding [--${[...known].join(' N] [--')} N] [--no-scale] [--smallest] [--only-rolling] [--hot-path] [--from-source] (got ${args[i]} ${args[i + 1]})`,
      );
    flags[name] = value;
  }
  return flags;
}
