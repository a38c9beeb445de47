// `pnpm bench singleton [--kills3 20] [--kills5 20] [--kills10 0] [--leaves 2] [--cutoffs 10] [--handovers 7]
// [--moves 3]`: cluster singleton figures, with the singleton every node runs by default (the partition
// allocator, 271 partitions). Prints a table, then one JSON line. Defaults everywhere (the node's own downing,
// failure detector and singleton settings: whatever the tree's `doyen node` does).
//   1. failover: N = 3 and N = 5 `doyen node` processes (the CLI, from the source tree) on 127.0.0.1; kill -9
//      the oldest; time from the kill to `singleton.started` (partition-allocator) logged by a survivor (wall
//      clock, the nodes' log `time` against the bench's kill time, one machine); and to `member.downed` about
//      the victim in every survivor. The killed node is started again (a new incarnation, the youngest) and the
//      next kill hits the new oldest. Then `--leaves` graceful leaves of the oldest (SIGTERM) per size.
//   2. cut-off: N = 5 nodes, each in its own network namespace; the oldest is cut off by a symmetric nftables
//      partition; time from the cut (every rule in place) to `singleton.started` on the majority side; heal and
//      settle between rounds. Needs root, `ip netns` and nft: without them a line names what is missing and the
//      figure is null.
//   3. overlap: from every node process's log lines and the bench's kill and exit times, the testkit's shared
//      checker (instance-overlaps.ts) finds any two instances alive at one instant, over 1 and 2.
//   4. hand-over on a graceful leave: N = 5 and N = 10 nodes in this process; shutdown() of the oldest; time
//      to `singleton.started` on the next oldest; whether the leaving oldest handed over.
//   5. partitions moved: on the N = 5 cluster of 4, one node joins (5 → 6), then a non-oldest one leaves
//      (6 → 5), `--moves` times; moved vs optimalMoves(before, members after) from @doyen/partitions. The
//      failovers of 1 are checked against the optimum too.
// Ports are picked at run time on 127.0.0.1; every wait is bounded; no node process outlives the bench.

import { describeOverlaps, type InstanceOverlap } from '../packages/testkit/src/instance-overlaps.js';
import {
  type CutOffSample,
  cliWarningCounts,
  type FailoverSample,
  type HandOverSample,
  installSignalCleanup,
  liveNodeProcesses,
  loopbackHosts,
  SingletonCliCluster,
} from './lib/singleton-cli-nodes.js';
import { LocalCluster, localRestarts, type MovementSample } from './lib/singleton-inprocess.js';
import { cutOffRounds, netnsUnavailable } from './lib/singleton-netns.js';
import { median, percentile, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const args = parseFlags(process.argv.slice(2));
const KILLS: Record<number, number> = { 3: args.kills3 ?? 20, 5: args.kills5 ?? 20, 10: args.kills10 ?? 0 };
const PROCESS_SIZES = [3, 5, 10] as const;
const PROCESS_LEAVES = args.leaves ?? 2;
const CUT_OFFS = args.cutoffs ?? 10;
const CUT_OFF_NODES = 5;
const HAND_OVERS = args.handovers ?? 7;
const MOVES = args.moves ?? 3;
const LOCAL_SIZES = [5, 10] as const;
const PARTITIONS = 271;
// issue 28's targets: p99 of the kills (or cut-offs), 0 overlaps
const TARGET_FAILOVER_P99_MS = 2_000;
const TARGET_CUT_OFF_P99_MS = 2_500;
const TARGET_DOWNED_ALL_P99_MS = 1_500;
const TARGET_HAND_OVER_MS = 500;
// Akka's documentation: failover takes ~25 s for 10 nodes with recommended SBR settings, ~45 s by default.
const AKKA_FAILOVER_10_MS = 25_000;
const AKKA_FAILOVER_DEFAULT_MS = 45_000;

// A stuck bench fails rather than hangs; every wait inside has its own, shorter bound. The default run takes
// ~12 minutes on 2 cores (each kill: failover, restart, settle, a quiet 2 s).
startWatchdog('singleton', 30);
installSignalCleanup();

const startedAt = performance.now();
const errors: string[] = [];
const progress = (line: string) => process.stderr.write(`${line}\n`);
const failovers = new Map<number, FailoverSample[]>(PROCESS_SIZES.map((n) => [n, []]));
const processLeaves = new Map<number, HandOverSample[]>(PROCESS_SIZES.map((n) => [n, []]));
const handOvers = new Map<number, HandOverSample[]>(LOCAL_SIZES.map((n) => [n, []]));
const cutOffs: CutOffSample[] = [];
let cutOffSkipped: string | undefined;
const moves: MovementSample[] = [];
/** Changes made along the way (failovers, leaves of the oldest, replacement joins): moved vs optimum. */
const otherMoves: MovementSample[] = [];
/** Nodes downed while alive (and restarted as new incarnations), per phase. */
const restarts: Record<string, number> = {};
/** Overlaps found per phase by the shared checker, and the instances it looked at. */
const overlapChecks: { phase: string; overlaps: InstanceOverlap[]; instances: number }[] = [];

// ---- 1. CLI node processes: kill -9 of the oldest, then graceful leaves -----------------------------------------
for (const n of PROCESS_SIZES) {
  if (KILLS[n]! + (KILLS[n]! > 0 ? PROCESS_LEAVES : 0) === 0) continue;
  progress(`1. failover: starting ${n} doyen node processes …`);
  let cluster: SingletonCliCluster | undefined;
  try {
    const t = performance.now();
    cluster = await SingletonCliCluster.start(await loopbackHosts(n, `bench-singleton-${n}`));
    progress(`   ${n} nodes up, one membership, allocator on the oldest after ${ms(performance.now() - t)}`);
    for (let i = 0; i < KILLS[n]!; i++) {
      const s = await cluster.killOldest();
      failovers.get(n)!.push(s);
      otherMoves.push({
        change: 'failover',
        from: n,
        to: n - 1,
        moved: s.moved,
        logged: s.moved,
        allocations: 1,
        optimum: s.optimum,
      });
      progress(
        `   N = ${n} kill ${i + 1}/${KILLS[n]} (${s.victim}): allocator started on ${s.startedOn} after ` +
          `${ms(s.failoverMs)} (unreachable ${ms(s.unreachableMs)}, downed by all ${ms(s.downedAllMs)}, ` +
          `taking over ${ms(s.takingOverMs)}); moved ${s.moved} (optimum ${s.optimum})` +
          (s.startedOn !== s.successor ? `; NOT THE NEXT OLDEST (${s.successor})` : '') +
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
    if (cluster) {
      overlapChecks.push({ phase: `processesN${n}`, ...cluster.overlaps() });
      restarts[`processesN${n}`] = cluster.restartLines();
      await cluster.close();
    }
  }
}

// ---- 2. network namespaces: the oldest cut off -------------------------------------------------------------
if (CUT_OFFS > 0) {
  cutOffSkipped = netnsUnavailable();
  if (cutOffSkipped !== undefined) {
    progress(`2. cut-off: skipped, network namespaces unavailable: ${cutOffSkipped}`);
  } else {
    progress(`2. cut-off: ${CUT_OFF_NODES} doyen node processes, each in its own network namespace …`);
    const outcome = await cutOffRounds(CUT_OFF_NODES, CUT_OFFS, (s, i) =>
      progress(
        `   cut-off ${i + 1}/${CUT_OFFS} (${s.victim}): allocator started on ${s.startedOn} after ` +
          `${ms(s.failoverMs)} (cut took ${ms(s.cutTookMs)}; cut-off oldest stopped its instance at ` +
          `${ms(s.victimStoppedMs)}; downed by all ${ms(s.downedAllMs)})` +
          (s.elsewhere > 0 ? `; ALSO STARTED ON ${s.elsewhere} OTHER NODE(S)` : ''),
      ),
    );
    cutOffs.push(...outcome.samples);
    if (outcome.overlaps) overlapChecks.push({ phase: 'netnsCutOff', ...outcome.overlaps });
    restarts.netnsCutOff = outcome.restartLines;
    if (outcome.error !== undefined) {
      errors.push(`cut-off in network namespaces: ${outcome.error}`);
      progress(`   failed: ${outcome.error}`);
    }
  }
}

// ---- 4 and 5. in-process nodes: hand-over on a graceful leave, partitions moved -------------------------------
for (const n of LOCAL_SIZES) {
  const runs = HAND_OVERS;
  const moveRuns = n === 5 ? MOVES : 0;
  if (runs + moveRuns === 0) continue;
  progress(`4. hand-over: starting ${n} nodes in this process …`);
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
        `5. partitions run ${i + 1}/${moveRuns}: join ${join.from} → ${join.to} moved ${join.moved} ` +
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
    'failover: `doyen node` processes (the CLI from source) on 127.0.0.1, kill -9 of the oldest, wall-clock kill → the first singleton.started log line (its pino time) in a survivor; cut-off: the same in network namespaces, symmetric nftables partition of the oldest, cut in place → singleton.started on the majority side; overlap: instance-overlaps.ts over every process log and the kill/exit times; hand-over: startNode nodes in one process, shutdown() of the oldest → singleton.started; partitions: settled tables vs optimalMoves',
  defaults: "the CLI's defaults (downing, failure detector, singleton settings) as in the tree",
};
const missed: string[] = [];
/** Each target beside its figure: `ratio` = figure / target (met when ≤ 1; for counts, met when equal). */
const targets: Record<string, { figure: number | null; target: number; ratio: number | null; met: boolean }> =
  {};
const table: string[][] = [['figure', 'unit', 'p50', 'p99', 'min', 'max', 'target', 'met', 'samples']];
type Figure = { median: number; p99: number; min: number; max: number; samples: number[] };
/** NaN samples (a line that never came) are left out of the statistics, but still shown as '-'. */
const figure = (all: readonly number[]): Figure => {
  const xs = all.filter(Number.isFinite);
  const has = xs.length > 0;
  return {
    median: has ? median(xs) : Number.NaN,
    p99: has ? percentile(xs, 99) : Number.NaN,
    min: has ? Math.min(...xs) : Number.NaN,
    max: has ? Math.max(...xs) : Number.NaN,
    samples: [...all],
  };
};
/**
 * A row; with `target`, judged on `basis` (p99 for issue 28's figures) and recorded in `targets` under `key`.
 * A sample that never came (NaN) fails a p99 target: the figure cannot be shown to meet it.
 */
const row = (
  label: string,
  unit: string,
  xs: readonly number[],
  target?: { bound: number; key: string; basis: 'p50' | 'p99' },
): Figure => {
  const f = figure(xs);
  let met = '';
  if (target) {
    const value = target.basis === 'p99' ? f.p99 : f.median;
    const complete = xs.length > 0 && xs.every(Number.isFinite);
    const ok = value <= target.bound && (target.basis === 'p50' || complete);
    met = ok ? 'yes' : 'NO';
    targets[target.key] = {
      figure: Number.isFinite(value) ? round(value) : null,
      target: target.bound,
      ratio: Number.isFinite(value) ? round(value / target.bound, 2) : null,
      met: ok,
    };
    if (!ok) missed.push(target.key);
  }
  table.push([
    `  ${label}`,
    unit,
    fig(f.median),
    fig(f.p99),
    fig(f.min),
    fig(f.max),
    target ? `${target.basis} <= ${formatFigure(target.bound)}` : '',
    met,
    f.samples.map(fig).join(' '),
  ]);
  return f;
};
const json = (f: Figure) => ({
  p50Ms: round(f.median),
  p99Ms: round(f.p99),
  minMs: round(f.min),
  maxMs: round(f.max),
  samplesMs: f.samples.map((x) => round(x)),
});

table.push(['1. kill -9 of the oldest `doyen node` process → allocator started in a survivor']);
const failoverJson: Record<string, unknown> = {};
for (const n of PROCESS_SIZES) {
  const ss = failovers.get(n)!;
  if (KILLS[n] === 0) continue;
  const complete = ss.length === KILLS[n];
  const f = row(
    `N = ${n}: kill → singleton.started (${ss.length}/${KILLS[n]} kills)`,
    'ms',
    ss.map((s) => s.failoverMs),
    {
      bound: TARGET_FAILOVER_P99_MS,
      key: `failoverN${n}P99Ms`,
      basis: 'p99',
    },
  );
  if (!complete && !missed.includes(`failoverN${n}P99Ms`)) missed.push(`failoverN${n}Kills`);
  const unreachable = row(
    `N = ${n}:   kill → first member.unreachable, any survivor`,
    'ms',
    ss.map((s) => s.unreachableMs),
  );
  const downedAll = row(
    `N = ${n}:   kill → member.downed in every survivor`,
    'ms',
    ss.map((s) => s.downedAllMs),
    { bound: TARGET_DOWNED_ALL_P99_MS, key: `downedAllN${n}P99Ms`, basis: 'p99' },
  );
  const margin = row(
    `N = ${n}:   member.downed in the next oldest → started`,
    'ms',
    ss.map((s) => s.failoverMs - s.downedMs),
  );
  const disturbed = ss.filter((s) => s.otherDowned + s.restarts > 0);
  const notNext = ss.filter((s) => s.startedOn !== s.successor).length;
  if (disturbed.length > 0)
    table.push([
      `  N = ${n}:   kills during which a live member was downed too (included above)`,
      'count',
      `${disturbed.length}/${ss.length}`,
      '',
      '',
      '',
      '',
      '',
      disturbed.map((s) => fig(s.failoverMs)).join(' '),
    ]);
  failoverJson[`n${n}`] = {
    ...json(f),
    kills: ss.length,
    unreachableP50Ms: round(unreachable.median),
    downedAllP50Ms: round(downedAll.median),
    downedAllP99Ms: round(downedAll.p99),
    downedAllSamplesMs: downedAll.samples.map((x) => round(x)),
    downedToStartedP50Ms: round(margin.median),
    killsWithoutMemberUnreachable: ss.filter((s) => Number.isNaN(s.unreachableMs)).length,
    startedNotOnNextOldest: notNext,
    startedElsewhere: ss.reduce((a, s) => a + s.elsewhere, 0),
    disturbedKills: disturbed.length,
  };
}
table.push([
  '  Akka, 10 nodes, recommended SBR settings (documented, not measured)',
  'ms',
  fig(AKKA_FAILOVER_10_MS),
]);
table.push(['  Akka, default settings (documented, not measured)', 'ms', fig(AKKA_FAILOVER_DEFAULT_MS)]);
result.failover = failoverJson;

table.push([
  `2. oldest cut off by a symmetric nftables partition, ${CUT_OFF_NODES} nodes in network namespaces → allocator started on the majority side`,
]);
let cutOffJson: Record<string, unknown> | null = null;
if (CUT_OFFS > 0 && cutOffSkipped === undefined) {
  const f = row(
    `cut in place → singleton.started (${cutOffs.length}/${CUT_OFFS} rounds)`,
    'ms',
    cutOffs.map((s) => s.failoverMs),
    {
      bound: TARGET_CUT_OFF_P99_MS,
      key: 'cutOffP99Ms',
      basis: 'p99',
    },
  );
  const stopped = row(
    '  cut → the cut-off oldest stopped its instance',
    'ms',
    cutOffs.map((s) => s.victimStoppedMs),
  );
  const downedAll = row(
    '  cut → member.downed in every majority node',
    'ms',
    cutOffs.map((s) => s.downedAllMs),
  );
  if (cutOffs.length !== CUT_OFFS && !missed.includes('cutOffP99Ms')) missed.push('cutOffRounds');
  cutOffJson = {
    ...json(f),
    rounds: cutOffs.length,
    nodes: CUT_OFF_NODES,
    cutTookP50Ms: round(figure(cutOffs.map((s) => s.cutTookMs)).median),
    victimStoppedP50Ms: round(stopped.median),
    downedAllP50Ms: round(downedAll.median),
    startedElsewhere: cutOffs.reduce((a, s) => a + s.elsewhere, 0),
  };
} else if (CUT_OFFS > 0) {
  table.push([`  skipped: network namespaces unavailable (${cutOffSkipped})`]);
  targets.cutOffP99Ms = { figure: null, target: TARGET_CUT_OFF_P99_MS, ratio: null, met: false };
}
result.cutOff = cutOffJson;
if (cutOffSkipped !== undefined) result.cutOffSkipped = cutOffSkipped;

table.push([
  '3. overlap: two instances of one singleton alive at one instant (instance-overlaps.ts, every process log)',
]);
const overlapCount = overlapChecks.reduce((k, c) => k + c.overlaps.length, 0);
for (const c of overlapChecks)
  table.push([
    `  ${c.phase}: overlapping pairs (${c.instances} instances)`,
    'count',
    String(c.overlaps.length),
    '',
    '',
    String(c.overlaps.length > 0 ? Math.max(...c.overlaps.map((o) => o.overlapMs)) : 0),
    '== 0',
    c.overlaps.length === 0 ? 'yes' : 'NO',
    c.overlaps.map((o) => `${o.overlapMs} ms`).join(' '),
  ]);
targets.overlaps = {
  figure: overlapChecks.length > 0 ? overlapCount : null,
  target: 0,
  ratio: null,
  met: overlapChecks.length > 0 && overlapCount === 0,
};
if (!targets.overlaps.met) missed.push('overlaps');
result.overlap = Object.fromEntries(
  overlapChecks.map((c) => [
    c.phase,
    {
      instances: c.instances,
      overlaps: c.overlaps.length,
      maxOverlapMs: c.overlaps.length > 0 ? Math.max(...c.overlaps.map((o) => o.overlapMs)) : 0,
      described: c.overlaps.length > 0 ? describeOverlaps(c.overlaps) : undefined,
    },
  ]),
);

table.push(['4. graceful leave of the oldest → allocator started on the next oldest']);
const handOverJson: Record<string, unknown> = {};
for (const n of LOCAL_SIZES) {
  const ss = handOvers.get(n)!;
  if (HAND_OVERS === 0) continue;
  const f = row(
    `N = ${n}, in one process: shutdown() → singleton.started (${ss.length} runs)`,
    'ms',
    ss.map((s) => s.handOverMs),
    { bound: TARGET_HAND_OVER_MS, key: `handOverN${n}P50Ms`, basis: 'p50' },
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
    '',
    '',
    '== 0',
    interrupted.length === 0 ? 'yes' : 'NO',
    interrupted.map((s) => `${s.stopReason}${s.tookOver ? ' + margin' : ''}`).join('; '),
  ]);
  if (ss.length !== HAND_OVERS) missed.push(`handOverN${n}Runs`);
  if (interrupted.length > 0) missed.push(`handOverN${n}Interrupted`);
  handOverJson[`n${n}`] = {
    ...json(f),
    runs: ss.length,
    requestedP50Ms: round(requested.median),
    withoutHandOver: interrupted.length,
    overlapping: ss.filter((s) => s.overlapMs > 0).length,
    startedElsewhere: ss.reduce((a, s) => a + s.elsewhere, 0),
  };
}
for (const n of PROCESS_SIZES) {
  const ss = processLeaves.get(n)!;
  if (ss.length === 0) continue;
  const f = row(
    `N = ${n}, doyen node processes (cross-check): SIGTERM → singleton.started`,
    'ms',
    ss.map((s) => s.handOverMs),
  );
  const interrupted = ss.filter((s) => s.stopReason !== 'handed over' || s.tookOver).length;
  handOverJson[`processesN${n}`] = { ...json(f), runs: ss.length, withoutHandOver: interrupted };
}
result.handOver = handOverJson;

table.push([
  `5. partitions moved (${PARTITIONS}), settled table diff; optimum = optimalMoves(before, members after)`,
  'unit',
  'moved',
  '',
  '',
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
    '',
    '',
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
  '',
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
const judged = (key: string, label: string) => {
  const t = targets[key];
  if (!t) return undefined;
  return `${label} ${t.met ? 'met' : 'NOT met'} (${t.figure === null ? 'no figure' : `${formatFigure(t.figure)}${key === 'overlaps' ? '' : ' ms'}`})`;
};
const targetLines = [
  `failover after kill -9, p99 <= ${formatFigure(TARGET_FAILOVER_P99_MS)} ms (Akka: ~${AKKA_FAILOVER_10_MS / 1_000} s for 10 nodes): ` +
    PROCESS_SIZES.map((n) => judged(`failoverN${n}P99Ms`, `N = ${n}`))
      .filter(Boolean)
      .join('; ') || 'not run',
  `crashed member downed in every survivor, p99 <= ${formatFigure(TARGET_DOWNED_ALL_P99_MS)} ms: ` +
    PROCESS_SIZES.map((n) => judged(`downedAllN${n}P99Ms`, `N = ${n}`))
      .filter(Boolean)
      .join('; ') || 'not run',
  `cut off by a netns partition, p99 <= ${formatFigure(TARGET_CUT_OFF_P99_MS)} ms: ` +
    (cutOffSkipped !== undefined
      ? `not measured (${cutOffSkipped})`
      : (judged('cutOffP99Ms', 'N = 5') ?? 'not run')),
  `overlap == 0: ${judged('overlaps', 'every phase') ?? 'not checked'}`,
  `hand-over <= ${TARGET_HAND_OVER_MS} ms (p50): ` +
    LOCAL_SIZES.map((n) => judged(`handOverN${n}P50Ms`, `N = ${n}`))
      .filter(Boolean)
      .join('; ') || 'not run',
  `partitions moved == optimum: join ${missed.includes('partitionsJoin') ? 'NOT met' : 'met'}, leave ${missed.includes('partitionsLeave') ? 'NOT met' : 'met'}, other changes ${otherEqual}/${otherMoves.length}`,
];
console.log(`\ntargets\n${targetLines.map((t) => `  ${t}`).join('\n')}`);
result.targets = targets;
const notes: string[] = [];
for (const c of overlapChecks)
  if (c.overlaps.length > 0)
    notes.push(
      `${c.phase}: TWO INSTANCES AT ONCE:\n    ${describeOverlaps(c.overlaps).replaceAll('\n', '\n    ')}`,
    );
for (const n of PROCESS_SIZES) {
  const bad = processLeaves.get(n)!.filter((s) => s.stopReason !== 'handed over' || s.tookOver);
  const local = handOvers.get(n as 5 | 10) ?? [];
  const all = [...bad, ...local.filter((s) => s.stopReason !== 'handed over' || s.tookOver)];
  if (all.length > 0)
    notes.push(
      `N = ${n}: ${all.length} graceful leave(s) without a hand-over (${all.map((s) => ms(s.handOverMs)).join(', ')}): ` +
        `the leaving oldest stopped its instance (${[...new Set(all.map((s) => s.stopReason))].join(', ')}) ` +
        `without handing over, and the successor waited.`,
    );
}
const restarted = Object.entries(restarts).filter(([, k]) => k > 0);
if (restarted.length > 0)
  notes.push(
    `live nodes downed and restarted as new incarnations (node.restart lines): ` +
      `${restarted.map(([phase, k]) => `${phase} ×${k}`).join(', ')}; the figures of the runs they fell in include them ` +
      '(a cut-off node restarting is expected: it is downed by the majority).',
  );
result.restartsOfLiveNodes = restarts;
if (notes.length > 0) console.log(`\nnotes\n${notes.map((x) => `  ${x}`).join('\n')}`);
result.notes = notes;
const warned = [...cliWarningCounts()]
  .sort((a, b) => b[1] - a[1])
  .map(([e, k]) => `${e} ×${k}`)
  .join(', ');
console.log(
  `\nmethod: ${result.method}. ${result.defaults}.` +
    `\nwarn-level log lines of the node processes: ${warned || 'none'}`,
);
if (errors.length > 0) console.log(`\nerrors:\n${errors.map((e) => `  ${e}`).join('\n')}`);
const leftOver = liveNodeProcesses();
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
  const known = new Set(['kills3', 'kills5', 'kills10', 'leaves', 'cutoffs', 'handovers', 'moves']);
  const flags: Record<string, number | undefined> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]!.replace(/^--/, '');
    const value = Number(argv[i + 1]);
    if (!known.has(name) || !Number.isInteger(value) || value < 0) {
      throw new Error(
        'usage: pnpm bench singleton [--kills3 N] [--kills5 N] [--kills10 N] [--leaves N] [--cutoffs N] [--handovers N] [--moves N]',
      );
    }
    flags[name] = value;
  }
  return flags;
}
