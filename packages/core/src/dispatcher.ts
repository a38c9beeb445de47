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
  /**
   * When code outside any actor (a request handler, a loop in a script, a socket callback) has
   * queued this many messages for one actor, its send runs one dispatcher turn before returning:
   * a burst is worked off as it arrives instead of piling up (and memory with it), and the
   * producer is slowed to the actors' pace. Sends from actors never do (their turn is running).
   * 0 turns it off; it is off by default when the system is given its own TurnScheduler (tests
   * and simulations then get exactly the turns they run).
   */
  readonly drainBacklogAt: number;
  /**
   * Work queued from outside any turn (a request handler, a socket callback, the continuation of
   * an awaited ask) gets its turn in a microtask, once the sender's task is done, rather than
   * an event-loop iteration later: an ask from outside is answered ~0.5–1 µs sooner. Bounded:
   * such turns run for at most `maxTurnMs` before the event loop gets its iteration (the next
   * turn then waits for the scheduler), so I/O and timers wait no longer than behind one turn.
   * Off when the system is given its own TurnScheduler (its turns are exactly the ones it runs).
   */
  readonly microtaskTurns: boolean;
}

export const defaultDispatcherConfig: DispatcherConfig = {
  throughput: 64,
  maxPerTurn: 8192,
  maxTurnMs: 4,
  // 4096 let a slow actor's backlog (a machine: ~2 µs a message) outlive young-generation
  // collections: 1M tells left the process ~60 MB larger than bare xstate; 512 costs nothing
  // measurable in throughput and keeps the process within ~3 % of it (issue 31).
  drainBacklogAt: 512,
  microtaskTurns: true,
};

/**
 * Round-robin over actors with work. Each turn runs bounded batches and then yields through
 * the scheduler (setImmediate), so a busy actor can neither starve another nor the event loop.
 */
export class Dispatcher {
  private readonly ready = new RingBuffer<Runnable>(64);
  private turnPending = false;
  /**
   * A turn handed to the scheduler has not run yet. A caller-runs drain (`drainNow`) works the
   * ready queue off before it runs, and the next sends would queue one more, one per drain: a
   * burst of a million tells left thousands of setImmediate handles alive until the sender's loop
   * returned, and young-generation collections copied and promoted them (issue 31). The one
   * already queued runs whatever is ready when it comes.
   */
  private schedulerTurnPending = false;
  private inTurn = false;
  private readonly runTurn = () => this.turn();
  private readonly runSchedulerTurn = () => {
    this.schedulerTurnPending = false;
    this.turn();
  };
  /** Microtask turns are allowed until `microtaskWindowEnds`, while a window is open. */
  private microtaskWindowOpen = false;
  private microtaskWindowEnds = 0;
  /** Runs once the event loop has come round: the next microtask turn opens a new window. */
  private readonly closeMicrotaskWindow = () => {
    this.microtaskWindowOpen = false;
  };

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
      if (!this.inTurn && this.config.microtaskTurns && this.microtaskTurnAllowed())
        queueMicrotask(this.runTurn);
      else this.scheduleTurn();
    }
  }

  /** Hands a turn to the scheduler unless one it was given has not run yet. */
  private scheduleTurn(): void {
    if (this.schedulerTurnPending) return;
    this.schedulerTurnPending = true;
    this.scheduler.schedule(this.runSchedulerTurn);
  }

  /** Whether the current window (see `microtaskTurns`) still has time; opens one if none is open. */
  private microtaskTurnAllowed(): boolean {
    if (this.microtaskWindowOpen) return performance.now() < this.microtaskWindowEnds;
    this.microtaskWindowOpen = true;
    this.microtaskWindowEnds = performance.now() + this.config.maxTurnMs;
    setImmediate(this.closeMicrotaskWindow);
    return true;
  }

  /** True when no actor has queued work (used by simulations to know the system is quiet). */
  get idle(): boolean {
    return this.ready.length === 0;
  }

  /** Runs a turn now, on the caller's stack, unless one is running (the caller is an actor). */
  drainNow(): void {
    if (!this.inTurn) this.turn();
  }

  private turn(): void {
    this.inTurn = true;
    try {
      this.processReady();
    } finally {
      this.inTurn = false;
    }
  }

  private processReady(): void {
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
      this.scheduleTurn();
    }
  }
}
