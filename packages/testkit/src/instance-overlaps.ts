/**
 * The overlap checker: from what nodes logged and what the harness saw happen to their
 * processes, every two instances of one singleton that were alive at the same instant. It
 * trusts nothing but the logs (on one machine's clock): an instance is alive from its node's
 * `singleton.started` line to its `singleton.stopped` line, or to its process's death (kill -9,
 * exit) when it never logged a stop, or to `until` when it still runs. Tests, benches and the
 * soak run share it, so "0 overlaps" means the same thing everywhere.
 */

/** The manager's start line (packages/singleton/src/manager-decisions.ts `start`). */
export const SINGLETON_STARTED_EVENT = 'singleton.started';
/** Logged once the instance has been stopped (packages/singleton/src/cluster-singletons.ts). */
export const SINGLETON_STOPPED_EVENT = 'singleton.stopped';

/** One parsed pino JSON line (`time` in ms since the epoch) of the process the harness calls `node`. */
export interface InstanceLogLine {
  readonly node: string;
  readonly line: Record<string, unknown>;
}

/** What the harness did to or saw of a node's process: killed -9 at `t`, or exited at `t` (ms epoch). */
export interface ProcessFate {
  readonly node: string;
  readonly kind: 'killed' | 'exited';
  readonly t: number;
}

/** One instance of `singleton` on `node`, alive from `start` to `end` (ms epoch). */
export interface InstanceInterval {
  node: string;
  singleton: string;
  start: number;
  end: number;
}

/** Two instances of one singleton alive at once, for `overlapMs`. */
export interface InstanceOverlap {
  singleton: string;
  a: InstanceInterval;
  b: InstanceInterval;
  overlapMs: number;
}

type Happening =
  | {
      readonly kind: 'started' | 'stopped';
      readonly node: string;
      readonly singleton: string;
      readonly t: number;
    }
  | { readonly kind: 'died'; readonly node: string; readonly t: number };

// Log lines before process fates at the same ms: a process logs nothing after its death.
const order = { started: 0, stopped: 0, died: 1 } as const;

function happeningOf({ node, line }: InstanceLogLine): Happening | undefined {
  const { event, singleton, time } = line;
  if (event !== SINGLETON_STARTED_EVENT && event !== SINGLETON_STOPPED_EVENT) return undefined;
  // a line without a usable time or name cannot be placed: skipping it is safer than guessing
  if (typeof singleton !== 'string' || typeof time !== 'number' || !Number.isFinite(time)) return undefined;
  return { kind: event === SINGLETON_STARTED_EVENT ? 'started' : 'stopped', node, singleton, t: time };
}

/**
 * Every instance interval the lines and fates describe, in start order (then node, singleton). A process's death ends
 * every instance it still ran; a stop line ends the earliest open instance of that singleton on
 * that node (a second start without a stop is kept as a second instance, so it shows as an overlap).
 */
export function instanceIntervals(
  lines: Iterable<InstanceLogLine>,
  fates: Iterable<ProcessFate>,
  until: number,
): InstanceInterval[] {
  const happenings: Happening[] = [];
  for (const l of lines) {
    const h = happeningOf(l);
    if (h) happenings.push(h);
  }
  for (const f of fates) happenings.push({ kind: 'died', node: f.node, t: f.t });
  // stable sort: lines of one node keep their logged order within a millisecond
  happenings.sort((x, y) => x.t - y.t || order[x.kind] - order[y.kind]);

  const open = new Map<string, InstanceInterval[]>(); // node → its running instances, oldest first
  const done: InstanceInterval[] = [];
  for (const h of happenings) {
    const running = open.get(h.node) ?? [];
    if (h.kind === 'started') {
      running.push({ node: h.node, singleton: h.singleton, start: h.t, end: until });
      open.set(h.node, running);
    } else if (h.kind === 'stopped') {
      const i = running.findIndex((r) => r.singleton === h.singleton);
      if (i >= 0) done.push({ ...running.splice(i, 1)[0]!, end: h.t });
    } else {
      for (const r of running) done.push({ ...r, end: h.t });
      open.delete(h.node);
    }
  }
  for (const running of open.values())
    done.push(...running.map((r) => ({ ...r, end: Math.max(r.start, until) })));
  return done.sort(
    (x, y) => x.start - y.start || x.node.localeCompare(y.node) || x.singleton.localeCompare(y.singleton),
  );
}

/**
 * Every pair of instances of one singleton that were alive at the same instant for a positive
 * time. Intervals that only touch (one ends the ms the other starts) do not overlap: a stop
 * logged at t and a start logged at t are in order on one clock.
 */
export function findInstanceOverlaps(intervals: readonly InstanceInterval[]): InstanceOverlap[] {
  const sorted = [...intervals].sort((x, y) => x.start - y.start);
  const overlaps: InstanceOverlap[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    for (let j = i + 1; j < sorted.length; j++) {
      const b = sorted[j]!;
      if (b.start >= a.end) break; // sorted by start: no later one can overlap `a`
      if (b.singleton !== a.singleton) continue;
      const overlapMs = Math.min(a.end, b.end) - b.start;
      if (overlapMs > 0) overlaps.push({ singleton: a.singleton, a, b, overlapMs });
    }
  }
  return overlaps;
}

const iso = (t: number) => new Date(t).toISOString().slice(11, 23);

/** One line per overlap, for an assertion message; "no overlaps" when there are none. */
export function describeOverlaps(overlaps: readonly InstanceOverlap[]): string {
  if (overlaps.length === 0) return 'no overlaps';
  return overlaps
    .map(
      ({ singleton, a, b, overlapMs }) =>
        `${singleton}: ${a.node} [${iso(a.start)}–${iso(a.end)}] and ${b.node} [${iso(b.start)}–${iso(b.end)}] ` +
        `both alive for ${overlapMs} ms`,
    )
    .join('\n');
}
