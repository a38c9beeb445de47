import { RingBuffer } from '@doyen/core';

/** One slice in this many goes to connections that are not members' (see `turn`). */
export const OTHERS_EVERY = 4;
/** Inline turns may take one budget per this many budgets of wall time (see `inlineAllowed`). */
export const INLINE_WINDOW_TURNS = 4;

/** Inbound work of one connection, done a slice at a time. */
export interface DecodeTask {
  /** True while the task sits in the scheduler's queue (the scheduler's bookkeeping). */
  queued: boolean;
  /** True while a decoded frame is only partly delivered. */
  readonly midFrame: boolean;
  /** Does one slice (a frame, or part of a large one) and returns true while work remains. */
  runSlice(deadline: number): boolean;
}

/**
 * One decode budget for all inbound connections of a node. Each connection used to get its own
 * budget per turn, so 16 flooding connections held the event loop 16 budgets at a time (and a
 * 1 MiB frame was one undivided piece): 511–593 ms stalls, heartbeats late, members falsely
 * unreachable. Here connections with work take turns round-robin, a slice each (a quarter of
 * the budget, or one frame's decoding), until the turn's budget is spent; the next turn is a
 * setImmediate, so timers and I/O run in between. Connections of current members go first:
 * their heartbeats do not wait behind every other connection's backlog; yet one slice in
 * OTHERS_EVERY is the others', so a flood from members cannot starve a joiner either. Then a frame already
 * decoded is finished before another is decoded, so at most a frame or two are held decoded at
 * once (round-robin over 40 half-delivered 1 MiB frames held ~100 MB of live messages, and the
 * collector's pauses were the stalls).
 */
export class InboundScheduler<T extends DecodeTask = DecodeTask> {
  private readonly members = new RingBuffer<T>(16);
  private readonly midFrame = new RingBuffer<T>(16);
  private readonly others = new RingBuffer<T>(16);
  private readonly sliceMs: number;
  private scheduled = false;
  /** A turn is running (a slice's delivery woke a task: it queues, never nests a turn). */
  private inTurn = false;
  private closed = false;
  /** Inline turns (see `inlineAllowed`): the current window's end, its inline time, the last start. */
  private inlineWindowEnds = Number.NEGATIVE_INFINITY;
  private inlineSpentMs = 0;
  private inlineStarted = 0;

  constructor(
    private readonly budgetMs: number,
    /** Whether a task is served before the others (its connection is a current member's). */
    private readonly first: (task: T) => boolean = () => false,
    /** One slice in this many is the others' (Infinity: strict member priority, for tests). */
    private readonly othersEvery: number = OTHERS_EVERY,
    /**
     * Time inline turns may take per window (see `inlineAllowed`): the turn's budget by default; 0
     * turns them off (every frame waits for a setImmediate), Infinity lifts the bound (tests).
     */
    private readonly inlineBudgetMs: number = budgetMs,
  ) {
    this.sliceMs = budgetMs / 4;
  }

  /** A task has work: it joins the back of its queue (once). */
  wake(task: T): void {
    if (task.queued || this.closed) return;
    task.queued = true;
    (this.first(task) ? this.members : task.midFrame ? this.midFrame : this.others).push(task);
    if (this.scheduled || this.inTurn) return;
    if (this.waiting === 1 && this.inlineAllowed()) {
      this.inlineTurn();
      return;
    }
    this.scheduled = true;
    setImmediate(this.turn);
  }

  /**
   * A frame that finds nothing else waiting is decoded in the socket callback that brought it,
   * not a setImmediate later: at a steady 1k asks/s each ask is a wake-up of its own, and the hop
   * was one more trip through Node's immediate queue per ask, on code gone cold since the last
   * one (issue 29: the owner's CPU per ask was paid per wake-up). Bounded like the turns: inline
   * turns may take `inlineBudgetMs` of each window of INLINE_WINDOW_TURNS budgets of wall time; past
   * that, frames wait for the scheduled turn as before, so a flood still gets one budget per
   * event-loop iteration, and the members-first order holds (inline only with nothing queued).
   */
  private inlineAllowed(): boolean {
    if (this.inlineBudgetMs <= 0) return false;
    const now = performance.now();
    if (now >= this.inlineWindowEnds) {
      this.inlineWindowEnds = now + this.budgetMs * INLINE_WINDOW_TURNS;
      this.inlineSpentMs = 0;
      this.inlineStarted = now;
      return true;
    }
    this.inlineStarted = now;
    return this.inlineSpentMs < this.inlineBudgetMs;
  }

  private inlineTurn(): void {
    this.inTurn = true;
    try {
      this.runTurn(this.inlineStarted);
    } finally {
      this.inTurn = false;
      this.inlineSpentMs += performance.now() - this.inlineStarted;
    }
  }

  /** Tasks waiting for a turn (for tests). */
  get waiting(): number {
    return this.members.length + this.midFrame.length + this.others.length;
  }

  close(): void {
    this.closed = true;
    for (const queue of [this.members, this.midFrame, this.others])
      for (const task of queue.drain()) task.queued = false;
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    this.inTurn = true;
    try {
      this.runTurn(performance.now());
    } finally {
      this.inTurn = false;
    }
  };

  /** Slices round-robin until the budget from `started` is spent; what is left gets a scheduled turn. */
  private runTurn(started: number): void {
    const turnEnds = started + this.budgetMs;
    for (let slice = 0; ; slice++) {
      // Members first, but never only: every OTHERS_EVERY-th slice (the turn's first included)
      // goes to the other connections. Strict priority starved them while 50 members always had
      // heartbeats queued: a joiner's frames waited out the 3 s handshake deadline (291
      // handshake timeouts in a 50-node rolling start, 0 before the scheduler), and the joins
      // and reconnections that followed tripled the start's convergence.
      const task =
        Number.isFinite(this.othersEvery) && slice % this.othersEvery === 0
          ? (this.midFrame.shift() ?? this.others.shift() ?? this.members.shift())
          : (this.members.shift() ?? this.midFrame.shift() ?? this.others.shift());
      if (task === undefined) break;
      task.queued = false;
      const more = task.runSlice(Math.min(turnEnds, performance.now() + this.sliceMs));
      if (more) this.wake(task);
      if (performance.now() >= turnEnds) break;
    }
    if (this.waiting > 0 && !this.closed && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  }
}
