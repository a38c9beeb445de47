import type { TurnScheduler } from './clock.js';
import { RingBuffer } from './ring-buffer.js';

/** Something with queued work; the dispatcher calls `runBatch` with a bound and learns if more is left. */
export interface Runnable {
  /** Set by the dispatcher while the runnable sits in its ready queue. */
  scheduled: boolean;
  /** Process at most `max` messages; return how many were processed. */
  runBatch(max: number): number;
  hasWork(): boolean;
}

export interface DispatcherConfig {
  /** Messages one actor processes before the next ready actor gets a turn (fairness). */
  readonly throughput: number;
  /** Messages processed per event-loop turn before yielding to I/O (never starve sockets/timers). */
  readonly maxPerTurn: number;
  /** Wall-time budget per turn in ms; checked between actor batches. */
  readonly maxTurnMs: number;
}

export const defaultDispatcherConfig: DispatcherConfig = { throughput: 64, maxPerTurn: 8192, maxTurnMs: 4 };

/**
 * Round-robin over actors with work. Each turn runs bounded batches and then yields through
 * the scheduler (setImmediate), so a busy actor can neither starve another nor the event loop.
 */
export class Dispatcher {
  private readonly ready = new RingBuffer<Runnable>(64);
  private turnPending = false;
  private readonly runTurn = () => this.turn();

  constructor(
    private readonly scheduler: TurnScheduler,
    private readonly config: DispatcherConfig = defaultDispatcherConfig,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  schedule(runnable: Runnable): void {
    if (runnable.scheduled) return;
    runnable.scheduled = true;
    this.ready.push(runnable);
    if (!this.turnPending) {
      this.turnPending = true;
      this.scheduler.schedule(this.runTurn);
    }
  }

  /** True when no actor has queued work (used by simulations to know the system is quiet). */
  get idle(): boolean {
    return this.ready.length === 0;
  }

  private turn(): void {
    this.turnPending = false;
    const started = performance.now();
    let processed = 0;
    while (processed < this.config.maxPerTurn) {
      const next = this.ready.shift();
      if (!next) break;
      next.scheduled = false;
      try {
        processed += next.runBatch(this.config.throughput);
      } catch (error) {
        this.onError(error);
      }
      if (next.hasWork()) {
        next.scheduled = true;
        this.ready.push(next);
      }
      if (performance.now() - started >= this.config.maxTurnMs) break;
    }
    if (this.ready.length > 0 && !this.turnPending) {
      this.turnPending = true;
      this.scheduler.schedule(this.runTurn);
    }
  }
}
