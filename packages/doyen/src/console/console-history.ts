import { jsonLength } from './json-length.js';
import type { ConsoleHistory, HistoryFrame } from './node-view.js';

/** Defaults of `console.historyMs` and `console.historyBytes`. */
export const DEFAULT_HISTORY_MS = 10 * 60 * 1000;
export const DEFAULT_HISTORY_BYTES = 16 * 1024 * 1024;

interface Kept {
  readonly frame: HistoryFrame;
  readonly bytes: number;
}

/**
 * The recent past of the cluster as the serving node saw it: every view and event, in arrival
 * order, bounded by age (`maxAgeMs`) and by size (`maxBytes`, frames measured as their JSON).
 * A view falling out of the window is kept as its node's base (the state the replay starts
 * from) until a newer one replaces it or the node is forgotten, so the oldest instant of the
 * window still shows every member; bases count towards the size cap too.
 */
export class HistoryBuffer {
  private frames: Kept[] = [];
  private head = 0;
  private readonly bases = new Map<string, Kept>();
  private total = 0;
  private start: number;

  constructor(
    readonly maxAgeMs: number,
    readonly maxBytes: number,
    private readonly now: () => number = Date.now,
  ) {
    this.start = now();
  }

  /** Bytes kept (frames and bases). */
  get bytes(): number {
    return this.total;
  }

  /** Frames kept (bases not counted). */
  get size(): number {
    return this.frames.length - this.head;
  }

  /** The oldest instant the history can show. */
  get from(): number {
    return this.start;
  }

  add(frame: HistoryFrame): void {
    const bytes = jsonLength(frame);
    this.frames.push({ frame, bytes });
    this.total += bytes;
    this.trim();
  }

  /** A node left: its base view goes (its frames age out with the rest). */
  forget(key: string): void {
    const base = this.bases.get(key);
    if (!base) return;
    this.bases.delete(key);
    this.total -= base.bytes;
  }

  /** Drops what is too old or over the size cap, oldest first. */
  trim(): void {
    const oldest = this.now() - this.maxAgeMs;
    while (this.head < this.frames.length) {
      const first = this.frames[this.head]!;
      if (first.frame.at >= oldest && this.total <= this.maxBytes) break;
      this.head++;
      this.total -= first.bytes;
      this.start = Math.max(this.start, first.frame.at);
      if (first.frame.kind === 'view') {
        const key = first.frame.view.key;
        const replaced = this.bases.get(key);
        if (replaced) this.total -= replaced.bytes;
        this.bases.set(key, first);
        this.total += first.bytes;
      }
    }
    // over the size cap with bases only: the oldest bases go too
    for (const [key, base] of this.bases) {
      if (this.total <= this.maxBytes) break;
      this.bases.delete(key);
      this.total -= base.bytes;
    }
    if (this.head > 1024 && this.head * 2 > this.frames.length) {
      this.frames = this.frames.slice(this.head);
      this.head = 0;
    }
  }

  /** The export: bases first (as of `from`), then every frame kept, in order. */
  export(): ConsoleHistory {
    this.trim();
    const from = this.start;
    const frames: HistoryFrame[] = [];
    for (const base of this.bases.values()) {
      if (base.frame.kind === 'view') frames.push({ at: from, kind: 'view', view: base.frame.view });
    }
    for (let i = this.head; i < this.frames.length; i++) frames.push(this.frames[i]!.frame);
    return { from, to: this.now(), frames };
  }
}
