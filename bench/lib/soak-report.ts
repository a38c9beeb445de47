// What a soak run saw, and the figures it reports beside their targets. The record is filled from the
// nodes' log lines as they arrive (nothing else is kept: an hour of lines would not fit); the figures
// are a pure function of it, so a test can hand them a planted overlap or a hanging ask and see the
// check fail.
import {
  findInstanceOverlaps,
  type InstanceLogLine,
  instanceIntervals,
  type ProcessFate,
  SINGLETON_STARTED_EVENT,
  SINGLETON_STOPPED_EVENT,
} from '../../packages/testkit/src/instance-overlaps.js';
import type { SoakLine } from './soak-nodes.js';
import {
  describeOverlapVerdicts,
  isBeyondPauseBound,
  judgeOverlaps,
  type OverlapVerdict,
  stallOf,
} from './soak-overlaps.js';
import {
  SOAK_ANSWERED_EVENT,
  SOAK_FAILED_EVENT,
  SOAK_MEMORY_EVENT,
  SOAK_SINGLETON,
  SOAK_TALLY_EVENT,
} from './soak-protocol.js';
import { describeFault, type FaultWindow, type SoakFault, touchedSlots } from './soak-schedule.js';

export const SOAK_TARGETS = {
  /** Heap after a GC at the end over its value after warm-up, per process. */
  heapRatio: 1.1,
  /** Overlaps within the stated assumptions (those during a pause beyond the bound have no target). */
  overlaps: 0,
  hangingAsks: 0,
  falseDownings: 0,
} as const;

export interface MemorySample {
  readonly t: number;
  readonly uptimeMs: number;
  readonly heapUsed: number;
  /** Of heapUsed, the compiled code (JIT warm-up, not retained data). */
  readonly codeSpace: number;
  readonly rss: number;
}

/** A tally that found an ask pending past its timeout (outside a pause of its own process). */
export interface HangingAsk {
  readonly proc: string;
  readonly t: number;
  readonly oldestPendingMs: number;
}

export interface Downing {
  readonly t: number;
  /** The process that logged it. */
  readonly by: string;
  /** `host:port` of the member downed. */
  readonly address: string;
  readonly uid: string;
}

/** Everything the figures are computed from. */
export interface SoakRecord {
  readonly singletonLines: InstanceLogLine[];
  readonly fates: ProcessFate[];
  readonly memory: Map<string, MemorySample[]>;
  /** The last tally of each process: `sent` is what it asked in all. */
  readonly lastTally: Map<string, { sent: number; answered: number; failed: number; pending: number }>;
  readonly answered: Map<string, number>;
  /** The highest ask `seq` each process logged an outcome of (asks made after its last tally). */
  readonly lastSeq: Map<string, number>;
  readonly failed: Map<string, number>;
  /** error message → how many asks failed with it (the first MAX_DISTINCT_ERRORS messages). */
  readonly errors: Map<string, number>;
  /** errorKind(message) → how many asks failed with it: every failure, however many incarnations. */
  readonly errorKinds: Map<string, number>;
  readonly hanging: HangingAsk[];
  readonly downings: Downing[];
  readonly faults: FaultWindow[];
  /** Error-level lines (pino level ≥ 50) by event. */
  readonly errorLines: Map<string, number>;
}

export function emptySoakRecord(): SoakRecord {
  return {
    singletonLines: [],
    fates: [],
    memory: new Map(),
    lastTally: new Map(),
    answered: new Map(),
    lastSeq: new Map(),
    failed: new Map(),
    errors: new Map(),
    errorKinds: new Map(),
    hanging: [],
    downings: [],
    faults: [],
    errorLines: new Map(),
  };
}

const bump = (m: Map<string, number>, k: string, by = 1) => m.set(k, (m.get(k) ?? 0) + by);

/** Distinct error messages kept: past this, one more message is counted under "(other)". */
const MAX_DISTINCT_ERRORS = 50;

/**
 * Takes one log line into the record. `askTimeoutMs` and `tallyEveryMs` judge hanging asks: a
 * tally that found an ask pending for longer than its timeout plus `slackMs`, unless the tally
 * came late (its process was paused: every timer is overdue at once when it wakes).
 */
export function recordLine(
  record: SoakRecord,
  { proc, json }: SoakLine,
  judge: { readonly askTimeoutMs: number; readonly tallyEveryMs: number; readonly slackMs: number },
): void {
  const event = json.event;
  const t = typeof json.time === 'number' ? json.time : Date.now();
  if (typeof json.level === 'number' && json.level >= 50)
    bump(record.errorLines, String(event ?? '(no event)'));
  switch (event) {
    case SINGLETON_STARTED_EVENT:
    case SINGLETON_STOPPED_EVENT:
      if (json.singleton === SOAK_SINGLETON) record.singletonLines.push({ node: proc, line: json });
      return;
    case SOAK_ANSWERED_EVENT:
      bump(record.answered, proc);
      noteSeq(record, proc, json.seq);
      return;
    case SOAK_FAILED_EVENT: {
      bump(record.failed, proc);
      noteSeq(record, proc, json.seq);
      const message = typeof json.error === 'string' ? json.error : '(no message)';
      const key =
        record.errors.has(message) || record.errors.size < MAX_DISTINCT_ERRORS ? message : '(other)';
      bump(record.errors, key);
      bump(record.errorKinds, errorKind(message));
      return;
    }
    case SOAK_TALLY_EVENT: {
      const n = (k: string) => (typeof json[k] === 'number' ? (json[k] as number) : 0);
      record.lastTally.set(proc, {
        sent: n('sent'),
        answered: n('answered'),
        failed: n('failed'),
        pending: n('pending'),
      });
      const late = n('gapMs') > judge.tallyEveryMs + judge.slackMs;
      if (!late && n('oldestPendingMs') > judge.askTimeoutMs + judge.slackMs)
        record.hanging.push({ proc, t, oldestPendingMs: n('oldestPendingMs') });
      return;
    }
    case SOAK_MEMORY_EVENT: {
      const series = record.memory.get(proc) ?? [];
      series.push({
        t,
        uptimeMs: Number(json.uptimeMs),
        heapUsed: Number(json.heapUsed),
        codeSpace: Number(json.codeSpace ?? 0),
        rss: Number(json.rss),
      });
      record.memory.set(proc, series);
      return;
    }
    case 'member.downed': {
      const member = json.member as { address?: unknown; uid?: unknown } | undefined;
      if (typeof member?.address !== 'string') return;
      record.downings.push({ t, by: proc, address: member.address, uid: String(member.uid ?? '') });
      return;
    }
  }
}

function noteSeq(record: SoakRecord, proc: string, seq: unknown): void {
  if (typeof seq === 'number') record.lastSeq.set(proc, Math.max(seq, record.lastSeq.get(proc) ?? 0));
}

export interface HeapSeries {
  readonly proc: string;
  readonly witness: boolean;
  readonly start: MemorySample;
  readonly middle: MemorySample;
  readonly end: MemorySample;
  /** heap end / heap at start (after warm-up). */
  readonly heapRatio: number;
  /** The same without compiled code: what the process retains as data. */
  readonly dataRatio: number;
  readonly spanMs: number;
}

/**
 * Each process's heap and RSS at start, middle and end. Its start is its first sample once the
 * run's warm-up is over (`warmedUpAt`, faults included: the code each fault's path compiles is
 * in the baseline) and the process itself has run `processWarmupMs`.
 */
export function heapSeries(
  record: SoakRecord,
  warm: { readonly warmedUpAt: number; readonly processWarmupMs: number },
  witnessSlot: number,
): HeapSeries[] {
  const out: HeapSeries[] = [];
  for (const [proc, samples] of record.memory) {
    const warmed = samples.filter((s) => s.t >= warm.warmedUpAt && s.uptimeMs >= warm.processWarmupMs);
    if (warmed.length < 2) continue;
    const start = warmed[0]!;
    const end = warmed[warmed.length - 1]!;
    const mid = (start.t + end.t) / 2;
    const middle = warmed.reduce((best, s) => (Math.abs(s.t - mid) < Math.abs(best.t - mid) ? s : best));
    out.push({
      proc,
      witness: proc.startsWith(`n${witnessSlot}.`),
      start,
      middle,
      end,
      heapRatio: end.heapUsed / start.heapUsed,
      dataRatio: (end.heapUsed - end.codeSpace) / (start.heapUsed - start.codeSpace),
      spanMs: end.t - start.t,
    });
  }
  return out.sort((a, b) => a.proc.localeCompare(b.proc, 'en', { numeric: true }));
}

export interface DowningVerdict extends Downing {
  /** The fault it is attributed to, or undefined: a false downing. */
  readonly fault: SoakFault | undefined;
}

/**
 * Each member downing (once per member incarnation, the first node to log it) and the fault that
 * explains it: one whose window (plus `graceMs` for detection and the decision) it falls in and
 * that touched the member's slot. A downing in a quiet period, or of a member no fault touched, is
 * a false downing.
 */
export function judgeDownings(
  record: SoakRecord,
  slotOf: (address: string) => number | undefined,
  graceMs: number,
): DowningVerdict[] {
  const seen = new Set<string>();
  const verdicts: DowningVerdict[] = [];
  for (const d of [...record.downings].sort((a, b) => a.t - b.t)) {
    const key = `${d.address}#${d.uid}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const slot = slotOf(d.address);
    const fault = record.faults.find(
      (w) =>
        d.t >= w.start &&
        d.t <= w.end + graceMs &&
        slot !== undefined &&
        touchedSlots(w.fault).includes(slot),
    )?.fault;
    verdicts.push({ ...d, fault });
  }
  return verdicts;
}

export interface AskFigures {
  readonly sent: number;
  readonly answered: number;
  readonly failed: number;
  /** Sent but neither answered nor failed when their process was killed (or the run ended). */
  readonly cutOff: number;
  readonly hanging: number;
  readonly errors: { message: string; count: number }[];
  /** The same with node addresses and incarnations left out: the kinds of failure. */
  readonly errorKinds: { message: string; count: number }[];
}

/** An error message without the `host:port` and `#uid` that make each incarnation's distinct. */
export function errorKind(message: string): string {
  return message.replace(/doyen:\/\/[^@\s]+@[^/\s]+/g, 'doyen://…').replace(/#[0-9a-f]{8,}/g, '');
}

export function askFigures(record: SoakRecord): AskFigures {
  let sent = 0;
  const procs = new Set([...record.lastTally.keys(), ...record.lastSeq.keys()]);
  for (const p of procs) sent += Math.max(record.lastTally.get(p)?.sent ?? 0, record.lastSeq.get(p) ?? 0);
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const answered = sum(record.answered);
  const failed = sum(record.failed);
  return {
    sent,
    answered,
    failed,
    cutOff: Math.max(0, sent - answered - failed),
    hanging: record.hanging.length,
    errors: [...record.errors]
      .map(([message, count]) => ({ message, count }))
      .sort((a, b) => b.count - a.count),
    errorKinds: [...record.errorKinds]
      .map(([message, count]) => ({ message, count }))
      .sort((a, b) => b.count - a.count),
  };
}

export interface SoakFigures {
  readonly heap: HeapSeries[];
  /** The witness's heap ratio (its process spans the whole run), undefined without samples. */
  readonly witnessHeapRatio: number | undefined;
  /** The witness's ratio without compiled code. */
  readonly witnessDataRatio: number | undefined;
  /** The largest heap ratio of the processes that ran at least half the run. */
  readonly maxLongHeapRatio: number | undefined;
  readonly asks: AskFigures;
  /** Every overlap, judged against the pause bound (soak-overlaps.ts). */
  readonly overlapVerdicts: OverlapVerdict[];
  /** Overlaps within the stated assumptions: the guarantee broken (target 0). */
  readonly overlaps: number;
  readonly overlapText: string;
  /** Overlaps during a pause beyond the bound: outside the assumptions, reported, no target. */
  readonly overlapsBeyondPauseBound: number;
  readonly overlapBeyondText: string;
  /** The pauses played: within the bound, beyond it (measured stall), the longest measured stall. */
  readonly pauses: {
    readonly within: number;
    readonly beyond: number;
    readonly maxStalledMs: number | undefined;
  };
  readonly downings: DowningVerdict[];
  readonly falseDownings: number;
  readonly notWhole: number;
}

export function soakFigures(
  record: SoakRecord,
  options: {
    readonly until: number;
    readonly runMs: number;
    readonly warmedUpAt: number;
    readonly processWarmupMs: number;
    readonly witnessSlot: number;
    readonly slotOf: (address: string) => number | undefined;
    readonly downingGraceMs: number;
    /** The nodes' hostLease.pauseBoundMs: overlaps during a longer pause are outside the assumptions. */
    readonly pauseBoundMs: number;
  },
): SoakFigures {
  const heap = heapSeries(record, options, options.witnessSlot);
  const witness = heap.filter((h) => h.witness).sort((a, b) => b.spanMs - a.spanMs)[0];
  const long = heap.filter((h) => h.spanMs >= options.runMs / 2);
  const overlapVerdicts = judgeOverlaps(
    findInstanceOverlaps(instanceIntervals(record.singletonLines, record.fates, options.until)),
    record.faults,
    options.pauseBoundMs,
  );
  const within = overlapVerdicts.filter((v) => !v.beyondPauseBound);
  const beyond = overlapVerdicts.filter((v) => v.beyondPauseBound);
  const pauseWindows = record.faults.filter((w) => w.fault.kind === 'pause');
  const stalls = pauseWindows.map((w) => stallOf(w)!);
  const describeWindow = (w: FaultWindow) =>
    `${describeFault(w.fault)}${w.stalledMs === undefined ? '' : ` (stalled ${w.stalledMs} ms)`}`;
  const downings = judgeDownings(record, options.slotOf, options.downingGraceMs);
  return {
    heap,
    witnessHeapRatio: witness?.heapRatio,
    witnessDataRatio: witness?.dataRatio,
    maxLongHeapRatio: long.length ? Math.max(...long.map((h) => h.heapRatio)) : undefined,
    asks: askFigures(record),
    overlapVerdicts,
    overlaps: within.length,
    overlapText: describeOverlapVerdicts(within, describeWindow),
    overlapsBeyondPauseBound: beyond.length,
    overlapBeyondText: describeOverlapVerdicts(beyond, describeWindow),
    pauses: {
      within: pauseWindows.filter((w) => !isBeyondPauseBound(w, options.pauseBoundMs)).length,
      beyond: pauseWindows.filter((w) => isBeyondPauseBound(w, options.pauseBoundMs)).length,
      maxStalledMs: stalls.length ? Math.max(...stalls) : undefined,
    },
    downings,
    falseDownings: downings.filter((d) => d.fault === undefined).length,
    notWhole: record.faults.filter((f) => !f.whole).length,
  };
}

/**
 * The targets a run missed, one line each (empty: every target met). `heapRatioLimit` is the
 * heap target (a short run may bound it more generously: its warm-up is a larger part of it).
 */
export function missedTargets(
  figures: SoakFigures,
  heapRatioLimit: number = SOAK_TARGETS.heapRatio,
): string[] {
  const missed: string[] = [];
  if (figures.overlaps > SOAK_TARGETS.overlaps)
    missed.push(
      `${figures.overlaps} overlap(s) of the singleton within the stated assumptions:\n${figures.overlapText}`,
    );
  if (figures.asks.hanging > SOAK_TARGETS.hangingAsks)
    missed.push(`${figures.asks.hanging} tally(ies) found an ask left hanging`);
  if (figures.falseDownings > SOAK_TARGETS.falseDownings) {
    const d = figures.downings.filter((x) => x.fault === undefined);
    missed.push(
      `${d.length} false downing(s): ${d.map((x) => `${x.address} at ${new Date(x.t).toISOString().slice(11, 23)} (${x.by})`).join(', ')}`,
    );
  }
  if (figures.witnessHeapRatio === undefined) missed.push('no heap samples of the witness after warm-up');
  else if (figures.witnessHeapRatio > heapRatioLimit)
    missed.push(`witness heap grew ×${figures.witnessHeapRatio.toFixed(3)} (limit ×${heapRatioLimit})`);
  if (figures.asks.answered === 0) missed.push('no ask was answered');
  return missed;
}
