import type { Clock } from './clock.js';
import { RingBuffer } from './ring-buffer.js';

/** Something waiting for a deadline; `expire` is called once it passes, unless `settled` by then. */
export interface Expiring {
  readonly settled: boolean;
  expire(): void;
}

interface Entry {
  readonly deadline: number;
  readonly item: Expiring;
}

/**
 * Deadlines of pending asks without a timer per ask. Asks with the same timeout expire in the
 * order they were made, so each distinct timeout keeps a FIFO and one clock timer for its head;
 * a settled ask stays in its FIFO until its deadline passes (or a compaction) and is skipped.
 * Sequential asks thus never arm or cancel a timer: Node re-arms its native timer each time the
 * last timer of a duration is cleared, which is what a per-ask setTimeout/clearTimeout did.
 */
export class AskDeadlines {
  private readonly lanes = new Map<number, { queue: RingBuffer<Entry>; timer: unknown; pending: number }>();

  constructor(private readonly clock: Clock) {}

  add(timeoutMs: number, item: Expiring): void {
    let lane = this.lanes.get(timeoutMs);
    if (!lane) {
      lane = { queue: new RingBuffer<Entry>(16), timer: undefined, pending: 0 };
      this.lanes.set(timeoutMs, lane);
    }
    // Every earlier ask settled (sequential asks): their entries go now, in O(entries) = O(1) here.
    if (lane.pending === 0) lane.queue.clear();
    lane.queue.push({ deadline: this.clock.now() + timeoutMs, item });
    lane.pending++;
    if (lane.timer === undefined) this.arm(timeoutMs, timeoutMs);
    // Many settled entries waiting for their deadlines: drop them now rather than hold the memory.
    else if (lane.queue.length > 1024 && lane.queue.length > 4 * lane.pending) this.compact(timeoutMs);
  }

  /** Tells the deadlines an item settled (it is skipped when its deadline comes). */
  settled(timeoutMs: number): void {
    const lane = this.lanes.get(timeoutMs);
    if (lane) lane.pending--;
  }

  /** Cancels every timer (the system terminated). */
  clear(): void {
    for (const lane of this.lanes.values()) if (lane.timer !== undefined) this.clock.clearTimeout(lane.timer);
    this.lanes.clear();
  }

  private arm(timeoutMs: number, inMs: number): void {
    const lane = this.lanes.get(timeoutMs)!;
    lane.timer = this.clock.setTimeout(() => this.fire(timeoutMs), Math.max(0, inMs));
  }

  private fire(timeoutMs: number): void {
    const lane = this.lanes.get(timeoutMs);
    if (!lane) return;
    lane.timer = undefined;
    const now = this.clock.now();
    for (let head = lane.queue.peek(); head !== undefined && head.deadline <= now; head = lane.queue.peek()) {
      lane.queue.shift();
      if (head.item.settled) continue;
      lane.pending--;
      head.item.expire();
    }
    const next = lane.queue.peek();
    if (next) this.arm(timeoutMs, next.deadline - now);
    else this.lanes.delete(timeoutMs);
  }

  private compact(timeoutMs: number): void {
    const lane = this.lanes.get(timeoutMs)!;
    for (const entry of lane.queue.drain()) if (!entry.item.settled) lane.queue.push(entry);
    lane.pending = lane.queue.length;
  }
}
