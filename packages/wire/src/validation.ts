import {
  type ActorSystem,
  type Envelope,
  isMessage,
  isTraceparent,
  isValidPath,
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

/** Recipient paths already validated: the same few paths recur in almost every envelope. */
const validPaths = new Set<string>();
const VALID_PATHS_MAX = 10_000;

/**
 * An ask's reply address (`/temp/ask-<n>`, `/system/temp/ask-<n>`, actor-system.ts `ask`): each
 * is used once, so caching them only filled the cache with paths never seen again (a sawtooth
 * of ~0.5 MB up to the cap) and evicted the recurring ones. They are validated every time.
 */
const isTempPath = (path: string) => path.startsWith('/temp/') || path.startsWith('/system/temp/');

function isKnownGoodPath(path: string): boolean {
  if (validPaths.has(path)) return true;
  if (!isValidPath(path)) return false;
  if (isTempPath(path)) return true;
  if (validPaths.size >= VALID_PATHS_MAX) validPaths.clear();
  validPaths.add(path);
  return true;
}

/** How many recipient paths the cache holds (tests: it must not grow with asks). */
export function cachedRecipientPathCount(): number {
  return validPaths.size;
}

/**
 * Checks one decoded envelope tuple `[to, toUid, from, message]` before anything sees it: the
 * shape, the recipient path, that the sender address is on the authenticated `origin` node, and
 * that the message type is registered; the message is then rebuilt from its schema, whose
 * identity claims must be `origin` too (a forged message is refused as `forged`), and `origin`
 * must hold the authority the type declares, as this node sees it now (else `unauthorized`).
 */
export function checkEnvelope(system: ActorSystem, raw: unknown, origin: UniqueNodeAddress): EnvelopeCheck {
  if (!Array.isArray(raw) || raw.length < 4 || raw.length > 5) {
    return {
      ok: false,
      reason: 'bad-envelope',
      detail: 'envelope must be a tuple [to, toUid, from, message, traceparent?]',
    };
  }
  const [to, toUid, from, message, trace] = raw as [unknown, unknown, unknown, unknown, unknown];
  if (typeof to !== 'string' || !isKnownGoodPath(to)) {
    return { ok: false, reason: 'bad-envelope', detail: 'recipient must be an actor path' };
  }
  if (typeof toUid !== 'string' || toUid.length === 0 || toUid.length > MAX_UID) {
    return { ok: false, reason: 'bad-envelope', detail: 'toUid must be a short string' };
  }
  if (from !== null && (typeof from !== 'string' || from.length > 1024)) {
    return { ok: false, reason: 'bad-envelope', detail: 'from must be an address string or nil' };
  }
  if (!isMessage(message)) {
    return { ok: false, reason: 'bad-envelope', detail: 'message must be a map with a string type' };
  }
  if (from !== null && !isFrom(from, origin)) {
    return {
      ok: false,
      reason: 'forged',
      detail: `sender ${from.slice(0, 200)} is not on the connection's node`,
    };
  }
  const parsed = system.messageTypes.parse(message, origin);
  if (!parsed.ok) return { ok: false, reason: parsed.reason, detail: parsed.detail };
  const envelope = { to, toUid, from: from ?? undefined, message: parsed.message };
  if (trace === undefined || trace === null) return { ok: true, envelope };
  // a bad trace context costs the trace, never the message (W3C: ignore it, start afresh)
  if (!isTraceparent(trace))
    return {
      ok: true,
      envelope,
      dropped: { reason: 'bad-trace-context', detail: 'traceparent is not W3C version 00' },
    };
  return { ok: true, envelope: { ...envelope, trace } };
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
