import type { Clock } from '@doyen/core';

interface Timer {
  readonly id: number;
  readonly due: number;
  /** Insertion order: breaks ties between equal due times so runs are reproducible. */
  readonly seq: number;
  readonly fn: (...args: any[]) => void;
  cancelled: boolean;
}

const before = (a: Timer, b: Timer) => a.due < b.due || (a.due === b.due && a.seq < b.seq);

/**
 * Simulated time for a whole cluster: core's `Clock` (and therefore xstate's clock, so
 * `after` delays run on it). Time moves only when the harness says so; timers due at the same
 * time run in the order they were set.
 */
export class VirtualClock implements Clock {
  private current: number;
  private seq = 0;
  /** Binary min-heap on (due, seq); cancelled timers are removed lazily when they surface. */
  private readonly heap: Timer[] = [];
  private readonly live = new Map<number, Timer>();

  constructor(epoch = 0) {
    this.current = epoch;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: (...args: any[]) => void, timeout: number): number {
    const delay = Number.isFinite(timeout) && timeout > 0 ? timeout : 0;
    return this.setTimeoutAt(this.current + delay, fn);
  }

  /**
   * A timer due at an absolute time (never earlier than now). Exact where `now + (t - now)`
   * might round differently in floating point, which matters to keep per-link FIFO order.
   */
  setTimeoutAt(time: number, fn: (...args: any[]) => void): number {
    const seq = ++this.seq;
    const due = Math.max(Number.isNaN(time) ? 0 : time, this.current);
    const timer: Timer = { id: seq, due, seq, fn, cancelled: false };
    this.live.set(timer.id, timer);
    this.push(timer);
    return timer.id;
  }

  clearTimeout(id: any): void {
    const timer = this.live.get(id);
    if (!timer) return;
    timer.cancelled = true;
    this.live.delete(id);
  }

  /** Timers set and neither run nor cleared. */
  get pending(): number {
    return this.live.size;
  }

  /** Due time of the earliest pending timer. */
  nextDue(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.due;
  }

  /**
   * Runs the earliest timer if it is due at or before `limit`, moving `now` to its due time.
   * Returns whether a timer ran.
   */
  runNext(limit = Number.POSITIVE_INFINITY): boolean {
    this.dropCancelled();
    const top = this.heap[0];
    if (!top || top.due > limit) return false;
    this.pop();
    this.live.delete(top.id);
    if (top.due > this.current) this.current = top.due;
    top.fn();
    return true;
  }

  /** Runs every timer due up to `time` (including ones they set), then sets `now` to `time`. */
  advanceTo(time: number): void {
    while (this.runNext(time)) {}
    if (time > this.current) this.current = time;
  }

  advance(ms: number): void {
    this.advanceTo(this.current + ms);
  }

  private dropCancelled(): void {
    while (this.heap[0]?.cancelled) this.pop();
  }

  private push(timer: Timer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(timer, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = timer;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}
