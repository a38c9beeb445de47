/**
 * Version of the frame format, the handshake and the system messages they carry; peers speaking
 * another version are refused. 3: a reachability report lists every change of one heartbeat tick.
 * 4: both sides of the handshake sign it with their node identity key; members carry that key.
 * 5: a batch frame sends its recipient incarnation and its routes once (see batch-frame.ts).
 * 6: sharded messages travel as `sharding.batch` and the keeper withdraws renounces
 * (`sharding.token-withdraw`); a protocol-5 node would refuse both as unknown types and lose entity
 * messages, so it is refused at the handshake instead.
 */
export const PROTOCOL_VERSION = 6;

/** The one WebSocket endpoint of a node. */
export const WS_PATH = '/doyen';

/** First element of every handshake frame. After the handshake every frame is a batch. */
export enum HandshakeKind {
  Challenge = 0,
  Hello = 1,
  Welcome = 2,
}

/**
 * Close codes: standard ones where they fit (RFC 6455 §7.4.1), 4xxx for doyen's own reasons.
 * Every protocol violation closes with one of these; the reason text is generic until the peer
 * authenticated (details stay in our own log and the reject counter).
 */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  unsupportedData: 1003,
  invalidPayload: 1007,
  policyViolation: 1008,
  tooBig: 1009,
  wrongCluster: 4001,
  wrongVersion: 4002,
  badProof: 4003,
  handshakeTimeout: 4004,
  handshakeRequired: 4005,
  tooManyHandshakes: 4006,
  notReady: 4007,
  wrongTarget: 4008,
  wrongSource: 4009,
  /** Authenticated, but the node holds as many inbound connections as it takes (wire.maxInboundConnections). */
  tooManyConnections: 4012,
  /** A newer connection of the same identity and lane took this one's place (wire.maxInboundPerIdentity). */
  replaced: 4013,
  wrongKey: 4010,
} as const;

/** The close reason sent to a peer that has not authenticated: it learns nothing from it. */
export const UNAUTHENTICATED_CLOSE_REASON = 'handshake failed';

/**
 * Violations that end a connection, each with the close code it is answered with (the label
 * of `doyen_wire_rejected_total` is the key).
 */
export const CLOSE_CODE_OF = {
  'text-frame': CloseCode.unsupportedData,
  'frame-too-large': CloseCode.tooBig,
  'malformed-msgpack': CloseCode.invalidPayload,
  'unsupported-msgpack': CloseCode.unsupportedData,
  'too-deep': CloseCode.policyViolation,
  'bad-handshake': CloseCode.policyViolation,
  'wrong-cluster': CloseCode.wrongCluster,
  'wrong-version': CloseCode.wrongVersion,
  'bad-proof': CloseCode.badProof,
  'wrong-target': CloseCode.wrongTarget,
  'wrong-source': CloseCode.wrongSource,
  /** With `wire.tls.bindIdentity`: the peer's certificate does not name the host its hello claims. */
  'certificate-mismatch': CloseCode.wrongSource,
  /** A hello not signed by the key it names, or claiming a member whose admitted key is another. */
  'wrong-key': CloseCode.wrongKey,
  'handshake-timeout': CloseCode.handshakeTimeout,
  'before-handshake': CloseCode.handshakeRequired,
  'too-many-handshakes': CloseCode.tooManyHandshakes,
  'too-many-handshakes-from-ip': CloseCode.tooManyHandshakes,
  'too-many-connections': CloseCode.tooManyConnections,
  'bad-batch': CloseCode.invalidPayload,
} as const;

export type ClosingRejectReason = keyof typeof CLOSE_CODE_OF;

/**
 * Why inbound input was refused; the label of `doyen_wire_rejected_total`. Besides the closing
 * ones: raw TCP connections cut before the WebSocket upgrade (no close code to send), and
 * single envelopes dropped while the connection stays open.
 */
export type RejectReason =
  | ClosingRejectReason
  | 'too-many-upgrades'
  | 'upgrade-timeout'
  | 'not-websocket'
  | 'bad-envelope'
  /** A batch frame whose header or route list is malformed: the whole frame is dropped. */
  | 'bad-batch-header'
  | 'unknown-type'
  | 'invalid-message'
  /** A message claiming to speak for a node other than the one its connection authenticated as. */
  | 'forged'
  /** A message from an origin without the authority its type declares (e.g. a table not from the allocator's host). */
  | 'unauthorized'
  /** An envelope's traceparent that is not W3C's: the trace is dropped, the message delivered. */
  | 'bad-trace-context';

/**
 * A close reason that fits the frame: RFC 6455 allows 123 bytes of UTF-8 and `ws` throws beyond
 * (a detail quoting peer data can be multi-byte). Cut well below, on bytes, not characters.
 */
export function closeReasonText(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= 100 ? text : bytes.subarray(0, 100).toString('utf8');
}
