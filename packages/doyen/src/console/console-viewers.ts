import type { ServerResponse } from 'node:http';
import { EventStreamSlots } from '../event-stream-slots.js';
import type { GatheredChange, GathererListener } from './console-gatherer.js';
import type { NodeView, TimelineEvent } from './node-view.js';
import { diffView, type ViewDelta } from './view-delta.js';

export interface ConsoleViewerLimits {
  /** Viewers at once (default 8); a newcomer closes an older one (event-stream-slots.ts). */
  readonly maxViewers?: number;
  /** Viewers one client address holds at once (default 4). */
  readonly maxViewersPerClient?: number;
  /** Bytes queued for one viewer before it counts as not reading and is closed (default 1 MiB). */
  readonly maxViewerBufferBytes?: number;
  /** Largest frame sent (default 512 KiB); a bigger one is dropped, the next view catches up. */
  readonly maxFrameBytes?: number;
  /**
   * Least time between two flushes of the stream (default 16 ms, a frame of the page's
   * drawing). It was 50 ms while views went whole; with deltas a frame is a few hundred bytes,
   * and the window was most of what a member's change waited on the serving node (20 nodes:
   * ~47 ms from the member's view to the frame written).
   */
  readonly coalesceMs?: number;
  /** Keep-alive comment interval (default 15 s). */
  readonly pingMs?: number;
}

/** Default least time between two flushes of the stream. */
export const STREAM_COALESCE_MS = 16;

/** Why a viewer was closed (the label of `doyen_console_viewers_closed_total`). */
export type ViewerClosed = 'slow' | 'replaced';

/**
 * The browsers watching `/console/stream`: server-sent events of the gathered views (each node
 * at most once per `coalesceMs`, the newest view winning; a view the stream carried before goes
 * as its change from it, `event: delta`), timeline batches and departures.
 * Bounded: a viewer whose unsent bytes pass `maxViewerBufferBytes` is closed, so a browser that
 * stops reading cannot grow the node's memory; a viewer past the caps closes an older one.
 */
export class ConsoleViewers implements GathererListener {
  private readonly slots: EventStreamSlots<ServerResponse>;
  private readonly viewers = new Set<ServerResponse>();
  private readonly pendingViews = new Map<string, { view: NodeView; change: GatheredChange | undefined }>();
  private pendingEvents: TimelineEvent[] = [];
  private readonly pendingGone = new Set<string>();
  /** The view of each node as the stream last carried it (what the next delta is made from). */
  private readonly sent = new Map<string, NodeView>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private scheduled = false;
  /** Counts flushes scheduled and run: a scheduled one whose turn is not the latest is stale. */
  private flushTurn = 0;
  private closed = false;
  private lastFlushAt = 0;
  private readonly ping: ReturnType<typeof setInterval>;
  private readonly maxBuffer: number;
  private readonly maxFrame: number;
  private readonly coalesceMs: number;

  constructor(
    limits: ConsoleViewerLimits,
    private readonly onClosed: (reason: ViewerClosed) => void,
    /**
     * Views that go without waiting out the window: the serving node's own (its publisher already
     * sends it at most once per window), which carries the facts this node logged first.
     */
    private readonly urgent: (key: string) => boolean = () => false,
  ) {
    this.slots = new EventStreamSlots(limits.maxViewers ?? 8, limits.maxViewersPerClient ?? 4);
    this.maxBuffer = limits.maxViewerBufferBytes ?? 1024 * 1024;
    this.maxFrame = limits.maxFrameBytes ?? 512 * 1024;
    this.coalesceMs = limits.coalesceMs ?? STREAM_COALESCE_MS;
    this.ping = setInterval(() => this.write(': ping\n\n'), limits.pingMs ?? 15_000);
    this.ping.unref();
  }

  get size(): number {
    return this.viewers.size;
  }

  /**
   * Starts streaming to `response` (its headers not sent yet) for `client` (a remote address),
   * beginning with `current` (every view known now: what happened before it connected).
   */
  add(client: string, response: ServerResponse, current: readonly NodeView[] = []): void {
    for (const old of this.slots.admit(client, response)) {
      this.onClosed('replaced');
      old.stream.end(`: closed to serve a newer viewer (${old.reason})\n\n`);
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    response.write(': console\n\n');
    // the viewers already here get what is pending first: then every viewer holds `current`,
    // and the next deltas are made from it for all of them
    this.flush();
    for (const view of current) {
      this.sent.set(view.key, view);
      const text = `event: view\ndata: ${JSON.stringify(view)}\n\n`;
      if (text.length <= this.maxFrame) response.write(text);
    }
    this.viewers.add(response);
    response.once('close', () => {
      this.viewers.delete(response);
      this.slots.release(response);
    });
  }

  /**
   * A node's new view. It goes without waiting out the window when it is the serving node's own
   * or its change carries a cluster fact (a member's status or order, reachability, the
   * coordinator): at 50 nodes a member's unreachable report waited ~100 ms on the serving node,
   * most of it a timer hop on a busy loop. Frames are per view either way, so going at once
   * costs a flush, not more bytes; members' updates are rate-limited at the wire.
   */
  view(view: NodeView, change?: GatheredChange): void {
    this.pendingViews.set(view.key, { view, change });
    this.pendingGone.delete(view.key);
    const own = this.urgent(view.key);
    this.schedule(own || (change !== undefined && carriesFact(change.delta)), own);
  }

  events(events: readonly TimelineEvent[]): void {
    this.pendingEvents.push(...events);
    this.schedule();
  }

  gone(key: string): void {
    this.sent.delete(key);
    this.pendingViews.delete(key);
    this.pendingGone.add(key);
    this.schedule();
  }

  /** Sends `data` as one frame to every viewer now (the coalesced path uses it too). */
  broadcast(event: string, data: unknown): void {
    const text = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    if (text.length > this.maxFrame) return;
    this.write(text);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.ping);
    if (this.timer !== undefined) clearTimeout(this.timer);
    for (const v of this.viewers) v.destroy();
    this.viewers.clear();
  }

  /**
   * `now` (the serving node's own view): flushed in this call and put on the sockets at once,
   * not in a microtask with the bytes corked until the next tick. The own view comes from the
   * step that adopted a membership (console-service.ts `poke`), and the microtasks queued before
   * ours are the wire's writes of that change to every member: at 50 nodes the leave's frame was
   * stamped 54 ms after its view was built, the serving node waiting for a core behind the
   * members it had just woken.
   */
  private schedule(urgent = false, now = false): void {
    if (this.viewers.size === 0) {
      this.clearPending();
      return;
    }
    if (now) {
      this.run();
      for (const v of this.viewers) if (!v.destroyed) v.socket?.uncork();
      return;
    }
    // already due: on its way; waiting out the window: only an urgent view cuts it short
    if (this.scheduled && (this.timer === undefined || !urgent)) return;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    // leading edge: after a quiet spell at once (a microtask, so that the views arriving in the
    // same turn go together), in a burst once per coalesceMs. Not a zero timer: on a loaded host
    // each timer hop waited 50-130 ms for the event loop (the 50-node event-to-screen time)
    this.scheduled = true;
    const turn = ++this.flushTurn;
    const run = () => {
      if (turn === this.flushTurn) this.run();
    };
    const wait = urgent ? 0 : this.lastFlushAt + this.coalesceMs - Date.now();
    if (wait <= 0) queueMicrotask(run);
    else {
      this.timer = setTimeout(run, wait);
      this.timer.unref();
    }
  }

  /** Flushes now; a flush still scheduled is dropped (`flushTurn`). */
  private run(): void {
    this.flushTurn++;
    this.scheduled = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    this.lastFlushAt = Date.now();
    this.flush();
  }

  private flush(): void {
    for (const key of this.pendingGone) this.broadcast('gone', { key });
    const sentAt = Date.now();
    for (const { view, change } of this.pendingViews.values()) {
      const prev = this.sent.get(view.key);
      this.sent.set(view.key, view);
      // the member's own delta, when the stream carried the view it was applied to: no second diff
      const delta =
        prev &&
        (change !== undefined && prev.rev !== undefined && change.from === prev.rev
          ? restamped(change.delta, change.from, view)
          : streamDelta(prev, view));
      if (delta) this.broadcast('delta', { ...delta, sentAt });
      else this.broadcast('view', { ...view, sentAt });
    }
    // a burst of events goes in frames of at most 200
    for (let i = 0; i < this.pendingEvents.length; i += 200)
      this.broadcast('timeline', this.pendingEvents.slice(i, i + 200));
    this.clearPending();
  }

  private clearPending(): void {
    this.pendingGone.clear();
    this.pendingViews.clear();
    this.pendingEvents = [];
  }

  private write(text: string): void {
    for (const v of this.viewers) {
      if (v.destroyed) continue;
      v.write(text);
      if (v.writableLength > this.maxBuffer) {
        this.onClosed('slow');
        this.viewers.delete(v);
        this.slots.release(v);
        v.destroy();
      }
    }
  }
}

/** A stream frame of `event: delta`: a view's change from the revision the page holds. */
export interface StreamDelta extends ViewDelta {
  readonly key: string;
  readonly stale: boolean;
}

/** Whether a change moves what the console exists to show first: members, reachability, the coordinator. */
function carriesFact(delta: ViewDelta): boolean {
  const set = delta.set;
  return (
    delta.members !== undefined ||
    (set !== undefined &&
      (set.unreachable !== undefined ||
        set.reachability !== undefined ||
        set.coordinator !== undefined ||
        set.successor !== undefined))
  );
}

/** A member's delta as the stream's: from the serving node's revision `from` to `next`'s. */
function restamped(delta: ViewDelta, from: number, next: NodeView): StreamDelta | undefined {
  if (next.rev === undefined) return undefined;
  return { ...delta, key: next.key, base: from, version: next.rev, at: next.at, stale: next.stale };
}

/**
 * `next` as a change from `prev` (both with the serving node's revisions), or undefined when
 * there is no revision to go from. Only the time and staleness changing is a delta too.
 */
export function streamDelta(prev: NodeView, next: NodeView): StreamDelta | undefined {
  if (prev.rev === undefined || next.rev === undefined) return undefined;
  const delta = diffView(prev, next, prev.rev) ?? { base: prev.rev, at: next.at };
  return { key: next.key, ...delta, version: next.rev, stale: next.stale };
}
