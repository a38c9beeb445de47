import type { Envelope } from '@doyen/core';

/**
 * The batch frame (protocol 5): what repeats across the messages of a batch goes once per frame.
 *
 *   [toUid, routes, route₀, message₀, route₁, message₁, …]
 *
 * `toUid` is the recipient node incarnation of every message in the frame; `routes` lists each
 * distinct `[to, from | nil]` (or `[to, from | nil, traceparent]`) of the frame once; each
 * message is preceded by its route's index. A batch of tells to one actor thus costs one byte
 * of envelope per message (it was the path, the uid and the sender per message: twice raw's size).
 */

/** Most routes one frame may list: a frame carries at most this many messages (Association's batch cap). */
export const MAX_ROUTES = 4096;
/** Index of the first message's route in a frame; a message's route is at an even index from there. */
export const FIRST_ENTRY = 2;

/** Distinct strings whose ids a builder keeps between frames; beyond, it starts afresh (between frames). */
const KNOWN_STRINGS_MAX = 16_000;
/** Bits of a route key per string id: ids stay below 2^15 (the cap plus two new strings per message of a frame). */
const ID_BITS = 15;

/**
 * Builds one association's frames (the sender's hot path). A run of envelopes with the same
 * route, the usual batch, costs a comparison each; a new route is looked up by a small integer
 * made of its strings' ids (paths and sender addresses recur across frames, and a string's hash
 * is computed once), so a batch from many actors to many actors (fan-out) builds no string per route.
 */
export class BatchFrameBuilder {
  private readonly ids = new Map<string, number>();
  private readonly index = new Map<number, number>();
  /** Routes with a trace (rare): keyed by their three parts joined. */
  private readonly traced = new Map<string, number>();

  /** All `envelopes` must name one recipient incarnation (see `Association.takeBatch`). */
  build(envelopes: readonly Envelope[]): unknown[] {
    const count = envelopes.length;
    // one message (an ask, a reply, a heartbeat): its route is the only one, no lookup
    if (count === 1) return [envelopes[0]!.toUid, [routeOf(envelopes[0]!)], 0, envelopes[0]!.message];
    const frame: unknown[] = new Array(FIRST_ENTRY + 2 * count);
    const routes: unknown[] = [];
    if (this.ids.size > KNOWN_STRINGS_MAX) this.ids.clear();
    let lastTo: string | undefined;
    let lastFrom: string | undefined;
    let lastTrace: string | undefined;
    let last = -1;
    for (let i = 0, at = FIRST_ENTRY; i < count; i++, at += 2) {
      const e = envelopes[i]!;
      if (last < 0 || e.to !== lastTo || e.from !== lastFrom || e.trace !== lastTrace) {
        lastTo = e.to;
        lastFrom = e.from;
        lastTrace = e.trace;
        last = this.indexOf(e, routes);
      }
      frame[at] = last;
      frame[at + 1] = e.message;
    }
    frame[0] = count > 0 ? envelopes[0]!.toUid : '';
    frame[1] = routes;
    this.index.clear();
    this.traced.clear();
    return frame;
  }

  /** The index of the envelope's route in `routes`, added when new. */
  private indexOf(e: Envelope, routes: unknown[]): number {
    if (e.trace !== undefined) {
      const key = `${e.to}\0${e.from}\0${e.trace}`;
      const known = this.traced.get(key);
      if (known !== undefined) return known;
      this.traced.set(key, routes.length);
      routes.push(routeOf(e));
      return routes.length - 1;
    }
    const key = (this.idOf(e.to) << ID_BITS) | (e.from === undefined ? 0 : this.idOf(e.from));
    const known = this.index.get(key);
    if (known !== undefined) return known;
    this.index.set(key, routes.length);
    routes.push(routeOf(e));
    return routes.length - 1;
  }

  /** A string's id, from 1 (0 is a missing sender). */
  private idOf(text: string): number {
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.ids.size + 1;
      this.ids.set(text, id);
    }
    return id;
  }
}

/** An envelope's route as the frame lists it. */
function routeOf(e: Envelope): unknown[] {
  return e.trace === undefined ? [e.to, e.from ?? null] : [e.to, e.from ?? null, e.trace];
}

/**
 * The frame for envelope tuples `[to, toUid, from, message, traceparent?]` (tests, tools, and
 * hand-written frames): the tuples' routes deduplicated, the first tuple's `toUid` for all.
 * Tuples are taken as given, malformed ones included (a fuzz test's frame must reach the receiver's
 * checks): their extra elements after the message become extra route elements.
 */
export function batchFrameOf(tuples: readonly (readonly unknown[])[]): unknown[] {
  const frame: unknown[] = [tuples[0]?.[1] ?? '', []];
  const routes = frame[1] as unknown[][];
  const seen = new Map<string, number>();
  for (const tuple of tuples) {
    const route = [tuple[0], tuple[2] ?? null, ...tuple.slice(4)];
    const key = JSON.stringify(route);
    let at = seen.get(key);
    if (at === undefined) {
      at = routes.length;
      routes.push(route);
      seen.set(key, at);
    }
    frame.push(at, tuple[3]);
  }
  return frame;
}
