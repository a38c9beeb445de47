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

/** A runnable that can also take one message straight from a caller (see `Dispatcher.runInCaller`). */
export interface CallerRunnable<M> extends Runnable {
  /** Processes `message` now if nothing of its own waits; false when it must be queued instead. */
  runOne(message: M): boolean;
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
   * producer is slowed to the actors' pace. For the rest of the sender's task its next sends to
   * that actor are processed before they return, while nothing else waits (`runInCaller`). Sends
   * from actors never do (their turn is running). 0 turns it off; it is off by default when the
   * system is given its own TurnScheduler (tests and simulations then get exactly the turns they run).
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
  // Queued messages that live through a young-generation collection are copied by it, on helper
  // threads too: at 4096, 1M machine tells left the process ~60 MB larger than bare xstate; at 512
  // alone the survivors (~2-3 MB per 300k tells against bare xstate's 0.3) still cost ~5 % of all
  // threads' CPU. With the rest of a burst run in its caller once it reached the depth
  // (`runInCaller`), only the first backlog is ever queued. 32 measured as well on a local burst
  // but not in a cluster: the wire's receive loop is a sender from outside any actor too, and a
  // frame of 32 reachability reports for one actor then ran it inside the socket callback; at 50
  // nodes on 2 cores a cut's report storm delayed handshakes past the per-IP cap and two live
  // members were downed with the cut-off side (two runs of two; none at 512).
  drainBacklogAt: 512,
  microtaskTurns: true,
};

/**
 * A turn reads the clock for its time budget once per this many batches or messages, whichever
 * comes first, not after every batch: when many actors hold one message each (a wire batch to
 * 1,000 distinct actors or entities) a read per batch was a read per message, ~20 ns of the
 * ~60 ns such a message costs over one to a single actor (issue 29). Unread stretches hold fewer
 * than this many messages, so a turn overruns its budget by at most that many messages more than
 * it did (a batch of up to `throughput` after the last read, as before).
 */
const CLOCK_EVERY = 8;

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
    // the event loop has come round: the next work from outside may open a window again
    this.microtaskWindowOpen = false;
    this.turn();
  };
  /** Microtask turns are allowed until `microtaskWindowEnds`, while a window is open. */
  private microtaskWindowOpen = false;
  private microtaskWindowEnds = 0;
  /**
   * The open window's time is known to be up: until the event loop comes round, no need to read
   * the clock again. A tight loop of sends from outside drains every few messages (`drainBacklogAt`),
   * and each drain's next send asked the clock once more (issue 31: the drain's cost per message).
   */
  private microtaskWindowSpent = false;

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

  /**
   * The runnable a burst from outside any turn is being worked off for: a tight loop of sends
   * reached `drainBacklogAt` and its send ran a turn (`drainBurst`). Until the sender's task ends
   * (a microtask clears it), its next sends hand each message to the runnable at once rather than
   * queueing it: queued, the messages outlived young-generation collections and the queue's chunk
   * (an old object pointing at young ones) cost every collection more (issue 31: ~5 % of a machine
   * actor's CPU on all threads). The sender is already waiting on the actor's work, as in any drain.
   */
  private burst: Runnable | undefined;
  private readonly endBurst = () => {
    this.burst = undefined;
  };

  /**
   * Whether the current window (see `microtaskTurns`) still has time; opens one if none is open.
   * A window ends `maxTurnMs` after it opened. Work that comes in the `maxTurnMs` after that spends
   * it: turns then go to the scheduler until one of its turns ran (the event loop came round).
   * Work that comes later opens a new window at once: no microtask turn was allowed in between,
   * so microtask turns hold I/O and timers at most `maxTurnMs` at a time and half of any longer
   * stretch. Closing each window with a setImmediate, as before, cost one more immediate (and
   * one more epoll_wait) per wake-up at a steady low rate of asks, where every ask is a wake-up
   * of its own (issue 29).
   */
  private microtaskTurnAllowed(): boolean {
    if (this.microtaskWindowOpen && this.microtaskWindowSpent) return false;
    const now = performance.now();
    if (this.microtaskWindowOpen) {
      if (now < this.microtaskWindowEnds) return true;
      if (now < this.microtaskWindowEnds + this.config.maxTurnMs) {
        this.microtaskWindowSpent = true;
        return false;
      }
    }
    this.microtaskWindowOpen = true;
    this.microtaskWindowSpent = false;
    this.microtaskWindowEnds = now + this.config.maxTurnMs;
    return true;
  }

  /** True when no actor has queued work (used by simulations to know the system is quiet). */
  get idle(): boolean {
    return this.ready.length === 0;
  }

  /**
   * A send from outside any turn found `runnable`'s backlog at `drainBacklogAt`: runs a turn now
   * (`drainNow`) and, for the rest of the sender's task, lets the next sends to `runnable` run in
   * the caller (`runInCaller`).
   */
  drainBurst(runnable: Runnable): void {
    if (this.inTurn) return;
    if (this.burst === undefined) queueMicrotask(this.endBurst);
    this.burst = runnable;
    this.turn(false);
  }

  /** Whether sends to `runnable` run in the caller: a burst is being worked off for it. */
  inBurst(runnable: Runnable): boolean {
    return this.burst === runnable;
  }

  /**
   * Hands `message` to `runnable` on the caller's stack, as a turn of its own, when `runnable` is the
   * one a burst is being worked off for, no turn is running (the caller is no actor) and no other
   * actor waits (fairness: they have their turn first). False when the message must be queued: so
   * once the runnable makes an actor ready (it sent to itself or to another), the next sends queue
   * and drain as before until that work is done, which drains a pipeline's next stage with the
   * burst and never lets a message overtake a queued one.
   */
  runInCaller<M>(runnable: CallerRunnable<M>, message: M): boolean {
    if (this.inTurn || this.ready.length > 0) return false;
    this.inTurn = true;
    let taken = true;
    try {
      taken = runnable.runOne(message);
    } catch (error) {
      this.onError(error);
    } finally {
      this.inTurn = false;
    }
    return taken;
  }

  /**
   * Runs a turn now, on the caller's stack, unless one is running (the caller is an actor). Its
   * time budget counts from its second batch: a drain that takes one actor's backlog in one batch,
   * nearly every drain of a burst, never reads the clock (~100 ns a drain, issue 31); one that goes
   * on to other actors is bounded as any turn is, give or take that first batch.
   */
  drainNow(): void {
    if (!this.inTurn) this.turn(false);
  }

  private turn(clockFromStart = true): void {
    this.inTurn = true;
    try {
      this.processReady(clockFromStart);
    } finally {
      this.inTurn = false;
    }
  }

  private processReady(clockFromStart: boolean): void {
    this.turnPending = false;
    let started = clockFromStart ? performance.now() : -1;
    let processed = 0;
    // batches run and messages processed since the clock was last read (see CLOCK_EVERY)
    let batchesUnread = 0;
    let processedAtRead = 0;
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
      // nothing left to run: the turn ends without reading the clock
      if (this.ready.length === 0) break;
      if (started >= 0 && ++batchesUnread < CLOCK_EVERY && processed - processedAtRead < CLOCK_EVERY)
        continue;
      batchesUnread = 0;
      processedAtRead = processed;
      const now = performance.now();
      if (started < 0) started = now;
      else if (now - started >= this.config.maxTurnMs) break;
    }
    if (this.ready.length > 0 && !this.turnPending) {
      this.turnPending = true;
      this.scheduleTurn();
    }
  }
}
