/**
 * Time as every part of doyen sees it: xstate's clock (timers for `after` delays) plus `now`.
 * xstate's `SimulatedClock` satisfies it, so a whole node runs on simulated time in tests.
 */
export interface Clock {
  setTimeout(fn: (...args: any[]) => void, timeout: number): any;
  clearTimeout(id: any): void;
  now(): number;
}

export const realClock: Clock = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (id) => clearTimeout(id),
  now: () => Date.now(),
};

/** Runs a dispatcher turn later. Real nodes use `setImmediate` so I/O runs between turns. */
export interface TurnScheduler {
  schedule(run: () => void): void;
}

export const immediateScheduler: TurnScheduler = { schedule: (run) => setImmediate(run) };
