// `pnpm bench singleton [--kills5 5] [--kills10 3] [--leaves 2] [--handovers 7] [--moves 3]`: cluster
// singleton figures, with the singleton every node runs by default (the partition allocator, 271 partitions).
// Prints a table, then one JSON line. Defaults everywhere (keep-majority downing, default failure detector).
//   1. failover: N = 5 and N = 10 node processes; kill -9 the oldest; time from the kill to `singleton.started`
//      (partition-allocator) logged by the next oldest (wall clock, across processes); the killed node is then
//      restarted (a new incarnation, the youngest) and the next kill hits the new oldest. Then, as a cross-check
//      of 2 in real processes, `--leaves` graceful leaves of the oldest (shutdown() asked over IPC).
//   2. hand-over on a graceful leave: N = 5 and N = 10 nodes in this process; shutdown() of the oldest; time
//      to `singleton.started` on the next oldest (a replacement node keeps N); whether the leaving oldest
//      handed over (`singleton.handed-over`) or stopped first and left the successor to wait the margin
//   3. partitions moved: on the N = 5 cluster of 2, one node joins (5 → 6), then a non-oldest one leaves
//      (6 → 5), `--moves` times; moved = owners that differ between the settled tables before and after, as
//      the nodes hold them (and the sum of the allocator's `partitions.allocated` `moved`), beside
//      optimalMoves(before, members after) from @doyen/partitions. Every other change the bench makes (the
//      failovers, the leaves of the oldest, the replacement joins) is checked against the optimum too.
// Ports are picked at run time on 127.0.0.1; every wait is bounded; no node process outlives the bench.

import { defaultStableAfterMs } from '../packages/cluster/src/index.js';
import { LocalCluster, localRestarts, type MovementSample } from './lib/singleton-inprocess.js';
import {
  type FailoverSample,
  type HandOverSample,
  installSignalCleanup,
  liveProcesses,
  ProcessCluster,
  processWarningCounts,
} from './lib/singleton-processes.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';

const args = parseFlags(process.argv.slice(2));
const KILLS: Record<number, number> = { 5: args.kills5 ?? 5, 10: args.kills10 ?? 3 };
const PROCESS_LEAVES = args.leaves ?? 2;
const HAND_OVERS = args.handovers ?? 7;
const MOVES = args.moves ?? 3;
const SIZES = [5, 10] as const;
const PARTITIONS = 271;
const TARGET_FAILOVER_MS = 5_000;
const TARGET_HAND_OVER_MS = 500;
// Akka's documentation: failover takes ~25 s for 10 nodes with recommended SBR settings, ~45 s by default.
const AKKA_FAILOVER_10_MS = 25_000;
const AKKA_FAILOVER_DEFAULT_MS = 45_000;

// A stuck bench fails rather than hangs; every wait inside has its own, shorter bound.
const watchdog = setTimeout(() => {
  process.stderr.write('singleton bench: watchdog expired after 7 minutes\n');
  process.exit(1);
}, 7 * 60_000);
watchdog.unref();
installSignalCleanup();

const startedAt = performance.now();
const errors: string[] = [];
const progress = (line: string) => process.stderr.write(`${line}\n`);
const failovers = new Map<number, FailoverSample[]>(SIZES.map((n) => [n, []]));
const processLeaves = new Map<number, HandOverSample[]>(SIZES.map((n) => [n, []]));
const handOvers = new Map<number, HandOverSample[]>(SIZES.map((n) => [n, []]));
const moves: MovementSample[] = [];
/** Changes made along the way (failovers, leaves of the oldest, replacement joins): moved vs optimum. */
const otherMoves: MovementSample[] = [];
/** Nodes downed while alive (and restarted as new incarnations), per phase. */
const restarts: Record<string, number> = {};
const processRestarts = () => processWarningCounts().get('node.restart') ?? 0;

// ---- 1. node processes: kill -9 of the oldest, then graceful leaves ---------------------------------------------
for (const n of SIZES) {
  if (KILLS[n]! + PROCESS_LEAVES === 0) continue;
  progress(`1. failover: starting ${n} node processes …`);
  let cluster: ProcessCluster | undefined;
  const restartsBefore = processRestarts();
  try {
    const t = performance.now();
    cluster = await ProcessCluster.start(n);
    progress(`   ${n} nodes up, one table, allocator on the oldest after ${ms(performance.now() - t)}`);
    for (let i = 0; i < KILLS[n]!; i++) {
      const s = await cluster.killOldest(i < KILLS[n]! - 1 || PROCESS_LEAVES > 0);
      failovers.get(n)!.push(s);
      otherMoves.push({
        change: 'failover',
        from: n,
        to: n - 1,
        moved: s.moved ?? Number.NaN,
        logged: s.moved ?? Number.NaN,
        allocations: 1,
        optimum: s.optimum,
      });
      progress(
        `   N = ${n} kill ${i + 1}/${KILLS[n]} (${s.victim}): allocator started on ${s.successor} after ` +
          `${ms(s.failoverMs)} (downed ${ms(s.downedMs)}, taking over ${ms(s.takingOverMs)}); ` +
          `moved ${s.moved} (optimum ${s.optimum})` +
          (s.elsewhere > 0 ? `; ALSO STARTED ON ${s.elsewhere} OTHER NODE(S)` : '') +
          (s.otherDowned + s.restarts > 0
            ? `; DISTURBED: ${s.otherDowned} live member(s) downed meanwhile, ${s.restarts} restart(s)`
            : ''),
      );
    }
    for (let i = 0; i < PROCESS_LEAVES; i++) {
      const s = await cluster.leaveOldest();
      processLeaves.get(n)!.push(s);
      progress(`   N = ${n} graceful leave ${i + 1}/${PROCESS_LEAVES}: ${describeHandOver(s)}`);
    }
  } catch (error) {
    errors.push(`N = ${n} node processes: ${(error as Error).message}`);
    progress(`   failed: ${(error as Error).stack}`);
  } finally {
    await cluster?.close();
    restarts[`processesN${n}`] = processRestarts() - restartsBefore;
  }
}

// ---- 2 and 3. in-process nodes: hand-over on a graceful leave, partitions moved ----------------------------------
for (const n of SIZES) {
  const runs = HAND_OVERS;
  const moveRuns = n === 5 ? MOVES : 0;
  if (runs + moveRuns === 0) continue;
  progress(`2. hand-over: starting ${n} nodes in this process …`);
  let cluster: LocalCluster | undefined;
  const restartsBefore = localRestarts();
  try {
    cluster = await LocalCluster.start(n);
    for (let i = 0; i < runs; i++) {
      const { sample, moves: changes } = await cluster.handOver();
      handOvers.get(n)!.push(sample);
      otherMoves.push(...changes);
      progress(
        `   N = ${n} leave of the oldest ${i + 1}/${runs}: ${describeHandOver(sample)}; ` +
          changes.map((c) => `${c.change} moved ${c.moved} (optimum ${c.optimum})`).join(', '),
      );
    }
    for (let i = 0; i < moveRuns; i++) {
      const join = await cluster.join();
      // the leaver: a different non-oldest member each run (second oldest, a middle one, the newest)
      const byAge = cluster.byAge();
      const leaver = byAge[1 + ((2 * i) % (byAge.length - 1))]!;
      const leave = await cluster.leave(leaver);
      moves.push(join, leave);
      progress(
        `3. partitions run ${i + 1}/${moveRuns}: join ${join.from} → ${join.to} moved ${join.moved} ` +
          `(allocated ${join.logged} in ${join.allocations}, optimum ${join.optimum}); leave ${leave.from} → ` +
          `${leave.to} moved ${leave.moved} (allocated ${leave.logged} in ${leave.allocations}, optimum ${leave.optimum})`,
      );
    }
  } catch (error) {
    errors.push(`N = ${n} in-process: ${(error as Error).message}`);
    progress(`   failed: ${(error as Error).stack}`);
  } finally {
    await cluster?.close().catch((error: Error) => errors.push(`closing in-process nodes: ${error.message}`));
    restarts[`inProcessN${n}`] = localRestarts() - restartsBefore;
  }
}

// ---- report -------------------------------------------------------------------------------------------------
const result: Record<string, unknown> = {
  bench: 'singleton',
  singleton: 'partition-allocator (registered by startNode on every node, 271 partitions)',
  method:
    'failover: node processes (startNode), kill -9 of the oldest, wall-clock kill → singleton.started log line of the next oldest; hand-over: startNode nodes in one process, shutdown() of the oldest → singleton.started; partitions: settled tables of the real cluster before/after vs optimalMoves',
  defaults: 'keep-majority downing, default failure detector and down-removal margin',
  targetFailoverMs: TARGET_FAILOVER_MS,
  targetHandOverMs: TARGET_HAND_OVER_MS,
  akkaFailover10NodesMs: AKKA_FAILOVER_10_MS,
  akkaFailoverDefaultMs: AKKA_FAILOVER_DEFAULT_MS,
};
const missed: string[] = [];
const table: string[][] = [['figure', 'unit', 'p50', 'max', 'target', 'met', 'samples']];
type Figure = { median: number; max: number; samples: number[] };
/** NaN samples (a line that never came) are left out of p50 and max, but still shown as '-'. */
const figure = (all: readonly number[]): Figure => {
  const xs = all.filter(Number.isFinite);
  return {
    median: xs.length > 0 ? median(xs) : Number.NaN,
    max: xs.length > 0 ? Math.max(...xs) : Number.NaN,
    samples: [...all],
  };
};
const metCell = (f: Figure, target: number) =>
  !(f.median <= target) ? 'NO' : f.max <= target ? 'yes' : 'p50 only';
const row = (label: string, unit: string, xs: readonly number[], target?: number): Figure => {
  const f = figure(xs);
  table.push([
    `  ${label}`,
    unit,
    fig(f.median),
    fig(f.max),
    target === undefined ? '' : `<= ${formatFigure(target)}`,
    target === undefined ? '' : metCell(f, target),
    f.samples.map(fig).join(' '),
  ]);
  return f;
};
const json = (f: Figure) => ({
  p50Ms: round(f.median),
  maxMs: round(f.max),
  samplesMs: f.samples.map(round),
});

table.push(['1. kill -9 of the oldest node process → allocator started on the next oldest']);
const failoverJson: Record<string, unknown> = {};
for (const n of SIZES) {
  const ss = failovers.get(n)!;
  if (KILLS[n] === 0) continue;
  const f = row(
    `N = ${n}: kill → singleton.started (${ss.length} kills)`,
    'ms',
    ss.map((s) => s.failoverMs),
    TARGET_FAILOVER_MS,
  );
  const unreachable = row(
    `N = ${n}:   kill → first member.unreachable, any survivor`,
    'ms',
    ss.map((s) => s.unreachableMs),
  );
  const downed = row(
    `N = ${n}:   kill → member.downed in the next oldest`,
    'ms',
    ss.map((s) => s.downedMs),
  );
  const margin = row(
    `N = ${n}:   singleton.taking-over → started (down-removal margin)`,
    'ms',
    ss.map((s) => s.failoverMs - s.takingOverMs),
  );
  const disturbed = ss.filter((s) => s.otherDowned + s.restarts > 0);
  if (disturbed.length > 0)
    table.push([
      `  N = ${n}:   kills during which a live member was downed too (included above)`,
      'count',
      `${disturbed.length}/${ss.length}`,
      '',
      '',
      '',
      disturbed.map((s) => fig(s.failoverMs)).join(' '),
    ]);
  const met = ss.length === KILLS[n] && f.median <= TARGET_FAILOVER_MS;
  if (!met) missed.push(`failover${n}`);
  failoverJson[`n${n}`] = {
    ...json(f),
    kills: ss.length,
    unreachableP50Ms: round(unreachable.median),
    downedP50Ms: round(downed.median),
    marginP50Ms: round(margin.median),
    clusterStableAfterMs: defaultStableAfterMs(n),
    killsWithoutMemberUnreachable: ss.filter((s) => Number.isNaN(s.unreachableMs)).length,
    startedElsewhere: ss.reduce((a, s) => a + s.elsewhere, 0),
    disturbedKills: disturbed.length,
    targetMet: met,
  };
}
table.push([
  '  Akka, 10 nodes, recommended SBR settings (documented, not measured)',
  'ms',
  fig(AKKA_FAILOVER_10_MS),
]);
table.push(['  Akka, default settings (documented, not measured)', 'ms', fig(AKKA_FAILOVER_DEFAULT_MS)]);
result.failover = failoverJson;

table.push(['2. graceful leave of the oldest: shutdown() → allocator started on the next oldest']);
const handOverJson: Record<string, unknown> = {};
for (const n of SIZES) {
  const ss = handOvers.get(n)!;
  if (HAND_OVERS === 0) continue;
  const f = row(
    `N = ${n}, in one process: shutdown() → singleton.started (${ss.length} runs)`,
    'ms',
    ss.map((s) => s.handOverMs),
    TARGET_HAND_OVER_MS,
  );
  const requested = row(
    `N = ${n}:   shutdown() → hand-over-requested by the next oldest`,
    'ms',
    ss.map((s) => s.requestedMs),
  );
  const interrupted = ss.filter((s) => s.stopReason !== 'handed over' || s.tookOver);
  table.push([
    `  N = ${n}:   runs where the oldest stopped without handing over`,
    'count',
    `${interrupted.length}/${ss.length}`,
    '',
    '== 0',
    interrupted.length === 0 ? 'yes' : 'NO',
    interrupted.map((s) => `${s.stopReason}${s.tookOver ? ' + margin' : ''}`).join('; '),
  ]);
  const met = ss.length === HAND_OVERS && f.median <= TARGET_HAND_OVER_MS;
  if (!met) missed.push(`handOver${n}`);
  if (interrupted.length > 0) missed.push(`handOver${n}Interrupted`);
  handOverJson[`n${n}`] = {
    ...json(f),
    runs: ss.length,
    requestedP50Ms: round(requested.median),
    withoutHandOver: interrupted.length,
    overlapping: ss.filter((s) => s.overlapMs > 0).length,
    startedElsewhere: ss.reduce((a, s) => a + s.elsewhere, 0),
    targetMet: met,
  };
}
for (const n of SIZES) {
  const ss = processLeaves.get(n)!;
  if (PROCESS_LEAVES === 0) continue;
  const f = row(
    `N = ${n}, node processes (cross-check): leave → singleton.started`,
    'ms',
    ss.map((s) => s.handOverMs),
  );
  const interrupted = ss.filter((s) => s.stopReason !== 'handed over' || s.tookOver).length;
  handOverJson[`processesN${n}`] = { ...json(f), runs: ss.length, withoutHandOver: interrupted };
}
result.handOver = handOverJson;

table.push([
  `3. partitions moved (${PARTITIONS}), settled table diff; optimum = optimalMoves(before, members after)`,
  'unit',
  'moved',
  'optimum',
  'target',
  'met',
  'samples moved/optimum',
]);
const partitionsJson: Record<string, unknown> = {};
for (const change of ['join', 'leave'] as const) {
  const ss = moves.filter((m) => m.change === change);
  if (MOVES === 0) continue;
  const label = change === 'join' ? 'one join, 5 → 6' : 'one leave (not the oldest), 6 → 5';
  const equal = ss.filter((m) => m.moved === m.optimum && m.logged === m.moved).length;
  const med = figure(ss.map((m) => m.moved));
  const opt = figure(ss.map((m) => m.optimum));
  table.push([
    `  ${label} (${ss.length} runs)`,
    'partitions',
    fig(med.median),
    fig(opt.median),
    '== optimum',
    ss.length > 0 && equal === ss.length ? 'yes' : 'NO',
    ss.map((m) => `${m.moved}/${m.optimum}`).join(' '),
  ]);
  if (!(ss.length === MOVES && equal === ss.length))
    missed.push(`partitions${change === 'join' ? 'Join' : 'Leave'}`);
  partitionsJson[change] = {
    from: change === 'join' ? 5 : 6,
    to: change === 'join' ? 6 : 5,
    movedMedian: med.median,
    optimumMedian: opt.median,
    moved: ss.map((m) => m.moved),
    allocatedMoved: ss.map((m) => m.logged),
    allocations: ss.map((m) => m.allocations),
    optimum: ss.map((m) => m.optimum),
    equalToOptimum: equal,
    runs: ss.length,
  };
}
const otherEqual = otherMoves.filter((m) => m.moved === m.optimum).length;
const otherKinds = [...new Set(otherMoves.map((m) => `${m.change} ${m.from} → ${m.to}`))];
table.push([
  `  other changes: ${otherKinds.join(', ')}`,
  'count',
  `${otherEqual}/${otherMoves.length}`,
  '',
  'all equal',
  otherEqual === otherMoves.length ? 'yes' : 'NO',
  'runs equal to the optimum',
]);
if (otherEqual !== otherMoves.length) missed.push('partitionsOtherChanges');
partitionsJson.otherChanges = {
  kinds: otherKinds,
  runs: otherMoves.length,
  equalToOptimum: otherEqual,
  unequal: otherMoves
    .filter((m) => m.moved !== m.optimum)
    .map((m) => `${m.change} ${m.from}→${m.to}: ${m.moved} vs ${m.optimum}`),
};
result.partitions = partitionsJson;

console.log(formatTable(table));
const fo = (n: number) => failoverJson[`n${n}`] as { p50Ms: number; maxMs: number } | undefined;
const ho = (n: number) => handOverJson[`n${n}`] as { p50Ms: number; maxMs: number } | undefined;
const targets = [
  `failover <= ${TARGET_FAILOVER_MS / 1_000} s (Akka: ~${AKKA_FAILOVER_10_MS / 1_000} s for 10 nodes, ~${AKKA_FAILOVER_DEFAULT_MS / 1_000} s by default): ` +
    SIZES.map(
      (n) =>
        `N = ${n} ${missed.includes(`failover${n}`) ? 'NOT met' : 'met'} (p50 ${ms(fo(n)?.p50Ms)}, max ${ms(fo(n)?.maxMs)})`,
    ).join('; '),
  `hand-over <= ${TARGET_HAND_OVER_MS} ms: ` +
    SIZES.map(
      (n) =>
        `N = ${n} ${missed.includes(`handOver${n}`) ? 'NOT met' : 'met'} (p50 ${ms(ho(n)?.p50Ms)}, max ${ms(ho(n)?.maxMs)})`,
    ).join('; '),
  `partitions moved == optimum: join ${missed.includes('partitionsJoin') ? 'NOT met' : 'met'}, leave ${missed.includes('partitionsLeave') ? 'NOT met' : 'met'}, other changes ${otherEqual}/${otherMoves.length}`,
];
console.log(`\ntargets\n${targets.map((t) => `  ${t}`).join('\n')}`);
const notes: string[] = [];
for (const n of SIZES) {
  const f = failoverJson[`n${n}`] as
    | { marginP50Ms: number; unreachableP50Ms: number; downedP50Ms: number }
    | undefined;
  if (!f) continue;
  if (Math.abs(f.marginP50Ms - defaultStableAfterMs(n)) > 200)
    notes.push(
      `N = ${n}: the successor waited ${ms(f.marginP50Ms)} after member.downed, while the default down-removal ` +
        `margin is documented as stable-after, ${ms(defaultStableAfterMs(n))} at ${n} nodes: ClusterSingletons.register ` +
        `takes cluster.downRemovalMarginMs() once, when startNode registers the allocator, before the node has ` +
        `joined (cluster size 1 → ${ms(defaultStableAfterMs(1))}).`,
    );
  if (Math.abs(f.downedP50Ms - f.unreachableP50Ms) < 50)
    notes.push(
      `N = ${n}: member.unreachable for the killed oldest reaches the survivors only with its downing ` +
        `(p50 ${ms(f.unreachableP50Ms)} vs ${ms(f.downedP50Ms)}): the oldest is the coordinator, which alone ` +
        `records reachability in the membership.`,
    );
}
for (const n of SIZES) {
  const bad = [...handOvers.get(n)!, ...processLeaves.get(n)!].filter(
    (s) => s.stopReason !== 'handed over' || s.tookOver,
  );
  if (bad.length > 0)
    notes.push(
      `N = ${n}: ${bad.length} graceful leave(s) without a hand-over (${bad.map((s) => ms(s.handOverMs)).join(', ')}): ` +
        `the leaving oldest became exiting before it handed over, stopped its instance ('node left the cluster') ` +
        `without answering, and the successor started only after the former oldest was removed plus the margin.`,
    );
}
const restarted = Object.entries(restarts).filter(([, k]) => k > 0);
if (restarted.length > 0)
  notes.push(
    `live nodes downed and restarted as new incarnations (false suspicions): ` +
      `${restarted.map(([phase, k]) => `${phase} ×${k}`).join(', ')}; the figures of the runs they fell in include them.`,
  );
result.restartsOfLiveNodes = restarts;
if (notes.length > 0) console.log(`\nnotes\n${notes.map((x) => `  ${x}`).join('\n')}`);
result.notes = notes;
const warned = [...processWarningCounts()]
  .sort((a, b) => b[1] - a[1])
  .map(([e, k]) => `${e} ×${k}`)
  .join(', ');
console.log(
  `\nmethod: ${result.method}. ${result.defaults}.` +
    `\nwarn-level log lines of the node processes: ${warned || 'none'}`,
);
if (errors.length > 0) console.log(`\nerrors:\n${errors.map((e) => `  ${e}`).join('\n')}`);
const leftOver = liveProcesses();
if (leftOver > 0) errors.push(`${leftOver} node process(es) still running at the end`);
result.nodeProcessesLeft = leftOver;
result.tookS = round((performance.now() - startedAt) / 1_000, 1);
console.log(`\ntook ${formatFigure(result.tookS as number, 1)} s`);
printResult({ ...result, targetsMissed: missed, errors });
process.exitCode = errors.length > 0 ? 1 : 0;

function describeHandOver(s: HandOverSample): string {
  return (
    `allocator started after ${ms(s.handOverMs)} (requested ${ms(s.requestedMs)}, ` +
    (s.stopReason === 'handed over'
      ? `handed over ${ms(s.handedOverMs)})`
      : `former stopped: ${s.stopReason}${s.tookOver ? ', successor waited the margin' : ''})`) +
    (s.overlapMs > 0 ? `; TWO INSTANCES for ${ms(s.overlapMs)}` : '') +
    (s.elsewhere > 0 ? `; ALSO STARTED ON ${s.elsewhere} OTHER NODE(S)` : '')
  );
}

function fig(x: number | undefined): string {
  return x === undefined || Number.isNaN(x) ? '-' : formatFigure(x);
}

function ms(x: number | undefined): string {
  return x === undefined || Number.isNaN(x) ? '-' : `${formatFigure(x)} ms`;
}

function round(x: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function parseFlags(argv: string[]): Record<string, number | undefined> {
  const known = new Set(['kills5', 'kills10', 'leaves', 'handovers', 'moves']);
  const flags: Record<string, number | undefined> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]!.replace(/^--/, '');
    const value = Number(argv[i + 1]);
    if (!known.has(name) || !Number.isInteger(value) || value < 0) {
      throw new Error(
        'usage: pnpm bench singleton [--kills5 N] [--kills10 N] [--leaves N] [--handovers N] [--moves N]',
      );
    }
    flags[name] = value;
  }
  return flags;
}
