import type { TurnScheduler } from '@doyen/core';

/**
 * Dispatcher turns run only when the harness says so, in the order they were scheduled: no
 * event loop involved, so one scheduler can drive every node of a simulation deterministically.
 */
export class ManualScheduler implements TurnScheduler {
  private queue: (() => void)[] = [];
  private head = 0;

  schedule(run: () => void): void {
    this.queue.push(run);
  }

  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Runs turns (including ones they schedule) until none is left or `limit` ran; returns how many ran. */
  runAll(limit = 1_000_000): number {
    let n = 0;
    while (this.head < this.queue.length && n < limit) {
      const next = this.queue[this.head]!;
      this.queue[this.head++] = noop;
      n++;
      next();
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    return n;
  }
}

const noop = () => {};
