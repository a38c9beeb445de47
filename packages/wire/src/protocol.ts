/** Version of the frame format and handshake; peers speaking another version are refused. */
export const PROTOCOL_VERSION = 1;

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
 * Every protocol violation closes with one of these and a human-readable reason.
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
} as const;

/** Why inbound input was refused; the label of `doyen_wire_rejected_total`. */
export type RejectReason =
  | 'text-frame'
  | 'frame-too-large'
  | 'malformed-msgpack'
  | 'bad-handshake'
  | 'wrong-cluster'
  | 'wrong-version'
  | 'bad-proof'
  | 'handshake-timeout'
  | 'before-handshake'
  | 'too-many-handshakes'
  | 'bad-batch'
  | 'bad-envelope'
  | 'unknown-type'
  | 'invalid-message'
  /** A message claiming to speak for a node other than the one its connection authenticated as. */
  | 'forged';
