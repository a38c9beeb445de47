import { type ActorSystem, type Envelope, isMessage, isValidPath, type UniqueNodeAddress } from '@doyen/core';
import type { RejectReason } from './protocol.js';

export type EnvelopeCheck =
  | { readonly ok: true; readonly envelope: Envelope }
  | { readonly ok: false; readonly reason: RejectReason; readonly detail: string };

const MAX_UID = 64;

/** Recipient paths already validated: the same few paths recur in almost every envelope. */
const validPaths = new Set<string>();
const VALID_PATHS_MAX = 10_000;

function isKnownGoodPath(path: string): boolean {
  if (validPaths.has(path)) return true;
  if (!isValidPath(path)) return false;
  if (validPaths.size >= VALID_PATHS_MAX) validPaths.clear();
  validPaths.add(path);
  return true;
}

/**
 * Checks one decoded envelope tuple `[to, toUid, from, message]` before anything sees it:
 * the shape, the recipient path, and that the message type is registered and valid.
 */
export function checkEnvelope(system: ActorSystem, raw: unknown, origin: UniqueNodeAddress): EnvelopeCheck {
  void origin;
  if (!Array.isArray(raw) || raw.length !== 4) {
    return {
      ok: false,
      reason: 'bad-envelope',
      detail: 'envelope must be a 4-tuple [to, toUid, from, message]',
    };
  }
  const [to, toUid, from, message] = raw as [unknown, unknown, unknown, unknown];
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
  if (!system.messageTypes.has(message.type)) {
    return {
      ok: false,
      reason: 'unknown-type',
      detail: `unknown message type ${JSON.stringify(message.type.slice(0, 100))}`,
    };
  }
  const problem = system.messageTypes.check(message);
  if (problem !== undefined)
    return { ok: false, reason: 'invalid-message', detail: `${message.type}: ${problem}` };
  return { ok: true, envelope: { to, toUid, from: from ?? undefined, message } };
}
