// Setup file of the `alone` project (vitest.config.ts): its files share their group with the
// `beside` simulations on two workers, so two of them could be picked at once; this lock, one per
// vitest run, makes each wait until no other `alone` file runs. It is let go after the file's own
// afterAll hooks (this file's run last), or at the worker's exit, or found stale once the worker
// is gone (killed at a timeout).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll } from 'vitest';

/** Set by vitest.config.ts in the vitest process; unset (a run through another config): no lock. */
const LOCK = process.env.DOYEN_ALONE_LOCK;
const POLL_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The lock's holder, or undefined while it is being written (or already gone). */
function holder(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function acquire(path: string): Promise<void> {
  for (;;) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = holder(path);
    // a worker killed without running its exit handler leaves its lock behind
    if (pid !== undefined && !isAlive(pid) && holder(path) === pid) rmSync(path, { force: true });
    await sleep(POLL_MS);
  }
}

function release(path: string): void {
  if (holder(path) === process.pid) rmSync(path, { force: true });
}

if (LOCK) {
  const path = LOCK;
  await acquire(path);
  process.once('exit', () => release(path));
  afterAll(() => release(path));
}
