// The CPU scheduler's side of the console bench's event → screen time (issue 30): how long the
// serving node and Chromium's processes waited for a CPU (run-queue delay, /proc/<pid>/task/<tid>/
// schedstat) and ran while an event travelled to the screen. On a 2-core machine running 50 node
// processes the wall-clock stages alone cannot tell a slow path from a process that was runnable
// and not running; the run delay can, and load does not distort it.
import { readdirSync, readFileSync } from 'node:fs';

interface ThreadTimes {
  readonly comm: string;
  readonly cpuNs: number;
  readonly waitNs: number;
}

/** The threads of `pid` with their time on a CPU and waiting in the run queue so far (ns). */
function threadTimes(pid: number): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out.set(Number(tid), { comm, cpuNs: Number(cpu), waitNs: Number(wait) });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The main thread's time on a CPU and waiting (ns), cheap enough to read every few ms. */
function mainThreadTimes(pid: number): { cpuNs: number; waitNs: number } | undefined {
  try {
    const [cpu, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ');
    return { cpuNs: Number(cpu), waitNs: Number(wait) };
  } catch {
    return undefined;
  }
}

/**
 * Processes descending from `root` whose command starts with `program` (Chromium's browser,
 * renderer, GPU and network processes), each with its kind (`--type`, the utility's sub-type).
 */
export function descendants(root: number, program: RegExp): { pid: number; kind: string }[] {
  const all = new Map<number, number>();
  const parent = new Map<number, number>();
  const kinds = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      all.set(Number(name), ppid);
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (!program.test(cmd.split('\0')[0] ?? '')) continue;
      const type = /--type=([a-z-]+)/.exec(cmd)?.[1];
      const sub = /--utility-sub-type=([A-Za-z.]+)/.exec(cmd)?.[1];
      parent.set(Number(name), ppid);
      kinds.set(Number(name), sub ? `${type}:${sub.split('.')[0]}` : (type ?? 'browser'));
    } catch {
      // gone meanwhile
    }
  }
  const isBelow = (pid: number): boolean => {
    for (let p = all.get(pid), hops = 0; p !== undefined && hops < 16; p = all.get(p), hops++)
      if (p === root) return true;
    return false;
  };
  return [...parent.keys()].filter(isBelow).map((pid) => ({ pid, kind: kinds.get(pid) ?? '?' }));
}

export interface SchedWindow {
  /** Per process kind: ms on a CPU and ms waiting for one over the window, all threads summed. */
  readonly byProcess: Record<string, { cpuMs: number; waitMs: number }>;
  /** The threads that waited longest (kind/thread name): ms waiting, ms running. */
  readonly topWaits: { thread: string; waitMs: number; cpuMs: number }[];
}

/** Takes the per-thread times of `processes` now; `end()` gives what happened since. */
export function schedWindow(processes: readonly { pid: number; kind: string }[]): {
  end: () => SchedWindow;
} {
  const before = new Map(processes.map((p) => [p.pid, threadTimes(p.pid)]));
  return {
    end: () => {
      const byProcess: Record<string, { cpuMs: number; waitMs: number }> = {};
      const threads: { thread: string; waitMs: number; cpuMs: number }[] = [];
      for (const p of processes) {
        const was = before.get(p.pid)!;
        const sum = (byProcess[p.kind] ??= { cpuMs: 0, waitMs: 0 });
        for (const [tid, now] of threadTimes(p.pid)) {
          const then = was.get(tid) ?? { cpuNs: 0, waitNs: 0 };
          const cpuMs = (now.cpuNs - then.cpuNs) / 1e6;
          const waitMs = (now.waitNs - then.waitNs) / 1e6;
          sum.cpuMs += cpuMs;
          sum.waitMs += waitMs;
          if (waitMs >= 1) threads.push({ thread: `${p.kind}/${now.comm}`, waitMs, cpuMs });
        }
      }
      for (const v of Object.values(byProcess)) {
        v.cpuMs = Math.round(v.cpuMs);
        v.waitMs = Math.round(v.waitMs);
      }
      threads.sort((a, b) => b.waitMs - a.waitMs);
      return {
        byProcess,
        topWaits: threads
          .slice(0, 6)
          .map((t) => ({ thread: t.thread, waitMs: Math.round(t.waitMs), cpuMs: Math.round(t.cpuMs) })),
      };
    },
  };
}

/**
 * Samples main threads every `everyMs` (a timer in this process) until stopped: when each was
 * waiting for a CPU, so a stage of the chain can be read against its process's waits.
 */
export function mainThreadTrace(
  pids: Record<string, number>,
  everyMs = 4,
): { stop: () => { at: number; [name: string]: number }[] } {
  const rows: { at: number; [name: string]: number }[] = [];
  const take = () => {
    const row: { at: number; [name: string]: number } = { at: Date.now() };
    for (const [name, pid] of Object.entries(pids)) {
      const t = mainThreadTimes(pid);
      if (t) {
        row[`${name}Cpu`] = t.cpuNs / 1e6;
        row[`${name}Wait`] = t.waitNs / 1e6;
      }
    }
    rows.push(row);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      take();
      return rows;
    },
  };
}

/**
 * Of the trace, between `from` and `to` (Date.now() times): each process's ms on a CPU and ms
 * waiting for one (to the nearest sample).
 */
export function traceBetween(
  rows: readonly { at: number; [name: string]: number }[],
  names: readonly string[],
  from: number,
  to: number,
): Record<string, { cpuMs: number; waitMs: number }> {
  const at = (t: number) => rows.find((r) => r.at >= t) ?? rows.at(-1)!;
  const a = rows.filter((r) => r.at <= from).at(-1) ?? rows[0]!;
  const b = at(to);
  const out: Record<string, { cpuMs: number; waitMs: number }> = {};
  for (const n of names)
    out[n] = {
      cpuMs: Math.round((b[`${n}Cpu`] ?? 0) - (a[`${n}Cpu`] ?? 0)),
      waitMs: Math.round((b[`${n}Wait`] ?? 0) - (a[`${n}Wait`] ?? 0)),
    };
  return out;
}
