import { CONSOLE_CAPS, type ConsoleUpdate, type WireEvent, type WireView } from './console-messages.js';

/** Events kept for subscribers that come later or lag (a ring: the oldest go first). */
export const PUBLISHED_EVENTS_KEPT = 512;
/** Longest subscription a serving node may ask for; it renews well before. */
export const MAX_SUBSCRIPTION_MS = 30_000;

interface Subscriber {
  expiresAt: number;
  /** Sequence of the last event sent to it. */
  sentUpTo: number;
  /** The view text last sent to it (undefined: send the view). */
  viewSent: string | undefined;
}

/**
 * The member side of the console: who subscribed to this node's view and events, until when,
 * and what each was sent. `flush` builds at most one view and hands each subscriber an update
 * with the view when it changed for it and the events it has not had (at most one update's
 * worth; `flush` reports whether more are waiting).
 */
export class ConsolePublisher {
  private readonly subscribers = new Map<string, Subscriber>();
  private readonly events: { seq: number; event: WireEvent }[] = [];
  private seq = 0;

  constructor(
    private readonly self: () => string,
    private readonly view: () => WireView,
    private readonly send: (to: string, update: ConsoleUpdate) => void,
    private readonly now: () => number = Date.now,
  ) {}

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Starts or renews `from`'s subscription (a new one gets the view and the events kept). */
  subscribe(from: string, leaseMs: number): void {
    const expiresAt = this.now() + Math.min(leaseMs, MAX_SUBSCRIPTION_MS);
    const existing = this.subscribers.get(from);
    if (existing) existing.expiresAt = expiresAt;
    else this.subscribers.set(from, { expiresAt, sentUpTo: this.firstSeq() - 1, viewSent: undefined });
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
    const view = this.view();
    const { at: _at, ...rest } = view;
    const viewText = JSON.stringify(rest);
    let more = false;
    const from = this.self();
    for (const [key, s] of this.subscribers) {
      const pending = this.pendingFor(s);
      const needsView = s.viewSent !== viewText;
      if (!needsView && pending.length === 0 && !liveness) continue;
      if (pending.length > 0) {
        s.sentUpTo = pending.at(-1)!.seq;
        if (s.sentUpTo < this.seq) more = true;
      }
      if (needsView) s.viewSent = viewText;
      this.send(key, {
        type: 'console.update',
        from,
        ...(needsView ? { view } : {}),
        events: pending.map((e) => e.event),
      });
    }
    return more;
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
