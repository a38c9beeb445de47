// Setup file of the `beside` project (vitest.config.ts): deterministic simulations that run beside
// the other files (in `pnpm test`, in a vitest run of their own for the whole suite; in a plain
// `vitest run`, on the second worker while an `alone` file runs on the first). At the lowest
// priority (nice 19, about 1.5 % of a core against a process at the default priority) they take
// only the CPU the other files' processes leave idle, so an `alone` file's wall-clock bounds see
// (almost) an idle core as before.
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

const LOWEST = 19;

/**
 * Linux keeps a nice value per thread: every thread of this worker (V8's compiler and GC helpers
 * were started before this file) is lowered; threads started later inherit it from the main one.
 */
function threadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number);
  } catch {
    return [0];
  }
}

for (const tid of threadIds()) {
  try {
    setPriority(tid, LOWEST);
  } catch {
    // a thread that ended meanwhile; or a platform without per-thread priorities
  }
}
