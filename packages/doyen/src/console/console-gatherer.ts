import { HistoryBuffer } from './console-history.js';
import { CONSOLE_CAPS, type ConsoleUpdate } from './console-messages.js';
import type { ConsoleState, NodeView, TimelineEvent } from './node-view.js';
import { applyDelta, type ViewDelta } from './view-delta.js';

/** Recent events `GET /console/state` answers with (the rest is in the history). */
export const RECENT_EVENTS = 500;
/** A member not heard from for this long is shown stale. */
export const DEFAULT_STALE_AFTER_MS = 2000;

/** Who hears what the gatherer learns (the event stream's viewers). */
export interface GathererListener {
  /** `change`: the member's delta that made `view` from the view of revision `from` (absent for a whole view or a staleness change). */
  view(view: NodeView, change?: GatheredChange): void;
  events(events: readonly TimelineEvent[]): void;
  gone(key: string): void;
}

/** A view as the member's own delta made it from the gathered view of revision `from`. */
export interface GatheredChange {
  readonly from: number;
  readonly delta: ViewDelta;
}

/**
 * Why an update was dropped (the label of `doyen_console_updates_refused_total`); `resync`: a
 * change made from a version this node does not hold (one lost, or it came before the whole
 * view) — the member is asked for its whole view.
 */
export type UpdateRefusal = 'not-member' | 'forged' | 'not-gathering' | 'resync';

interface Gathered {
  view: NodeView;
  /** The member's version of `view` (what its next change is made from). */
  version: number | undefined;
  heardAt: number;
}

/**
 * The serving side of the console: every member's latest view and the events they logged, as
 * this node received them, and the bounded history of both. Views are bound to the member the
 * update came from (the wire checked the update speaks for its connection; a view about anyone
 * else is refused here too), kept only for members of this node's view, marked stale when their
 * member went quiet and dropped when it left.
 */
export class ConsoleGatherer {
  private readonly nodes = new Map<string, Gathered>();
  private readonly recent: TimelineEvent[] = [];
  private seq = 0;
  /** Revision of the views kept here, for the viewers' deltas (one counter for all nodes). */
  private rev = 0;
  readonly history: HistoryBuffer;
  private readonly listeners = new Set<GathererListener>();

  constructor(
    options: { readonly historyMs: number; readonly historyBytes: number; readonly staleAfterMs?: number },
    private readonly now: () => number = Date.now,
  ) {
    this.history = new HistoryBuffer(options.historyMs, options.historyBytes, now);
    this.staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  }

  private readonly staleAfterMs: number;

  listen(listener: GathererListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Takes an update `from` sent (`from`: the member its connection authenticated as). A change
   * to the view is applied on the version it was made from only; otherwise (`resync`) the view
   * stays as it was, the events are still taken, and the caller asks for the whole view.
   */
  receive(
    from: string,
    update: Pick<ConsoleUpdate, 'view' | 'version' | 'delta' | 'events'>,
    isMember: (key: string) => boolean,
  ): UpdateRefusal | undefined {
    if (!isMember(from)) return 'not-member';
    if (update.view && update.view.key !== from) return 'forged';
    const at = this.now();
    const known = this.nodes.get(from);
    let refusal: UpdateRefusal | undefined;
    if (update.view) {
      this.put(from, { ...update.view, stale: false }, update.version, at, at);
    } else if (update.delta) {
      const applied = known?.version === undefined ? undefined : this.applied(known, update.delta);
      if (known && applied)
        this.put(from, { ...applied, stale: false }, update.delta.version, at, at, update.delta);
      else {
        refusal = 'resync';
        if (known) known.version = undefined;
      }
    } else if (known) {
      known.heardAt = at;
      if (known.view.stale) this.put(from, { ...known.view, stale: false }, known.version, at, at);
    }
    if (update.events.length > 0) {
      const events: TimelineEvent[] = update.events.map((e) => ({
        seq: ++this.seq,
        at: e.at,
        node: from,
        event: e.event,
        ...(e.msg !== undefined ? { msg: e.msg } : {}),
        fields: e.fields,
      }));
      for (const event of events) {
        this.recent.push(event);
        this.history.add({ at, kind: 'event', event });
      }
      if (this.recent.length > RECENT_EVENTS) this.recent.splice(0, this.recent.length - RECENT_EVENTS);
      for (const l of this.listeners) l.events(events);
    }
    return refusal;
  }

  private applied(known: Gathered, delta: ViewDelta): NodeView | undefined {
    const result = applyDelta(known.view, known.version!, delta, CONSOLE_CAPS);
    return 'view' in result ? result.view : undefined;
  }

  /** Marks quiet members stale and forgets those that left `members`. */
  check(isMember: (key: string) => boolean): void {
    const at = this.now();
    for (const [key, g] of this.nodes) {
      if (!isMember(key)) {
        this.nodes.delete(key);
        this.history.forget(key);
        for (const l of this.listeners) l.gone(key);
      } else if (!g.view.stale && at - g.heardAt > this.staleAfterMs) {
        this.put(key, { ...g.view, stale: true }, g.version, g.heardAt, at);
      }
    }
    this.history.trim();
  }

  view(key: string): NodeView | undefined {
    return this.nodes.get(key)?.view;
  }

  /** Every view gathered now. */
  views(): NodeView[] {
    return [...this.nodes.values()].map((g) => g.view);
  }

  get nodeCount(): number {
    return this.nodes.size;
  }

  state(servedBy: string): ConsoleState {
    return {
      servedBy,
      now: this.now(),
      nodes: Object.fromEntries([...this.nodes].map(([k, g]) => [k, g.view])),
      events: [...this.recent],
      historyFrom: this.history.from,
    };
  }

  private put(
    key: string,
    view: NodeView,
    version: number | undefined,
    heardAt: number,
    at: number,
    delta?: ViewDelta,
  ): void {
    const from = this.nodes.get(key)?.view.rev;
    view = { ...view, rev: ++this.rev };
    this.nodes.set(key, { view, version, heardAt });
    this.history.add({ at, kind: 'view', view });
    const change = delta && from !== undefined ? { from, delta } : undefined;
    for (const l of this.listeners) l.view(view, change);
  }
}
