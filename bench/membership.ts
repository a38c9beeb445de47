// `pnpm bench membership [--nodes 3] [--kills 20] [--stall-seconds 30] [--join-runs 3] [--downing MODE]`:
// cluster membership figures. Prints a table, then one JSON line. 1 and 2 use the cluster's default downing
// mode unless --downing names one (e.g. auto); 3 and 4 always use the defaults.
//   1. crash detection: kill -9 one of 3 node processes (alternately a member and the coordinator); time to
//      the first `member.unreachable` in any survivor and to `member.downed` in all survivors (p50, p99; the
//      killed port refuses the survivors' next dial, so detection needs no phi: see connectionRefused)
//   2. false suspicions: one node process blocks its event loop 100 ms every 500 ms for 30 s; count the
//      `member.unreachable` / `member.downed` events the other nodes publish
//   3. join convergence: N = 10, 25, 50 nodes in this process, started at once; time until all see N `up`
//      (when N = 50 misses its target, N = 50 again with a 5 s acceptable heartbeat pause, as a diagnostic:
//      the join protocol's own speed, without false suspicions during the join)
//   4. heartbeat traffic of the converged N = 10 and N = 50 clusters, beside the all-to-all figure
// Node processes, ports and sockets are all on 127.0.0.1, ports picked at run time; every wait is bounded,
// and no node process outlives the bench (see lib/membership-processes.ts).
import { DEFAULT_HEARTBEAT_INTERVAL_MS, defaultClusterConfig } from '../packages/cluster/src/index.js';
import {
  type KillSample,
  ProcessCluster,
  type StallOutcome,
  type VictimKind,
} from './lib/membership-crash.js';
import {
  type JoinOptions,
  type JoinOutcome,
  joinConvergence,
  type TrafficOutcome,
} from './lib/membership-inprocess.js';
import { installSignalCleanup, nodeWarnings } from './lib/membership-processes.js';
import { median, percentile, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';
import { startWatchdog } from './lib/watchdog.js';

const { numbers: args, downing: DOWNING } = parseFlags(process.argv.slice(2));
/** Downing mode of the node processes (1, 2): the cluster's default unless --downing says otherwise. */
const DOWNING_LABEL = DOWNING ?? `${defaultClusterConfig.downing} (cluster default)`;
const NODES = args.nodes ?? 3;
if (NODES < 2) throw new Error('--nodes must be at least 2');
const KILLS = args.kills ?? 20;
const STALL_SECONDS = args['stall-seconds'] ?? 30;
const JOIN_RUNS = args['join-runs'] ?? 3;
const JOIN_SIZES = [10, 25, 50];
const TRAFFIC_SIZES = new Set([10, 50]);
const TRAFFIC_MS = 5_000;
const HEARTBEATS_PER_SEC = 1000 / DEFAULT_HEARTBEAT_INTERVAL_MS;
const STALL = { busyMs: 100, everyMs: 500 };
/** Issue 28: a crashed member downed in every survivor, p99 (detection is part of it). */
const TARGET_CRASH_P99_MS = 1_500;
const TARGET_JOIN_50_MS = 5_000;
const AKKA_DETECTION_MS = 5_000;

startWatchdog('membership', 8);
installSignalCleanup();

const startedAt = performance.now();
const errors: string[] = [];
const progress = (line: string) => process.stderr.write(`${line}\n`);

// ---- 1 and 2: node processes --------------------------------------------------------------------------------
const kills: KillSample[] = [];
let stall: StallOutcome | undefined;
if (KILLS > 0 || STALL_SECONDS > 0) {
  progress(`1. crash detection: starting ${NODES} node processes, downing ${DOWNING_LABEL} …`);
  let cluster: ProcessCluster | undefined;
  try {
    cluster = await ProcessCluster.start(NODES, DOWNING);
    await sleep(1_000); // a second of heartbeats before the first kill
    for (let i = 0; i < KILLS; i++) {
      const kind: VictimKind = i % 2 === 0 ? 'member' : 'coordinator';
      const sample = await cluster.killAndRestart(kind, Math.floor(i / 2));
      kills.push(sample);
      progress(
        `   kill ${i + 1}/${KILLS} (${kind} ${sample.address}): unreachable after ${ms(sample.detectMs)}, ` +
          `downed by all after ${ms(sample.removeMs)}` +
          (sample.failoverMs !== undefined ? `, new coordinator after ${ms(sample.failoverMs)}` : ''),
      );
    }
    if (STALL_SECONDS > 0) {
      progress(`2. event-loop stalls: ${STALL.busyMs} ms every ${STALL.everyMs} ms for ${STALL_SECONDS} s …`);
      stall = await cluster.stall(STALL.busyMs, STALL.everyMs, STALL_SECONDS * 1_000);
    }
  } catch (error) {
    errors.push(`node processes: ${(error as Error).message}`);
    progress(`   failed: ${(error as Error).stack}`);
  } finally {
    await cluster?.close();
  }
}

// ---- 3 and 4: in-process clusters ---------------------------------------------------------------------------
type JoinCase = {
  key: string;
  n: number;
  label: string;
  /** Run this case at all (decided when its turn comes, from the cases before it). */
  when?: () => boolean;
  /** Fewer runs than JOIN_RUNS, to keep the bench's time bounded. */
  maxRuns?: number;
  traffic?: () => boolean;
  cluster?: JoinOptions['cluster'];
};
const joins = new Map<string, JoinOutcome[]>();
/** Traffic figures of the runs that stayed converged: a cluster falling apart is no steady state. */
const stableTraffic = (key: string): TrafficOutcome[] =>
  (joins.get(key) ?? []).flatMap((o) => (o.stable && o.traffic ? [o.traffic] : []));
const joinCases: JoinCase[] = [
  ...JOIN_SIZES.map((n) => ({
    key: `join${n}`,
    n,
    label: `N = ${n}`,
    traffic: () => TRAFFIC_SIZES.has(n),
  })),
  {
    // Only when N = 50 missed (slow, or fell apart): the same with the failure detector made deaf to 5 s of silence, to tell the
    // join protocol's own speed apart from false suspicions during the join.
    key: 'join50Pause5s',
    n: 50,
    label: 'N = 50, FD pause 5 s (diagnostic)',
    when: () => {
      const outcomes = joins.get('join50') ?? [];
      const xs = outcomes.map((o) => o.convergeMs);
      return xs.length > 0 && (!(median(xs) <= TARGET_JOIN_50_MS) || outcomes.some((o) => !o.stable));
    },
    traffic: () => stableTraffic('join50').length === 0,
    cluster: { failureDetector: { kind: 'phi-accrual', acceptableHeartbeatPauseMs: 5_000 } },
    maxRuns: 2,
  },
];
for (const c of JOIN_RUNS > 0 ? joinCases : []) {
  if (c.when && !c.when()) continue;
  const outcomes: JoinOutcome[] = [];
  joins.set(c.key, outcomes);
  const runCount = Math.min(JOIN_RUNS, c.maxRuns ?? JOIN_RUNS);
  for (let run = 0; run < runCount; run++) {
    progress(`3. join convergence: ${c.label}, run ${run + 1}/${runCount} …`);
    try {
      const outcome = await joinConvergence(c.n, {
        ...(c.traffic?.() ? { trafficMs: TRAFFIC_MS } : {}),
        ...(c.cluster ? { cluster: c.cluster } : {}),
      });
      outcomes.push(outcome);
      const t = outcome.traffic;
      progress(
        outcome.failure !== undefined
          ? `   did not converge: ${outcome.failure}; views: ${outcome.views}`
          : `   converged after ${ms(outcome.convergeMs)} (version ${outcome.version})` +
              (t ? `; ${formatFigure(t.pingsPerNodePerSec, 1)} pings/node/s` : '') +
              (outcome.stable
                ? ''
                : `; then fell apart (${outcome.unreachableAfter} member.unreachable): ${outcome.views}`),
      );
    } catch (error) {
      errors.push(`join ${c.label}: ${(error as Error).message}`);
      progress(`   failed: ${(error as Error).stack}`);
    }
    await sleep(500); // let the closed sockets go before the next cluster binds
  }
}
const warnings = nodeWarnings();
if (warnings) progress(`node processes logged warnings: ${warnings}`);

// ---- report -------------------------------------------------------------------------------------------------
type Row = {
  label: string;
  unit: string;
  value: number | undefined;
  digits?: number;
  target?: Target;
  samples?: number[];
};
type Target = { op: '<=' | '=='; bound: number; key: string };
const rows: (Row | string)[] = [];
const result: Record<string, unknown> = { bench: 'membership' };
const missed: string[] = [];

const p = (xs: number[], q: number) => (xs.length > 0 ? percentile(xs, q) : undefined);
const member = kills.filter((k) => k.victim === 'member');
const coordinator = kills.filter((k) => k.victim === 'coordinator');
const detect = (ks: KillSample[]) => ks.map((k) => k.detectMs);
const remove = (ks: KillSample[]) => ks.map((k) => k.removeMs);
const failover = coordinator.map((k) => k.failoverMs!);

rows.push(
  `1. kill -9, ${NODES} node processes, downing ${DOWNING_LABEL}, ${kills.length} kills (${member.length} member, ${coordinator.length} coordinator)`,
);
const crashRows: [string, string, number[], Target | undefined][] = [
  ['all kills: first member.unreachable, p50', 'detectP50Ms', detect(kills), undefined],
  [
    'all kills: first member.unreachable, p99',
    'detectP99Ms',
    detect(kills),
    { op: '<=', bound: TARGET_CRASH_P99_MS, key: 'detectP99Ms' },
  ],
  ['all kills: member.downed in all survivors, p50', 'removeP50Ms', remove(kills), undefined],
  [
    'all kills: member.downed in all survivors, p99',
    'removeP99Ms',
    remove(kills),
    { op: '<=', bound: TARGET_CRASH_P99_MS, key: 'removeP99Ms' },
  ],
  ['member kills: detection p50', 'memberDetectP50Ms', detect(member), undefined],
  ['member kills: detection p99', 'memberDetectP99Ms', detect(member), undefined],
  ['member kills: removal p50', 'memberRemoveP50Ms', remove(member), undefined],
  ['member kills: removal p99', 'memberRemoveP99Ms', remove(member), undefined],
  ['coordinator kills: detection p50', 'coordinatorDetectP50Ms', detect(coordinator), undefined],
  ['coordinator kills: detection p99', 'coordinatorDetectP99Ms', detect(coordinator), undefined],
  ['coordinator kills: removal p50', 'coordinatorRemoveP50Ms', remove(coordinator), undefined],
  ['coordinator kills: removal p99', 'coordinatorRemoveP99Ms', remove(coordinator), undefined],
  ['coordinator kills: new coordinator in all, p50', 'failoverP50Ms', failover, undefined],
  ['coordinator kills: new coordinator in all, p99', 'failoverP99Ms', failover, undefined],
];
for (const [label, key, xs, target] of crashRows) {
  const value = p(xs, key.includes('P99') ? 99 : 50);
  result[key] = round(value, 0);
  // the JSON line carries each target beside its figure
  if (target) result[`${key.replace(/Ms$/, '')}TargetMs`] = target.bound;
  rows.push({
    label: `  ${label}`,
    unit: 'ms',
    value,
    ...(target ? { target } : {}),
    ...(key.startsWith('detectP50') || key.startsWith('removeP50') || key.startsWith('failoverP50')
      ? { samples: xs }
      : {}),
  });
}
rows.push({
  label: '  Akka default detection (documented, not measured)',
  unit: 'ms',
  value: AKKA_DETECTION_MS,
});
const noUnreachable = kills.filter((k) => !k.sawUnreachable).length;
const otherUnreachable = kills.reduce((s, k) => s + k.otherUnreachable, 0);
rows.push({ label: '  kills with no member.unreachable before downed', unit: 'count', value: noUnreachable });
rows.push({
  label: '  member.unreachable about other (live) members',
  unit: 'count',
  value: otherUnreachable,
  target: { op: '==', bound: 0, key: 'crashOtherUnreachable' },
});
Object.assign(result, {
  crashNodes: NODES,
  downing: DOWNING ?? defaultClusterConfig.downing,
  kills: kills.length,
  crashOtherUnreachable: otherUnreachable,
  akkaDefaultDetectionMs: AKKA_DETECTION_MS,
});

rows.push(
  `2. one node stalls ${STALL.busyMs} ms every ${STALL.everyMs} ms for ${STALL_SECONDS} s (${NODES} nodes, same cluster)`,
);
if (stall) {
  rows.push({ label: '  stalls done', unit: 'count', value: stall.stalls });
  rows.push({
    label: '  longest gap of a 10 ms timer in the stalling node',
    unit: 'ms',
    value: stall.maxTimerGapMs,
  });
  rows.push({ label: '  member.unreachable in the other nodes', unit: 'count', value: stall.unreachable });
  rows.push({
    label: '  member.downed in the other nodes',
    unit: 'count',
    value: stall.downed,
    target: { op: '==', bound: 0, key: 'stallDowned' },
  });
  rows.push({
    label: '  member.unreachable / downed in the stalling node',
    unit: 'count',
    value: stall.selfUnreachable + stall.selfDowned,
  });
  rows.push({
    label: '  cluster converged again afterwards (1 = yes)',
    unit: 'bool',
    value: stall.convergedAfter ? 1 : 0,
  });
  Object.assign(result, {
    stallSeconds: STALL_SECONDS,
    stalls: stall.stalls,
    stallMaxTimerGapMs: round(stall.maxTimerGapMs, 0),
    stallUnreachable: stall.unreachable,
    stallReachable: stall.reachable,
    stallDowned: stall.downed,
    stallSelfUnreachable: stall.selfUnreachable,
    stallSelfDowned: stall.selfDowned,
    stallConvergedAfter: stall.convergedAfter,
  });
}

rows.push(`3. join convergence, N nodes in one process started at once (median of the runs)`);
for (const c of joinCases) {
  const outcomes = joins.get(c.key);
  if (!outcomes) continue;
  const xs = outcomes.map((o) => o.convergeMs);
  const value = xs.length > 0 ? median(xs) : undefined;
  result[`${c.key}Ms`] = round(value, 0);
  rows.push({
    label: `  ${c.label}: all see N up, one version`,
    unit: 'ms',
    value,
    samples: xs,
    ...(c.key === 'join50'
      ? { target: { op: '<=', bound: TARGET_JOIN_50_MS, key: 'join50Ms' } as Target }
      : {}),
  });
  const stable = outcomes.filter((o) => o.stable).length;
  rows.push({
    label: `  ${c.label}: runs still converged ${outcomes.some((o) => o.traffic) ? `after the traffic window` : '2 s later'}`,
    unit: 'count',
    value: stable,
    target: { op: '==', bound: outcomes.length, key: `${c.key}Stable` },
  });
  result[`${c.key}StableRuns`] = stable;
  const failed = outcomes.filter((o) => o.failure !== undefined).length;
  const unreachable = outcomes.reduce((s, o) => s + o.unreachableEvents, 0);
  const downed = outcomes.reduce((s, o) => s + o.downedEvents, 0);
  Object.assign(result, {
    [`${c.key}Failed`]: failed,
    [`${c.key}UnreachableEvents`]: unreachable,
    [`${c.key}DownedEvents`]: downed,
  });
  const firstFailure = outcomes.find((o) => o.failure !== undefined)?.failure;
  if (firstFailure !== undefined) result[`${c.key}FirstFailure`] = firstFailure;
  if (failed > 0)
    rows.push({ label: `  ${c.label}: runs that never converged`, unit: 'count', value: failed });
  if (unreachable + downed > 0) {
    rows.push({
      label: `  ${c.label}: member.unreachable events, all runs`,
      unit: 'count',
      value: unreachable,
    });
    rows.push({ label: `  ${c.label}: member.downed events, all runs`, unit: 'count', value: downed });
  }
}

rows.push(
  `4. heartbeat traffic per node after convergence, ${TRAFFIC_MS / 1_000} s window (median of the runs that stayed converged)`,
);
for (const c of joinCases) {
  const traffic = stableTraffic(c.key);
  if (traffic.length === 0) continue;
  const { n } = c;
  const med = (f: (t: TrafficOutcome) => number) => median(traffic.map(f));
  const pings = med((t) => t.pingsPerNodePerSec);
  const pongs = med((t) => t.pongsPerNodePerSec);
  const system = med((t) => t.systemMessagesPerNodePerSec);
  const allToAll = (n - 1) * HEARTBEATS_PER_SEC;
  const label = `  ${c.label}:`;
  rows.push({
    label: `${label} heartbeat.ping sent`,
    unit: 'msgs/s',
    value: pings,
    digits: 1,
    samples: traffic.map((t) => t.pingsPerNodePerSec),
  });
  rows.push({ label: `${label} heartbeat.pong sent`, unit: 'msgs/s', value: pongs, digits: 1 });
  rows.push({
    label: `${label} system-lane messages sent (wire metric)`,
    unit: 'msgs/s',
    value: system,
    digits: 1,
  });
  rows.push({
    label: `${label} all-to-all pings, (N-1) × ${HEARTBEATS_PER_SEC}`,
    unit: 'msgs/s',
    value: allToAll,
    digits: 1,
  });
  rows.push({ label: `${label} all-to-all pings + pongs`, unit: 'msgs/s', value: 2 * allToAll, digits: 1 });
  rows.push({
    label: `${label} system lane / all-to-all pings + pongs`,
    unit: 'ratio',
    value: system / (2 * allToAll),
    digits: 2,
  });
  const key = `hb${n}`;
  Object.assign(result, {
    [`${key}PingsPerNodePerSec`]: round(pings, 1),
    [`${key}PongsPerNodePerSec`]: round(pongs, 1),
    [`${key}SystemMsgsPerNodePerSec`]: round(system, 1),
    [`${key}AllToAllPingsPerNodePerSec`]: allToAll,
    ...(c.cluster ? { [`${key}MeasuredIn`]: c.key } : {}),
  });
}

const table: string[][] = [['figure', 'unit', 'value', 'target', 'met', 'samples']];
for (const row of rows) {
  if (typeof row === 'string') {
    table.push([row]);
    continue;
  }
  const digits = row.digits ?? 0;
  let met = '';
  if (row.target) {
    const ok =
      row.value !== undefined &&
      (row.target.op === '<=' ? row.value <= row.target.bound : row.value === row.target.bound);
    met = ok ? 'yes' : 'NO';
    if (!ok) missed.push(row.target.key);
  }
  table.push([
    row.label,
    row.unit,
    row.value === undefined || Number.isNaN(row.value) ? '-' : formatFigure(row.value, digits),
    row.target ? `${row.target.op} ${formatFigure(row.target.bound)}` : '',
    met,
    row.samples ? row.samples.map((x) => formatFigure(x, digits)).join(' ') : '',
  ]);
}
console.log(formatTable(table));
if (errors.length > 0) console.log(`\nerrors:\n${errors.map((e) => `  ${e}`).join('\n')}`);
console.log(`\ntook ${formatFigure((performance.now() - startedAt) / 1_000, 1)} s`);
printResult({ ...result, targetsMissed: missed, errors });
process.exitCode = errors.length > 0 ? 1 : 0;

function ms(x: number): string {
  return `${formatFigure(x, 0)} ms`;
}

function round(x: number | undefined, digits: number): number | null {
  return x === undefined || Number.isNaN(x) ? null : Number(x.toFixed(digits));
}

function sleep(msToWait: number): Promise<void> {
  return new Promise((r) => setTimeout(r, msToWait));
}

function parseFlags(argv: string[]): { numbers: Record<string, number | undefined>; downing?: string } {
  const known = new Set(['nodes', 'kills', 'stall-seconds', 'join-runs']);
  const numbers: Record<string, number | undefined> = {};
  let downing: string | undefined;
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]!.replace(/^--/, '');
    const raw = argv[i + 1];
    if (name === 'downing' && raw) {
      downing = raw;
      continue;
    }
    const value = Number(raw);
    if (!known.has(name) || !Number.isInteger(value) || value < 0) {
      throw new Error(
        'usage: pnpm bench membership [--nodes N] [--kills N] [--stall-seconds S] [--join-runs N] [--downing MODE]',
      );
    }
    numbers[name] = value;
  }
  return downing === undefined ? { numbers } : { numbers, downing };
}
