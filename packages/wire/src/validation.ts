import {
  type ActorSystem,
  type Envelope,
  isMessage,
  isTraceparent,
  isValidPath,
  type Message,
  type MessageAdmission,
  parseActorAddress,
  sameNode,
  type UniqueNodeAddress,
} from '@doyen/core';
import { FIRST_ENTRY, MAX_ROUTES } from './batch-frame.js';
import type { RejectReason } from './protocol.js';

export type EnvelopeCheck =
  | {
      readonly ok: true;
      readonly envelope: Envelope;
      /** A part dropped on the way in (a malformed trace context): report it, deliver the rest. */
      readonly dropped?: { readonly reason: RejectReason; readonly detail: string };
    }
  | { readonly ok: false; readonly reason: RejectReason; readonly detail: string };

const MAX_UID = 64;

/**
 * Recipient paths already validated, each mapped to one canonical copy of itself: the same few
 * paths recur in almost every envelope. The copy is an internalized string, so later lookups and
 * comparisons with it are cheap (a decoded string is often a slice of msgpackr's string block,
 * and comparing one takes V8's slow path: ~30 ns, several times an envelope).
 */
const validPaths = new Map<string, string>();
const VALID_PATHS_MAX = 10_000;

/**
 * An ask's reply address (`/temp/ask-<n>`, `/system/temp/ask-<n>`, actor-system.ts `ask`): each
 * is used once, so caching them only filled the cache with paths never seen again (a sawtooth
 * of ~0.5 MB up to the cap) and evicted the recurring ones. They are validated every time.
 */
const isTempPath = (path: string) => path.startsWith('/temp/') || path.startsWith('/system/temp/');

/** The path's canonical copy when it is a valid actor path, else undefined. */
function knownGoodPath(path: string): string | undefined {
  const known = validPaths.get(path);
  if (known !== undefined) return known;
  if (!isValidPath(path)) return undefined;
  if (isTempPath(path)) return path;
  if (validPaths.size >= VALID_PATHS_MAX) validPaths.clear();
  const canonical = internalized(path);
  validPaths.set(canonical, canonical);
  return canonical;
}

/** The internalized (unique, flat) string equal to `text`: property names are. */
function internalized(text: string): string {
  return Object.keys({ [text]: 0 })[0]!;
}

/** How many recipient paths the cache holds (tests: it must not grow with asks). */
export function cachedRecipientPathCount(): number {
  return validPaths.size;
}

/** Told why one envelope was refused (counted under `reason`), or that its trace was dropped. */
export type EnvelopeRefusal = (refusal: { readonly reason: RejectReason; readonly detail: string }) => void;

/**
 * What the previous message of one connection was found to be: a batch is mostly runs of one
 * message type, and each run pays for the type lookup once. Only what was validated is remembered
 * (the current admission of a registered type); every other check runs for every message.
 */
export class EnvelopeMemo {
  /** The last message type seen, its admission, and the registrations it was taken at. */
  type: string | undefined = undefined;
  admission: MessageAdmission | undefined = undefined;
  generation = -1;
}

/**
 * Checks one decoded envelope tuple `[to, toUid, from, message]` before anything sees it: the
 * shape, the recipient path, that the sender address is on the authenticated `origin` node, and
 * that the message type is registered; the message is then rebuilt from its schema, whose
 * identity claims must be `origin` too (a forged message is refused as `forged`), and `origin`
 * must hold the authority the type declares, as this node sees it now (else `unauthorized`).
 */
export function checkEnvelope(system: ActorSystem, raw: unknown, origin: UniqueNodeAddress): EnvelopeCheck {
  let refused: { reason: RejectReason; detail: string } | undefined;
  let dropped: { reason: RejectReason; detail: string } | undefined;
  const envelope = readEnvelope(
    system,
    raw,
    origin,
    new EnvelopeMemo(),
    new KnownSenders(),
    ({ reason, detail }) => {
      // the one refusal that keeps the envelope
      if (reason === 'bad-trace-context') dropped = { reason, detail };
      else refused = { reason, detail };
    },
  );
  if (envelope === undefined) return { ok: false, ...refused! };
  return dropped ? { ok: true, envelope, dropped } : { ok: true, envelope };
}

/**
 * `checkEnvelope` for a stream of envelopes (the simulated network's packets): the envelope as it
 * may be delivered, or undefined after `refuse` was told why not. Its recipient, sender and trace
 * are checked as a batch frame's route is (`readRoute`), its message as a batch's (`readMessage`),
 * so the simulation validates with the wire's own checks. A malformed trace context is reported
 * to `refuse` as `bad-trace-context` and the envelope is still returned, without the trace.
 */
export function readEnvelope(
  system: ActorSystem,
  raw: unknown,
  origin: UniqueNodeAddress,
  memo: EnvelopeMemo,
  senders: KnownSenders,
  refuse: EnvelopeRefusal,
): Envelope | undefined {
  if (!Array.isArray(raw) || raw.length < 4 || raw.length > 5) {
    refuse({
      reason: 'bad-envelope',
      detail: 'envelope must be a tuple [to, toUid, from, message, traceparent?]',
    });
    return undefined;
  }
  const toUid: unknown = raw[1];
  if (typeof toUid !== 'string' || toUid.length === 0 || toUid.length > MAX_UID) {
    refuse({ reason: 'bad-envelope', detail: 'toUid must be a short string' });
    return undefined;
  }
  const route = readRoute(
    raw.length === 5 ? [raw[0], raw[2], raw[4]] : [raw[0], raw[2]],
    origin,
    senders,
    refuse,
  );
  if (route === undefined) return undefined;
  const message = readMessage(system, raw[3], origin, memo, refuse);
  if (message === undefined) return undefined;
  // the node's own uid string in place of an equal decoded one: the receiver compares it with that
  const uid = toUid === system.node.uid ? system.node.uid : toUid;
  const { to, from, trace } = route;
  return trace === undefined ? { to, toUid: uid, from, message } : { to, toUid: uid, from, message, trace };
}

/** A sender address must name an actor on the node the connection authenticated as. */
function isFrom(from: string, origin: UniqueNodeAddress): boolean {
  try {
    const { node } = parseActorAddress(from);
    return node.uid === origin.uid && sameNode(node, origin);
  } catch {
    return false;
  }
}

/** The admission of a message (rebuilt from its schema, its claims checked), the type's lookup memoized. */
function admitMessage(
  system: ActorSystem,
  message: Message,
  origin: UniqueNodeAddress,
  memo: EnvelopeMemo,
  refuse: EnvelopeRefusal,
): Message | undefined {
  const types = system.messageTypes;
  const type = message.type;
  if (type !== memo.type || memo.generation !== types.generation) {
    memo.type = type;
    memo.admission = types.admissionOf(type);
    memo.generation = types.generation;
  }
  // not registered: MessageTypes refuses it (as unknown-type)
  return (memo.admission ?? types.admit.bind(types))(message, origin, refuse);
}

/** A message of a batch frame as it may be delivered, or undefined after `refuse` was told why not. */
export function readMessage(
  system: ActorSystem,
  raw: unknown,
  origin: UniqueNodeAddress,
  memo: EnvelopeMemo,
  refuse: EnvelopeRefusal,
): Message | undefined {
  if (!isMessage(raw)) {
    refuse({ reason: 'bad-envelope', detail: 'message must be a map with a string type' });
    return undefined;
  }
  return admitMessage(system, raw, origin, memo, refuse);
}

/** A validated route of a batch frame: where its messages go, who sent them, their trace. */
export interface Route {
  /** The recipient path's canonical copy (see validPaths). */
  readonly to: string;
  readonly from: string | undefined;
  readonly trace: string | undefined;
}

/** A batch frame's header, validated once for all its messages (see batch-frame.ts). */
export interface BatchHeader {
  /** The recipient incarnation: this node's own uid string when it names this node. */
  readonly toUid: string;
  /** Per route index: the route, or null when it was refused (its messages are dropped with it). */
  readonly routes: readonly (Route | null)[];
}

/**
 * Whether a sender address (`doyen://<cluster>@<host>:<port><path>#<uid>`) is an ask's reply address
 * (see isTempPath). Each ask sends from one of its own, so remembering them filled each connection's
 * map to its cap and cleared it, round after round, and internalized a string per ask: ~4 % of an
 * entity owner's CPU per remote ask in a profile (issue 29), and a sawtooth of memory.
 */
function isTempSender(from: string): boolean {
  // the path starts at the first '/' after `doyen://` (a host, bracketed or not, holds none)
  const path = from.indexOf('/', 'doyen://'.length);
  return from.startsWith('/temp/', path) || from.startsWith('/system/temp/', path);
}

/** Sender addresses one connection remembers as on its node (its actors: a few thousand at most). */
const KNOWN_SENDERS_MAX = 10_000;

/**
 * What one connection has found its sender addresses to be. Whether an address names an actor on
 * the connection's node never changes for that connection, and parsing one costs ~1.4 µs: a
 * batch of messages from many actors (fan-out) paid that per message.
 */
export class KnownSenders {
  private readonly valid = new Map<string, string>();

  /** The address's canonical copy when it names an actor on `origin`, else undefined. */
  check(from: string, origin: UniqueNodeAddress): string | undefined {
    const known = this.valid.get(from);
    if (known !== undefined) return known;
    if (!isFrom(from, origin)) return undefined;
    // An ask's sender is its one-off reply address: validated, never remembered (see isTempSender)
    if (isTempSender(from)) return from;
    if (this.valid.size >= KNOWN_SENDERS_MAX) this.valid.clear();
    const canonical = internalized(from);
    this.valid.set(canonical, canonical);
    return canonical;
  }

  /** How many sender addresses are remembered (tests: asks must not make it grow). */
  get size(): number {
    return this.valid.size;
  }
}

/**
 * Checks a decoded batch frame's header and routes once, before any of its messages: the layout,
 * the recipient incarnation, then each route as `readEnvelope` checks an envelope's recipient,
 * sender and trace. A bad layout, too many routes or a route listed twice refuses the whole frame
 * (`bad-batch-header`); a bad route is refused alone, once, and the messages naming it are dropped.
 */
export function readBatchHeader(
  system: ActorSystem,
  frame: readonly unknown[],
  origin: UniqueNodeAddress,
  senders: KnownSenders,
  refuse: EnvelopeRefusal,
): BatchHeader | undefined {
  const bad = (detail: string) => {
    refuse({ reason: 'bad-batch-header', detail });
    return undefined;
  };
  const messages = (frame.length - FIRST_ENTRY) / 2;
  if (!(messages >= 1 && Number.isInteger(messages)))
    return bad('a batch is [toUid, routes, then a route index and a message per message]');
  const toUid: unknown = frame[0];
  if (typeof toUid !== 'string' || toUid.length === 0 || toUid.length > MAX_UID)
    return bad('toUid must be a short string');
  const rawRoutes: unknown = frame[1];
  if (!Array.isArray(rawRoutes) || rawRoutes.length === 0) return bad('routes must be a non-empty array');
  if (rawRoutes.length > messages || rawRoutes.length > MAX_ROUTES)
    return bad(`${rawRoutes.length} routes for ${messages} messages (at most ${MAX_ROUTES})`);
  const routes: (Route | null)[] = new Array(rawRoutes.length);
  const seen = rawRoutes.length > 1 ? new RouteSet() : undefined;
  for (let i = 0; i < rawRoutes.length; i++) {
    const raw: unknown = rawRoutes[i];
    const route = readRoute(raw, origin, senders, refuse);
    routes[i] = route ?? null;
    // listed twice: a sender that deduplicates does not, so the frame is not one of ours (the
    // trace as sent: a malformed one was dropped from the route, and is no duplicate of none)
    if (route !== undefined && seen !== undefined && !seen.add(route, (raw as unknown[])[2]))
      return bad(`route ${i} repeats an earlier one`);
  }
  return { toUid: toUid === system.node.uid ? system.node.uid : toUid, routes };
}

/**
 * The routes of one frame, to find one listed twice without building a string per route: by
 * recipient, then sender (both canonical copies, so compared cheaply); a trace, rare, joins the sender.
 */
class RouteSet {
  private readonly byRecipient = new Map<string, string | Set<string>>();

  /** False when an equal route was added before. */
  add(route: Route, rawTrace: unknown): boolean {
    const from = route.from ?? '';
    const sender = rawTrace === undefined || rawTrace === null ? from : `${from}\0${String(rawTrace)}`;
    const known = this.byRecipient.get(route.to);
    if (known === undefined) {
      this.byRecipient.set(route.to, sender);
      return true;
    }
    if (typeof known === 'string') {
      if (known === sender) return false;
      this.byRecipient.set(route.to, new Set([known, sender]));
      return true;
    }
    if (known.has(sender)) return false;
    known.add(sender);
    return true;
  }
}

/** One route `[to, from | nil, traceparent?]`: checked as an envelope's recipient, sender and trace. */
function readRoute(
  raw: unknown,
  origin: UniqueNodeAddress,
  senders: KnownSenders,
  refuse: EnvelopeRefusal,
): Route | undefined {
  if (!Array.isArray(raw) || raw.length < 2 || raw.length > 3) {
    refuse({ reason: 'bad-envelope', detail: 'route must be [to, from, traceparent?]' });
    return undefined;
  }
  const to: unknown = raw[0];
  const path = typeof to === 'string' ? knownGoodPath(to) : undefined;
  if (path === undefined) {
    refuse({ reason: 'bad-envelope', detail: 'recipient must be an actor path' });
    return undefined;
  }
  const rawFrom: unknown = raw[1];
  let from: string | undefined;
  if (rawFrom !== null) {
    if (typeof rawFrom !== 'string' || rawFrom.length > 1024) {
      refuse({ reason: 'bad-envelope', detail: 'from must be an address string or nil' });
      return undefined;
    }
    from = senders.check(rawFrom, origin);
    if (from === undefined) {
      refuse({ reason: 'forged', detail: `sender ${rawFrom.slice(0, 200)} is not on the connection's node` });
      return undefined;
    }
  }
  const trace: unknown = raw[2];
  if (trace === undefined || trace === null) return { to: path, from, trace: undefined };
  if (!isTraceparent(trace)) {
    // a bad trace context costs the trace, never the messages (W3C: ignore it, start afresh)
    refuse({ reason: 'bad-trace-context', detail: 'traceparent is not W3C version 00' });
    return { to: path, from, trace: undefined };
  }
  return { to: path, from, trace };
}
