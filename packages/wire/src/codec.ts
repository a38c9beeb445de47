import { type ActorRef, ActorRef as ActorRefClass, type ActorSystem, type Envelope } from '@doyen/core';
import { addExtension, Packr, Unpackr } from 'msgpackr';
import { BatchFrameBuilder } from './batch-frame.js';
import { ACTOR_REF_EXTENSION, FrameScanner } from './frame-scan.js';

/**
 * The system that decoded refs belong to. msgpackr's extensions are process-global, so each
 * decode sets this around its synchronous `unpack` call (several nodes may share a process).
 */
let decodingSystem: ActorSystem | undefined;
/**
 * The last ref decoded in the current decode, by its address: an ask's reply-to travels twice
 * (as the sender and in the message), parsed once. Reset around every decode, so a ref is never
 * reused from an earlier frame (the local actor it names may have stopped since).
 */
let lastRefAddress: string | undefined;
let lastRef: ActorRef | undefined;

addExtension({
  Class: ActorRefClass as unknown as new () => ActorRef,
  type: ACTOR_REF_EXTENSION,
  pack: (ref: ActorRef) => Buffer.from(ref.id, 'utf8'),
  unpack: (bytes: Buffer) => {
    if (!decodingSystem) throw new Error('actor ref decoded outside of a node');
    if (bytes.length > 1024) throw new Error('actor ref address too long');
    // a view, not a copy: msgpackr hands a subarray of the frame
    const address = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
    if (address === lastRefAddress && lastRef !== undefined) return lastRef;
    const ref = decodingSystem.refFor(address);
    lastRefAddress = address;
    lastRef = ref;
    return ref;
  },
});

export function withDecodingSystem<T>(system: ActorSystem, decode: () => T): T {
  const previous = decodingSystem;
  decodingSystem = system;
  lastRefAddress = undefined;
  lastRef = undefined;
  try {
    return decode();
  } finally {
    decodingSystem = previous;
    lastRefAddress = undefined;
    lastRef = undefined;
  }
}

/**
 * Decoder options on top of the scanner (defence in depth): no structured clone, 64-bit
 * integers as plain numbers (a BigInt would break JSON logs and re-encoding).
 */
const strictDecoding = { structuredClone: false, int64AsType: 'number', mapsAsObjects: true } as const;

const plainPackr = new Packr({ useRecords: false });
const plainUnpackr = new Unpackr({ useRecords: false, ...strictDecoding });
/** Handshake frames are flat arrays: no records, no extensions (the depth lets a batch sent too early be told apart). */
const handshakeScanner = new FrameScanner({ records: false, actorRefs: false, maxDepth: 8 });
/** Self-contained values that may carry refs (the simulated network's packets). */
const plainScanner = new FrameScanner({ records: false, actorRefs: true, maxDepth: 32 });

/** Self-contained frames (handshake, simulated packets): no shared state. */
export function encodePlain(value: unknown): Buffer {
  return plainPackr.pack(value);
}

/** Decodes a self-contained value that may hold actor refs (inside `withDecodingSystem`). */
export function decodePlain(frame: Buffer): unknown {
  plainScanner.check(frame);
  return plainUnpackr.unpack(frame);
}

/** Decodes a challenge, hello or welcome; throws (`FrameRejectedError` when the scanner refused it). */
export function decodeHandshakeFrame(frame: Buffer): unknown {
  handshakeScanner.check(frame);
  return plainUnpackr.unpack(frame);
}

/** The one-byte frame (msgpack nil) telling the receiver to forget the record definitions seen so far. */
export const RESET_FRAME = Buffer.from([0xc0]);

/**
 * Encodes batches for one connection. Records (msgpackr structures) are defined inline the
 * first time a shape is sent and referenced after, so repeated message shapes cost a byte of
 * header instead of their keys. The decoder on the other end must see every frame in order.
 */
export class BatchEncoder {
  private packr = BatchEncoder.newPackr();

  private static newPackr(): Packr {
    return new Packr({ sequential: true, useRecords: true });
  }

  private readonly frames = new BatchFrameBuilder();

  /**
   * One batch frame of envelopes to one recipient incarnation (see batch-frame.ts). Throws when
   * a message cannot be encoded (a cycle, a BigInt beyond 64 bits): then `reset`.
   */
  encodeEnvelopes(envelopes: readonly Envelope[]): Buffer {
    return this.packr.pack(this.frames.build(envelopes));
  }

  /** Any value in this connection's encoding (tests and tools: a frame by hand, e.g. `batchFrameOf`'s). */
  encode(value: unknown): Buffer {
    return this.packr.pack(value);
  }

  /** After an encoded frame was not sent (or encoding failed), both sides must drop their record state. */
  reset(): Buffer {
    this.packr = BatchEncoder.newPackr();
    return RESET_FRAME;
  }
}

/** Decodes one connection's batches in order; every frame passes the scanner first. */
export class BatchDecoder {
  private unpackr = BatchDecoder.newUnpackr();
  private readonly scanner: FrameScanner;

  constructor(maxDepth: number) {
    this.scanner = new FrameScanner({ records: true, actorRefs: true, maxDepth });
  }

  private static newUnpackr(): Unpackr {
    return new Unpackr({ sequential: true, useRecords: true, ...strictDecoding });
  }

  /** The decoded batch, or `'reset'` for a reset frame. Throws on malformed or disallowed input. */
  decode(system: ActorSystem, frame: Buffer): unknown {
    if (frame.length === 1 && frame[0] === 0xc0) {
      this.unpackr = BatchDecoder.newUnpackr();
      this.scanner.reset();
      return 'reset';
    }
    this.scanner.check(frame);
    return withDecodingSystem(system, () => this.unpackr.unpack(frame));
  }
}
