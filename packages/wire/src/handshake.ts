import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Lane } from '@doyen/core';
import { HandshakeKind } from './protocol.js';

/**
 * The handshake (protocol 2), three frames on every new connection:
 *
 *   acceptor -> dialer  Challenge [0, version, challengeNonce]
 *   dialer -> acceptor  Hello     [1, version, cluster, host, port, uid, lane, target, helloNonce, proof]
 *   acceptor -> dialer  Welcome   [2, host, port, uid, proof]
 *
 * Both proofs are HMACs (cluster secret) over one transcript: both nonces, the dialer's identity
 * and the `host:port` the dialer dialled (`target`); the welcome's also covers the acceptor's
 * identity. The acceptor refuses a hello whose target is not one of its own addresses, and the
 * dialer refuses a welcome from any address but the one it dialled. So a proof is good for one
 * connection between two named nodes only: whoever listens on an address a node dials (a stale
 * seed) cannot relay the handshake to another node and log in as the dialer.
 */

export const NONCE_BYTES = 16;
const PROOF_BYTES = 32;

/** Acceptor -> dialer, first frame on a new connection: the nonce the dialer must sign. */
export interface Challenge {
  readonly version: number;
  readonly nonce: Buffer;
}

/** Dialer -> acceptor: who I am, whom I meant to reach, and proof that I know the cluster secret. */
export interface Hello {
  readonly version: number;
  readonly cluster: string;
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly lane: Lane;
  /** The `host:port` the dialer dialled, as `formatNodeAddress` writes it. */
  readonly target: string;
  readonly nonce: Buffer;
  readonly proof: Buffer;
}

/** Acceptor -> dialer: who I am, and my proof over the same transcript (mutual authentication). */
export interface Welcome {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly proof: Buffer;
}

/** What both proofs cover. */
export interface Transcript {
  readonly version: number;
  readonly cluster: string;
  readonly dialer: {
    readonly host: string;
    readonly port: number;
    readonly uid: string;
    readonly lane: Lane;
  };
  readonly target: string;
  readonly challengeNonce: Buffer;
  readonly helloNonce: Buffer;
}

export function newNonce(): Buffer {
  return randomBytes(NONCE_BYTES);
}

/** The transcript of a hello answering `challengeNonce`. */
export function transcriptOf(hello: Omit<Hello, 'proof'>, challengeNonce: Buffer): Transcript {
  return {
    version: hello.version,
    cluster: hello.cluster,
    dialer: { host: hello.host, port: hello.port, uid: hello.uid, lane: hello.lane },
    target: hello.target,
    challengeNonce,
    helloNonce: hello.nonce,
  };
}

/** HMAC over length-prefixed parts: no two different part lists hash the same input. */
function hmac(secret: string, ...parts: (string | number | Buffer)[]): Buffer {
  const h = createHmac('sha256', secret);
  const length = Buffer.alloc(4);
  for (const p of parts) {
    const bytes = Buffer.isBuffer(p) ? p : Buffer.from(String(p), 'utf8');
    length.writeUInt32BE(bytes.length);
    h.update(length);
    h.update(bytes);
  }
  return h.digest();
}

function transcriptParts(t: Transcript): (string | number | Buffer)[] {
  const d = t.dialer;
  return [t.version, t.cluster, d.host, d.port, d.uid, d.lane, t.target, t.challengeNonce, t.helloNonce];
}

export function helloProof(secret: string, t: Transcript): Buffer {
  return hmac(secret, 'doyen-hello', ...transcriptParts(t));
}

export function welcomeProof(
  secret: string,
  t: Transcript,
  acceptor: { readonly host: string; readonly port: number; readonly uid: string },
): Buffer {
  return hmac(secret, 'doyen-welcome', ...transcriptParts(t), acceptor.host, acceptor.port, acceptor.uid);
}

export function proofMatches(expected: Buffer, actual: Buffer): boolean {
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export function encodeChallenge(c: Challenge): unknown[] {
  return [HandshakeKind.Challenge, c.version, c.nonce];
}

export function encodeHello(h: Hello): unknown[] {
  return [
    HandshakeKind.Hello,
    h.version,
    h.cluster,
    h.host,
    h.port,
    h.uid,
    h.lane,
    h.target,
    h.nonce,
    h.proof,
  ];
}

export function encodeWelcome(w: Welcome): unknown[] {
  return [HandshakeKind.Welcome, w.host, w.port, w.uid, w.proof];
}

const isBytes = (v: unknown, length: number): v is Buffer => v instanceof Uint8Array && v.length === length;
const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536;
const isShortString = (v: unknown, max = 256): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max;

export function decodeChallenge(frame: unknown): Challenge | undefined {
  if (!Array.isArray(frame) || frame.length !== 3 || frame[0] !== HandshakeKind.Challenge) return undefined;
  const [, version, nonce] = frame;
  if (!Number.isInteger(version) || !isBytes(nonce, NONCE_BYTES)) return undefined;
  return { version, nonce: Buffer.from(nonce) };
}

/**
 * The version of a hello-shaped frame, checked before the rest so a peer speaking another
 * protocol version is told so (4002) rather than that its frame is malformed.
 */
export function helloVersion(frame: unknown): number | undefined {
  if (!Array.isArray(frame) || frame[0] !== HandshakeKind.Hello || !Number.isInteger(frame[1]))
    return undefined;
  return frame[1] as number;
}

/** Returns the hello, or undefined when the frame is not one (the caller reports why). */
export function decodeHello(frame: unknown): Hello | undefined {
  if (!Array.isArray(frame) || frame.length !== 10 || frame[0] !== HandshakeKind.Hello) return undefined;
  const [, version, cluster, host, port, uid, lane, target, nonce, proof] = frame;
  if (!Number.isInteger(version) || !isShortString(cluster, 64) || !isShortString(host) || !isPort(port)) {
    return undefined;
  }
  if (
    !isShortString(uid, 64) ||
    (lane !== 'system' && lane !== 'user') ||
    !isShortString(target, 300) ||
    !isBytes(nonce, NONCE_BYTES) ||
    !isBytes(proof, PROOF_BYTES)
  ) {
    return undefined;
  }
  return {
    version,
    cluster,
    host,
    port,
    uid,
    lane,
    target,
    nonce: Buffer.from(nonce),
    proof: Buffer.from(proof),
  };
}

export function decodeWelcome(frame: unknown): Welcome | undefined {
  if (!Array.isArray(frame) || frame.length !== 5 || frame[0] !== HandshakeKind.Welcome) return undefined;
  const [, host, port, uid, proof] = frame;
  if (!isShortString(host) || !isPort(port) || !isShortString(uid, 64) || !isBytes(proof, PROOF_BYTES))
    return undefined;
  return { host, port, uid, proof: Buffer.from(proof) };
}
