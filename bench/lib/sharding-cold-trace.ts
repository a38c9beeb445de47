// What the slowest cold asks from another node waited on: each ask split where it crosses the
// processes (the load generator's pacing, out to the entity on its owner, the reply back), where
// in the sequence they came (the first asks of a fresh cluster meet unoptimised code), which
// owner they went to, and the GC pauses and event-loop stalls of every process meanwhile.
import type { ColdTrace } from './sharding-load.js';
import { median, percentile } from './stats.js';

export interface ColdTraceSummary {
  /** p99 of the round trip by quarter of the sequence (the first quarter comes first). */
  readonly p99ByQuarterMs: number[];
  /** Medians over the slowest 1% of asks, and over all asks: the legs in ms. */
  readonly slowest: { late: number; out: number; back: number; count: number };
  readonly all: { late: number; out: number; back: number };
  /** The slowest asks' indices in the sequence (ascending). */
  readonly slowestIndices: number[];
  /** Of the slowest 1%, how many were under way while some process paused for GC, and the pauses. */
  readonly slowestDuringGc: number;
  /** The share of all asks under way during a GC pause: the base rate to set `slowestDuringGc` against. */
  readonly allDuringGcShare: number;
  readonly gcPausesDuring: { proc: string; ms: number }[];
  /** The owners the slowest asks went to (process name: asks). */
  readonly slowestOwners: Record<string, number>;
  /**
   * Event-loop stalls of any process while one of the slowest asks was under way: how many, the
   * longest, and the share of their time the process did not run (waiting for a CPU, not working).
   */
  readonly stallsDuringSlowest: {
    count: number;
    maxMs: number;
    waitingShare: number;
    longest: { proc: string; ms: number; cpuMs: number }[];
  };
}

export interface GcPause {
  readonly proc: string;
  readonly at: number;
  readonly ms: number;
}

/** An event-loop stall of a process and the CPU it used meanwhile (none: it waited for a CPU). */
export interface Stall extends GcPause {
  readonly cpuMs: number;
}

/** What the processes reported beside the asks (see ShardingProcesses). */
export interface ProcessReports {
  readonly gcPauses: readonly GcPause[];
  readonly stalls: readonly Stall[];
  readonly procOfPid: ReadonlyMap<number, string>;
}

const round = (x: number) => Math.round(x * 100) / 100;
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

export function summarizeColdTrace(
  trace: readonly ColdTrace[],
  reports: ProcessReports = { gcPauses: [], stalls: [], procOfPid: new Map() },
): ColdTraceSummary | undefined {
  const { gcPauses, stalls, procOfPid } = reports;
  if (trace.length < 8) return undefined;
  // the round trip as measured (from the actual send): `late` is the pacing's, beside it
  const total = (t: ColdTrace) => t.out + t.back;
  const sorted = [...trace].sort((a, b) => total(b) - total(a));
  const slow = sorted.slice(0, Math.max(1, Math.ceil(trace.length / 100)));
  const legs = (xs: readonly ColdTrace[]) => ({
    late: round(median(xs.map((t) => t.late))),
    out: round(median(xs.map((t) => t.out))),
    back: round(median(xs.map((t) => t.back))),
  });
  const quarter = Math.ceil(trace.length / 4);
  const p99ByQuarterMs = [0, 1, 2, 3].map((q) => {
    const part = trace.slice(q * quarter, (q + 1) * quarter).map(total);
    return part.length ? round(percentile(part, 99)) : Number.NaN;
  });
  const first = trace[0]!.t;
  const end = Math.max(...trace.map((t) => t.t + total(t)));
  const within = <P extends GcPause>(xs: readonly P[]) =>
    xs.filter((g) => g.at + g.ms >= first && g.at <= end);
  const window = within(gcPauses);
  const overlaps = (g: GcPause, t: ColdTrace) => g.at <= t.t + total(t) && g.at + g.ms >= t.t;
  const during = (t: ColdTrace) => window.some((g) => overlaps(g, t));
  const stallsDuring = within(stalls).filter((g) => slow.some((t) => overlaps(g, t)));
  const slowestOwners: Record<string, number> = {};
  for (const t of slow) {
    const owner = procOfPid.get(t.pid) ?? String(t.pid);
    slowestOwners[owner] = (slowestOwners[owner] ?? 0) + 1;
  }
  return {
    p99ByQuarterMs,
    slowest: { ...legs(slow), count: slow.length },
    all: legs(trace),
    slowestIndices: slow.map((t) => t.i).sort((a, b) => a - b),
    slowestDuringGc: slow.filter(during).length,
    allDuringGcShare: round(trace.filter(during).length / trace.length),
    gcPausesDuring: window.map((g) => ({ proc: g.proc, ms: round(g.ms) })),
    slowestOwners,
    stallsDuringSlowest: {
      count: stallsDuring.length,
      maxMs: round(Math.max(0, ...stallsDuring.map((g) => g.ms))),
      // the share of the stalled time spent without this process's CPU: waiting for a core
      // none without stalls (NaN, null in JSON): no probe, or nothing stalled
      waitingShare: round(
        1 - sum(stallsDuring.map((g) => Math.min(g.cpuMs, g.ms))) / sum(stallsDuring.map((g) => g.ms)),
      ),
      longest: [...stallsDuring]
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 5)
        .map((g) => ({ proc: g.proc, ms: round(g.ms), cpuMs: round(g.cpuMs) })),
    },
  };
}
