// The soak's overlaps judged against the assumption the singleton's guarantee states: no process
// stalls longer than the host lease's pause bound. Each overlap is attributed to the fault window it
// falls in; one during a pause that stalled a process beyond the bound is outside the assumptions
// (reported, expected, no target), every other one — in any other fault or in a quiet period —
// breaks the guarantee (target 0).
import type { InstanceOverlap } from '../../packages/testkit/src/instance-overlaps.js';
import type { FaultWindow } from './soak-schedule.js';

export interface OverlapVerdict extends InstanceOverlap {
  /** The fault window the overlap falls in (the beyond-bound pause when it is one), or undefined: a quiet period. */
  readonly window: FaultWindow | undefined;
  /** It fell in the window of a pause beyond the bound: the guarantee did not apply. */
  readonly beyondPauseBound: boolean;
}

/** The stall a pause window inflicted: the one the bench measured (SIGSTOP to SIGCONT), else the one it planned. */
export function stallOf(window: FaultWindow): number | undefined {
  return window.fault.kind === 'pause' ? (window.stalledMs ?? window.fault.ms) : undefined;
}

/** A pause whose stall exceeded `pauseBoundMs`: outside the stated assumptions. */
export function isBeyondPauseBound(window: FaultWindow, pauseBoundMs: number): boolean {
  const stall = stallOf(window);
  return stall !== undefined && stall > pauseBoundMs;
}

/**
 * Each overlap with the fault window it falls in: one its time span ([the later start, the
 * earlier end]) meets. An overlap that meets a beyond-bound pause's window is judged by that
 * pause, whatever else it meets.
 */
export function judgeOverlaps(
  overlaps: readonly InstanceOverlap[],
  windows: readonly FaultWindow[],
  pauseBoundMs: number,
): OverlapVerdict[] {
  return overlaps.map((overlap) => {
    const from = overlap.b.start;
    const to = from + overlap.overlapMs;
    const during = windows.filter((w) => w.start <= to && from <= w.end);
    const beyond = during.find((w) => isBeyondPauseBound(w, pauseBoundMs));
    return { ...overlap, window: beyond ?? during[0], beyondPauseBound: beyond !== undefined };
  });
}

const iso = (t: number) => new Date(t).toISOString().slice(11, 23);

/** One line per verdict: the two instances, how long both lived, and the fault they fell in. */
export function describeOverlapVerdicts(
  verdicts: readonly OverlapVerdict[],
  describeFault: (window: FaultWindow) => string,
): string {
  if (verdicts.length === 0) return 'no overlaps';
  return verdicts
    .map(
      (v) =>
        `${v.singleton}: ${v.a.node} [${iso(v.a.start)}–${iso(v.a.end)}] and ${v.b.node} [${iso(v.b.start)}–${iso(v.b.end)}] ` +
        `both alive for ${v.overlapMs} ms, ${v.window ? `during ${describeFault(v.window)}` : 'in a quiet period'}`,
    )
    .join('\n');
}
