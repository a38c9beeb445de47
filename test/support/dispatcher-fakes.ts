import { vi } from 'vitest';
import type { TurnScheduler } from '../../packages/core/src/clock.js';
import type { Runnable } from '../../packages/core/src/dispatcher.js';

/** A scheduler that holds the turns it is given until the test runs them (`queued`, in order). */
export class HeldTurns implements TurnScheduler {
  readonly queued: (() => void)[] = [];
  schedule(run: () => void): void {
    this.queued.push(run);
  }
  /** Runs every turn queued so far and those they queue in turn. */
  runAll(): void {
    for (let run = this.queued.shift(); run; run = this.queued.shift()) run();
  }
  runOne(): void {
    this.queued.shift()?.();
  }
}

/** A runnable with `work` messages queued; each batch takes up to `max`, then calls `onBatch`. */
export class QueuedWork implements Runnable {
  scheduled = false;
  work = 0;
  processed = 0;
  constructor(private readonly onBatch: () => void = () => {}) {}
  runBatch(max: number): number {
    const n = Math.min(max, this.work);
    this.work -= n;
    this.processed += n;
    this.onBatch();
    return n;
  }
  hasWork(): boolean {
    return this.work > 0;
  }
}

/**
 * `performance.now` as the dispatcher sees it: time moves only when a test moves it; reads are
 * counted. `install` spies on it (a test file restores the spies after each test).
 */
export class FakeClock {
  ms = 0;
  reads = 0;
  install(): void {
    vi.spyOn(performance, 'now').mockImplementation(() => {
      this.reads++;
      return this.ms;
    });
  }
}
