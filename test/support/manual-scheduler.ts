import type { TurnScheduler } from '../../packages/core/src/index.js';

/** Dispatcher turns run only when the test says so: deterministic, no event loop involved. */
export class ManualScheduler implements TurnScheduler {
  private queue: (() => void)[] = [];

  schedule(run: () => void): void {
    this.queue.push(run);
  }

  /** Runs turns until nothing is scheduled; returns how many ran. */
  runAll(limit = 100_000): number {
    let n = 0;
    while (this.queue.length > 0 && n < limit) {
      const next = this.queue.shift()!;
      next();
      n++;
    }
    return n;
  }
}
