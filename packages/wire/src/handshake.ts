import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Lane } from '@doyen/core';
import { HandshakeKind, PROTOCOL_VERSION } from './protocol.js';

/** Acceptor -> dialer, first frame on a new connection: the nonce the dialer must sign. */
export interface Challenge {
  readonly version: number;
  readonly nonce: Buffer;
}

/** Dialer -> acceptor: who I am, and proof that I know the cluster secret. */
export interface Hello {
  readonly version: number;
  readonly cluster: string;
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly lane: Lane;
  readonly nonce: Buffer;
  readonly proof: Buffer;
}

/** Acceptor -> dialer: who I am, and my proof over the dialer's nonce (mutual authentication). */
export interface Welcome {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly proof: Buffer;
}

export function newNonce(): Buffer {
  return randomBytes(16);
}

function hmac(secret: string, ...parts: (string | number | Buffer)[]): Buffer {
  const h = createHmac('sha256', secret);
  for (const p of parts) {
    h.update(typeof p === 'number' ? String(p) : p);
    h.update('\u0000');
  }
  return h.digest();
}

export function helloProof(
  secret: string,
  h: Omit<Hello, 'proof' | 'nonce'>,
  challengeNonce: Buffer,
): Buffer {
  return hmac(secret, 'doyen-hello', h.version, h.cluster, h.host, h.port, h.uid, h.lane, challengeNonce);
}

export function welcomeProof(
  secret: string,
  cluster: string,
  w: Omit<Welcome, 'proof'>,
  helloNonce: Buffer,
): Buffer {
  return hmac(secret, 'doyen-welcome', PROTOCOL_VERSION, cluster, w.host, w.port, w.uid, helloNonce);
}

export function proofMatches(expected: Buffer, actual: Buffer): boolean {
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export function encodeChallenge(c: Challenge): unknown[] {
  return [HandshakeKind.Challenge, c.version, c.nonce];
}

export function encodeHello(h: Hello): unknown[] {
  return [HandshakeKind.Hello, h.version, h.cluster, h.host, h.port, h.uid, h.lane, h.nonce, h.proof];
}

export function encodeWelcome(w: Welcome): unknown[] {
  return [HandshakeKind.Welcome, w.host, w.port, w.uid, w.proof];
}

const isBytes = (v: unknown): v is Buffer => v instanceof Uint8Array;
const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536;
const isShortString = (v: unknown, max = 256): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max;

export function decodeChallenge(frame: unknown): Challenge | undefined {
  if (!Array.isArray(frame) || frame.length !== 3 || frame[0] !== HandshakeKind.Challenge) return undefined;
  const [, version, nonce] = frame;
  if (!Number.isInteger(version) || !isBytes(nonce)) return undefined;
  return { version, nonce: Buffer.from(nonce) };
}

/** Returns the hello, or undefined when the frame is not one (the caller reports why). */
export function decodeHello(frame: unknown): Hello | undefined {
  if (!Array.isArray(frame) || frame.length !== 9 || frame[0] !== HandshakeKind.Hello) return undefined;
  const [, version, cluster, host, port, uid, lane, nonce, proof] = frame;
  if (!Number.isInteger(version) || !isShortString(cluster, 64) || !isShortString(host) || !isPort(port)) {
    return undefined;
  }
  if (
    !isShortString(uid, 64) ||
    (lane !== 'system' && lane !== 'user') ||
    !isBytes(nonce) ||
    !isBytes(proof)
  ) {
    return undefined;
  }
  return { version, cluster, host, port, uid, lane, nonce: Buffer.from(nonce), proof: Buffer.from(proof) };
}

export function decodeWelcome(frame: unknown): Welcome | undefined {
  if (!Array.isArray(frame) || frame.length !== 5 || frame[0] !== HandshakeKind.Welcome) return undefined;
  const [, host, port, uid, proof] = frame;
  if (!isShortString(host) || !isPort(port) || !isShortString(uid, 64) || !isBytes(proof)) return undefined;
  return { host, port, uid, proof: Buffer.from(proof) };
}
