import { CONSOLE_CAPS, type ConsoleUpdate, type WireEvent, type WireView } from './console-messages.js';
import { diffView, type ViewDelta } from './view-delta.js';

/** Events kept for subscribers that come later or lag (a ring: the oldest go first). */
export const PUBLISHED_EVENTS_KEPT = 512;
/** Longest subscription a serving node may ask for; it renews well before. */
export const MAX_SUBSCRIPTION_MS = 30_000;

interface Subscriber {
  expiresAt: number;
  /** Sequence of the last event sent to it. */
  sentUpTo: number;
  /** The view version it holds (undefined: send the whole view). */
  has: number | undefined;
}

/**
 * The member side of the console: who subscribed to this node's view and events, until when,
 * and what each was sent. `flush` builds at most one view and hands each subscriber an update
 * with what changed in the view since the version it holds (the whole view to a new one or one
 * that asked for it) and the events it has not had (at most one update's worth; `flush`
 * reports whether more are waiting). The change is worked out once per flush, for everyone.
 */
export class ConsolePublisher {
  private readonly subscribers = new Map<string, Subscriber>();
  private readonly events: { seq: number; event: WireEvent }[] = [];
  private seq = 0;
  /** The last view made, its version, and the change that made it from the one before. */
  private last: { view: WireView; version: number; delta: ViewDelta | undefined } | undefined;

  constructor(
    private readonly self: () => string,
    private readonly view: () => WireView,
    private readonly send: (to: string, update: ConsoleUpdate) => void,
    private readonly now: () => number = Date.now,
  ) {}

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * Starts or renews `from`'s subscription (a new one gets the whole view and the events kept;
   * `full`: the whole view again, for a subscriber that lost track of the versions).
   */
  subscribe(from: string, leaseMs: number, full = false): void {
    const expiresAt = this.now() + Math.min(leaseMs, MAX_SUBSCRIPTION_MS);
    const existing = this.subscribers.get(from);
    if (existing) {
      existing.expiresAt = expiresAt;
      if (full) existing.has = undefined;
    } else this.subscribers.set(from, { expiresAt, sentUpTo: this.firstSeq() - 1, has: undefined });
  }

  /** A subscriber left the membership (or this node restarted): nothing more goes to it. */
  drop(key: string): void {
    this.subscribers.delete(key);
  }

  /** Keeps only the subscribers `isMember` knows. */
  retain(isMember: (key: string) => boolean): void {
    for (const key of this.subscribers.keys()) if (!isMember(key)) this.subscribers.delete(key);
  }

  record(event: WireEvent): void {
    this.events.push({ seq: ++this.seq, event });
    if (this.events.length > PUBLISHED_EVENTS_KEPT) this.events.shift();
  }

  /**
   * Sends each subscriber what it lacks; with `liveness` also an empty update to those that lack
   * nothing (the serving node marks a member stale when it hears nothing). Returns true when
   * events are still waiting (more than one update's worth).
   */
  flush(liveness: boolean): boolean {
    const now = this.now();
    for (const [key, s] of this.subscribers) if (s.expiresAt <= now) this.subscribers.delete(key);
    if (this.subscribers.size === 0) return false;
    const { view, version, delta } = this.advance();
    let more = false;
    const from = this.self();
    for (const [key, s] of this.subscribers) {
      const pending = this.pendingFor(s);
      const needsView = s.has !== version;
      if (!needsView && pending.length === 0 && !liveness) continue;
      if (pending.length > 0) {
        s.sentUpTo = pending.at(-1)!.seq;
        if (s.sentUpTo < this.seq) more = true;
      }
      const change = !needsView ? {} : delta && s.has === delta.base ? { delta } : { view, version };
      s.has = version;
      this.send(key, { type: 'console.update', from, ...change, events: pending.map((e) => e.event) });
    }
    return more;
  }

  /** Builds the view; a new version when anything but its time changed. */
  private advance(): { view: WireView; version: number; delta: ViewDelta | undefined } {
    const view = this.view();
    const last = this.last;
    if (!last) {
      this.last = { view, version: 1, delta: undefined };
      return this.last;
    }
    const delta = diffView(last.view, view, last.version);
    if (!delta) return last;
    this.last = { view, version: delta.version, delta };
    return this.last;
  }

  private firstSeq(): number {
    return this.events[0]?.seq ?? this.seq + 1;
  }

  private pendingFor(s: Subscriber): { seq: number; event: WireEvent }[] {
    // a subscriber that lagged past the ring resumes at its oldest event
    if (s.sentUpTo < this.firstSeq() - 1) s.sentUpTo = this.firstSeq() - 1;
    const start = this.events.findIndex((e) => e.seq > s.sentUpTo);
    if (start < 0) return [];
    return this.events.slice(start, start + CONSOLE_CAPS.eventsPerUpdate);
  }
}
