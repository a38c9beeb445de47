import type WebSocket from 'ws';

/**
 * Changes the largest frame a `ws` socket accepts, mid-connection. `ws` takes `maxPayload` only
 * at creation, but its receiver reads `_maxPayload` at every frame header; a node lowers it
 * until the peer has authenticated, so an unauthenticated peer cannot make it buffer and parse
 * a megabyte. Returns false when this `ws` version lacks the field (then the handshake code's
 * own length check is the only limit, after `ws` buffered the frame).
 */
export function setReceiveLimit(socket: WebSocket, bytes: number): boolean {
  const receiver = (socket as unknown as { _receiver?: { _maxPayload?: unknown } })._receiver;
  if (!receiver || typeof receiver._maxPayload !== 'number') return false;
  receiver._maxPayload = bytes;
  return true;
}
