import {
  type ActorSystem,
  type Envelope,
  isMessage,
  isTraceparent,
  isValidPath,
  type MessageAdmission,
  parseActorAddress,
  sameNode,
  type UniqueNodeAddress,
} from '@doyen/core';
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
 * What the previous envelope of one connection was found to be: a batch is mostly runs of
 * envelopes to one recipient of one message type, and each run pays for the path check and the
 * type lookup once. Only what was validated is remembered (a path that passed `isValidPath`,
 * the current admission of a registered type); every other check runs for every envelope.
 */
export class EnvelopeMemo {
  /** The last recipient path that passed the checks (its canonical copy). */
  to: string | undefined = undefined;
  /** The last recipient incarnation: this node's own uid string when it named this node. */
  toUid: string | undefined = undefined;
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
  const envelope = readEnvelope(system, raw, origin, new EnvelopeMemo(), ({ reason, detail }) => {
    // the one refusal that keeps the envelope
    if (reason === 'bad-trace-context') dropped = { reason, detail };
    else refused = { reason, detail };
  });
  if (envelope === undefined) return { ok: false, ...refused! };
  return dropped ? { ok: true, envelope, dropped } : { ok: true, envelope };
}

/**
 * `checkEnvelope` for a connection's stream of envelopes: the envelope as it may be delivered,
 * or undefined after `refuse` was told why not. A malformed trace context is reported to
 * `refuse` as `bad-trace-context` and the envelope is still returned, without the trace.
 */
export function readEnvelope(
  system: ActorSystem,
  raw: unknown,
  origin: UniqueNodeAddress,
  memo: EnvelopeMemo,
  refuse: EnvelopeRefusal,
): Envelope | undefined {
  if (!Array.isArray(raw) || raw.length < 4 || raw.length > 5) {
    refuse({
      reason: 'bad-envelope',
      detail: 'envelope must be a tuple [to, toUid, from, message, traceparent?]',
    });
    return undefined;
  }
  const to: unknown = raw[0];
  const toUid: unknown = raw[1];
  const from: unknown = raw[2];
  const message: unknown = raw[3];
  if (typeof to !== 'string') {
    refuse({ reason: 'bad-envelope', detail: 'recipient must be an actor path' });
    return undefined;
  }
  // The path's canonical copy is delivered in place of the equal string just decoded: its hash is
  // computed once, and the recipient lookup compares it cheaply (see validPaths).
  let path = memo.to;
  if (to !== path) {
    path = knownGoodPath(to);
    if (path === undefined) {
      refuse({ reason: 'bad-envelope', detail: 'recipient must be an actor path' });
      return undefined;
    }
    // a one-off reply path is not kept: the next envelope is rarely to it (see isTempPath)
    if (!isTempPath(path)) memo.to = path;
  }
  if (typeof toUid !== 'string' || toUid.length === 0 || toUid.length > MAX_UID) {
    refuse({ reason: 'bad-envelope', detail: 'toUid must be a short string' });
    return undefined;
  }
  // the node's own uid string in place of an equal decoded one: the receiver compares it with that
  let uid = memo.toUid;
  if (toUid !== uid) {
    uid = toUid === system.node.uid ? system.node.uid : toUid;
    memo.toUid = uid;
  }
  if (from !== null && (typeof from !== 'string' || from.length > 1024)) {
    refuse({ reason: 'bad-envelope', detail: 'from must be an address string or nil' });
    return undefined;
  }
  if (!isMessage(message)) {
    refuse({ reason: 'bad-envelope', detail: 'message must be a map with a string type' });
    return undefined;
  }
  if (from !== null && !isFrom(from, origin)) {
    refuse({ reason: 'forged', detail: `sender ${from.slice(0, 200)} is not on the connection's node` });
    return undefined;
  }
  const types = system.messageTypes;
  const type = message.type;
  if (type !== memo.type || memo.generation !== types.generation) {
    memo.type = type;
    memo.admission = types.admissionOf(type);
    memo.generation = types.generation;
  }
  // not registered: MessageTypes refuses it (as unknown-type)
  const admitted = (memo.admission ?? types.admit.bind(types))(message, origin, refuse);
  if (admitted === undefined) return undefined;
  const trace = raw[4];
  if (trace === undefined || trace === null)
    return { to: path, toUid: uid, from: from ?? undefined, message: admitted };
  // a bad trace context costs the trace, never the message (W3C: ignore it, start afresh)
  if (!isTraceparent(trace)) {
    refuse({ reason: 'bad-trace-context', detail: 'traceparent is not W3C version 00' });
    return { to: path, toUid: uid, from: from ?? undefined, message: admitted };
  }
  return { to: path, toUid: uid, from: from ?? undefined, message: admitted, trace };
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
