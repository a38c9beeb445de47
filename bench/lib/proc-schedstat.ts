// CPU and run-queue wait of processes on this machine, from Linux's /proc/<pid>/task/<tid>/schedstat
// (ns on a CPU, ns runnable but waiting for one, per thread): load on a shared machine does not
// distort the CPU a piece of work took, and the wait says how long it stood ready without a core.
import { readdirSync, readFileSync } from 'node:fs';

export interface SchedTimes {
  /** ns on a CPU, all threads (the JS thread, GC and libuv helpers). */
  readonly cpuNs: number;
  /** ns on a CPU, the main (JS) thread alone. */
  readonly mainCpuNs: number;
  /** ns the main thread was runnable but waited for a CPU. */
  readonly mainWaitNs: number;
  /** ns in the kernel, all threads (/proc/<pid>/stat's stime: clock ticks, 10 ms apart). */
  readonly systemNs: number;
}

const ZERO: SchedTimes = { cpuNs: 0, mainCpuNs: 0, mainWaitNs: 0, systemNs: 0 };
/** USER_HZ: /proc's clock ticks per second (100 on Linux everywhere). */
const TICK_NS = 1e7;

/** The process's times now, or zeros when it is gone (or /proc has no schedstat). */
export function schedTimes(pid: number): SchedTimes {
  try {
    let cpuNs = 0;
    let main: number[] = [0, 0];
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      cpuNs += fields[0] ?? 0;
      if (tid === String(pid)) main = fields;
    }
    // the fields after the parenthesised name: state is the 3rd field of /proc/<pid>/stat, stime the 15th
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const stime = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]);
    return { cpuNs, mainCpuNs: main[0] ?? 0, mainWaitNs: main[1] ?? 0, systemNs: stime * TICK_NS };
  } catch {
    return ZERO;
  }
}

/**
 * Per group of processes: CPU µs (all threads), main thread CPU µs and run-queue wait µs, and the
 * CPU's kernel part (10 ms ticks: coarse over a short phase), per `per`.
 */
export type GroupTimes = Record<
  string,
  { cpuUs: number; mainCpuUs: number; mainWaitUs: number; systemUs: number }
>;

/**
 * Runs `work` and returns its result with each group's times over it, divided by `per` (e.g. per
 * ask); `groups` maps a name to the pids it sums.
 */
export async function timedByGroup<T>(
  groups: Readonly<Record<string, readonly number[]>>,
  per: number,
  work: () => Promise<T>,
): Promise<{ result: T; times: GroupTimes }> {
  const snap = () =>
    Object.fromEntries(Object.entries(groups).map(([name, pids]) => [name, pids.map(schedTimes)]));
  const before = snap();
  const result = await work();
  const after = snap();
  const round = (ns: number) => Math.round(ns / per / 10) / 100;
  const times: GroupTimes = {};
  for (const name of Object.keys(groups)) {
    const delta = (pick: (t: SchedTimes) => number) =>
      after[name]!.reduce((sum, t, k) => sum + pick(t) - pick(before[name]![k]!), 0);
    times[name] = {
      cpuUs: round(delta((t) => t.cpuNs)),
      mainCpuUs: round(delta((t) => t.mainCpuNs)),
      mainWaitUs: round(delta((t) => t.mainWaitNs)),
      systemUs: round(delta((t) => t.systemNs)),
    };
  }
  return { result, times };
}
