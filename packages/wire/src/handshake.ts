import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Lane } from '@doyen/core';
import {
  type NodeIdentity,
  PUBLIC_KEY_BYTES,
  publicKeyBytes,
  publicKeyText,
  SIGNATURE_BYTES,
  verifyNodeSignature,
} from './node-identity.js';
import { HandshakeKind } from './protocol.js';

/**
 * The handshake (protocol 4), three frames on every new connection:
 *
 *   acceptor -> dialer  Challenge [0, version, challengeNonce]
 *   dialer -> acceptor  Hello     [1, version, cluster, host, port, uid, lane, target, helloNonce, key, proof, signature]
 *   acceptor -> dialer  Welcome   [2, host, port, uid, key, proof, signature]
 *
 * One transcript: both nonces, the dialer's identity and identity key, and the `host:port` the
 * dialer dialled (`target`); the welcome's also covers the acceptor's identity and key. Each side
 * proves two things over it: the cluster secret (an HMAC: it belongs to the cluster) and its own
 * node key (an Ed25519 signature: it is the member it names, since the cluster admitted that key
 * with the member and checks it at every later handshake). The acceptor refuses a hello whose
 * target is not one of its own addresses, and the dialer a welcome from any address but the one it
 * dialled. So a proof is good for one connection between two named nodes only: whoever listens on
 * an address a node dials (a stale seed) cannot relay the handshake and log in as the dialer, and
 * a holder of the shared secret cannot speak as a member whose private key it lacks.
 */

export const NONCE_BYTES = 16;
const PROOF_BYTES = 32;

/** Acceptor -> dialer, first frame on a new connection: the nonce the dialer must sign. */
export interface Challenge {
  readonly version: number;
  readonly nonce: Buffer;
}

/** Dialer -> acceptor: who I am, whom I meant to reach, and proof of the cluster secret and my key. */
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
  /** The dialer's identity key (base64url), signed for below. */
  readonly publicKey: string;
  readonly proof: Buffer;
  readonly signature: Buffer;
}

/** Acceptor -> dialer: who I am, and my proofs over the same transcript (mutual authentication). */
export interface Welcome {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly publicKey: string;
  readonly proof: Buffer;
  readonly signature: Buffer;
}

/** The acceptor's identity a welcome is computed over. */
export interface AcceptorIdentity {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly publicKey: string;
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
    readonly publicKey: string;
  };
  readonly target: string;
  readonly challengeNonce: Buffer;
  readonly helloNonce: Buffer;
}

export function newNonce(): Buffer {
  return randomBytes(NONCE_BYTES);
}

/** The transcript of a hello answering `challengeNonce`. */
export function transcriptOf(hello: Omit<Hello, 'proof' | 'signature'>, challengeNonce: Buffer): Transcript {
  return {
    version: hello.version,
    cluster: hello.cluster,
    dialer: {
      host: hello.host,
      port: hello.port,
      uid: hello.uid,
      lane: hello.lane,
      publicKey: hello.publicKey,
    },
    target: hello.target,
    challengeNonce,
    helloNonce: hello.nonce,
  };
}

type Part = string | number | Buffer;

/**
 * Length-prefixed parts: no two different part lists give the same bytes. Written into one
 * buffer: the handshake of every connection of a full mesh encodes two of these per side.
 */
function framed(...parts: Part[]): Buffer {
  const bytes: Buffer[] = new Array(parts.length);
  let total = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const b = Buffer.isBuffer(p) ? p : Buffer.from(String(p), 'utf8');
    bytes[i] = b;
    total += 4 + b.length;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const b of bytes) {
    at = out.writeUInt32BE(b.length, at);
    at += b.copy(out, at);
  }
  return out;
}

function hmac(secret: string, data: Buffer): Buffer {
  return createHmac('sha256', secret).update(data).digest();
}

function transcriptParts(t: Transcript): Part[] {
  const d = t.dialer;
  return [
    t.version,
    t.cluster,
    d.host,
    d.port,
    d.uid,
    d.lane,
    d.publicKey,
    t.target,
    t.challengeNonce,
    t.helloNonce,
  ];
}

/** What the dialer's proof and signature cover. */
function helloSigned(t: Transcript): Buffer {
  return framed('doyen-hello', ...transcriptParts(t));
}

/** What the acceptor's proof and signature cover: the transcript and the acceptor's identity. */
function welcomeSigned(t: Transcript, acceptor: AcceptorIdentity): Buffer {
  return framed(
    'doyen-welcome',
    ...transcriptParts(t),
    acceptor.host,
    acceptor.port,
    acceptor.uid,
    acceptor.publicKey,
  );
}

export function helloProof(secret: string, t: Transcript): Buffer {
  return hmac(secret, helloSigned(t));
}

export function welcomeProof(secret: string, t: Transcript, acceptor: AcceptorIdentity): Buffer {
  return hmac(secret, welcomeSigned(t, acceptor));
}

/** The dialer's signature of the transcript with its node key. */
export function helloSignature(identity: NodeIdentity, t: Transcript): Buffer {
  return identity.sign(helloSigned(t));
}

export function welcomeSignature(identity: NodeIdentity, t: Transcript, acceptor: AcceptorIdentity): Buffer {
  return identity.sign(welcomeSigned(t, acceptor));
}

/** Whether the hello is signed by the key it names. */
export function helloSignatureValid(hello: Hello, t: Transcript): boolean {
  return verifyNodeSignature(hello.publicKey, helloSigned(t), hello.signature);
}

/** Whether the welcome is signed by the key it names. */
export function welcomeSignatureValid(welcome: Welcome, t: Transcript): boolean {
  return verifyNodeSignature(welcome.publicKey, welcomeSigned(t, welcome), welcome.signature);
}

/** What a received hello or welcome proves: both proofs, or the first one it fails. */
export type HandshakeCheck = 'ok' | 'bad-proof' | 'wrong-key';

/**
 * The acceptor's check of a hello: the proof of the cluster secret, then the signature by the key
 * it names — the same two checks as helloProof and helloSignatureValid, over one encoding of the
 * transcript (each connection of a full mesh runs this once).
 */
export function helloCheck(secret: string, hello: Hello, t: Transcript): HandshakeCheck {
  return proofsCheck(secret, helloSigned(t), hello);
}

/** The dialer's check of a welcome (as helloCheck, over the welcome's transcript). */
export function welcomeCheck(secret: string, welcome: Welcome, t: Transcript): HandshakeCheck {
  return proofsCheck(secret, welcomeSigned(t, welcome), welcome);
}

function proofsCheck(
  secret: string,
  signed: Buffer,
  claim: { readonly publicKey: string; readonly proof: Buffer; readonly signature: Buffer },
): HandshakeCheck {
  if (!proofMatches(hmac(secret, signed), claim.proof)) return 'bad-proof';
  return verifyNodeSignature(claim.publicKey, signed, claim.signature) ? 'ok' : 'wrong-key';
}

/**
 * A complete hello answering `challengeNonce`, proved with `secret` and signed with `identity`
 * (what a dialer sends; test peers build theirs with it too).
 */
export function signedHello(
  fields: Omit<Hello, 'proof' | 'signature' | 'publicKey'>,
  challengeNonce: Buffer,
  secret: string,
  identity: NodeIdentity,
): { readonly hello: Hello; readonly transcript: Transcript } {
  const unsigned = { ...fields, publicKey: identity.publicKey };
  const transcript = transcriptOf(unsigned, challengeNonce);
  const signed = helloSigned(transcript);
  const hello = { ...unsigned, proof: hmac(secret, signed), signature: identity.sign(signed) };
  return { hello, transcript };
}

/** A complete welcome for `transcript` from `acceptor` (host, port, uid), signed with `identity`. */
export function signedWelcome(
  acceptor: { readonly host: string; readonly port: number; readonly uid: string },
  transcript: Transcript,
  secret: string,
  identity: NodeIdentity,
): Welcome {
  const who = { ...acceptor, publicKey: identity.publicKey };
  const signed = welcomeSigned(transcript, who);
  return { ...who, proof: hmac(secret, signed), signature: identity.sign(signed) };
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
    publicKeyBytes(h.publicKey),
    h.proof,
    h.signature,
  ];
}

export function encodeWelcome(w: Welcome): unknown[] {
  return [HandshakeKind.Welcome, w.host, w.port, w.uid, publicKeyBytes(w.publicKey), w.proof, w.signature];
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
  if (!Array.isArray(frame) || frame.length !== 12 || frame[0] !== HandshakeKind.Hello) return undefined;
  const [, version, cluster, host, port, uid, lane, target, nonce, key, proof, signature] = frame;
  if (!Number.isInteger(version) || !isShortString(cluster, 64) || !isShortString(host) || !isPort(port)) {
    return undefined;
  }
  const signed = decodeSigned(key, proof, signature);
  if (
    !isShortString(uid, 64) ||
    (lane !== 'system' && lane !== 'user') ||
    !isShortString(target, 300) ||
    !isBytes(nonce, NONCE_BYTES) ||
    !signed
  ) {
    return undefined;
  }
  return { version, cluster, host, port, uid, lane, target, nonce: Buffer.from(nonce), ...signed };
}

export function decodeWelcome(frame: unknown): Welcome | undefined {
  if (!Array.isArray(frame) || frame.length !== 7 || frame[0] !== HandshakeKind.Welcome) return undefined;
  const [, host, port, uid, key, proof, signature] = frame;
  const signed = decodeSigned(key, proof, signature);
  if (!isShortString(host) || !isPort(port) || !isShortString(uid, 64) || !signed) return undefined;
  return { host, port, uid, ...signed };
}

/** The public key, proof and signature a hello and a welcome both end with; undefined when one is malformed. */
function decodeSigned(
  key: unknown,
  proof: unknown,
  signature: unknown,
): Pick<Welcome, 'publicKey' | 'proof' | 'signature'> | undefined {
  if (!isBytes(key, PUBLIC_KEY_BYTES) || !isBytes(proof, PROOF_BYTES) || !isBytes(signature, SIGNATURE_BYTES))
    return undefined;
  return { publicKey: publicKeyText(key), proof: Buffer.from(proof), signature: Buffer.from(signature) };
}
