// CPU time for the messaging bench's per-message figures: wall-clock rates on a machine shared with other
// work halve whenever another process takes the core, CPU time barely moves.
import { readFileSync } from 'node:fs';

/** CPU consumed so far: `thread` by this (the main) thread, `process` by every thread (GC helpers, compilers). */
export type CpuReading = { threadNs: number; processNs: number };

// Linux reports the calling thread's time on CPU in ns (the first field); elsewhere the process's time stands in.
const SCHEDSTAT = '/proc/thread-self/schedstat';
const hasSchedstat = (() => {
  try {
    readFileSync(SCHEDSTAT, 'utf8');
    return true;
  } catch {
    return false;
  }
})();

export function cpuNow(): CpuReading {
  const { user, system } = process.cpuUsage();
  const processNs = (user + system) * 1_000;
  const threadNs = hasSchedstat ? Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) : processNs;
  return { threadNs, processNs };
}

/** CPU per item (ns) between two readings. */
export function cpuPer(items: number, from: CpuReading, to: CpuReading = cpuNow()): CpuReading {
  return {
    threadNs: (to.threadNs - from.threadNs) / items,
    processNs: (to.processNs - from.processNs) / items,
  };
}
