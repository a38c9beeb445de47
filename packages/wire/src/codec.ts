import { type ActorRef, ActorRef as ActorRefClass, type ActorSystem } from '@doyen/core';
import { addExtension, Packr, Unpackr } from 'msgpackr';

/** MessagePack extension type under which actor refs travel (as their address string). */
const ACTOR_REF_EXTENSION = 0x44; // 'D'

/**
 * The system that decoded refs belong to. msgpackr's extensions are process-global, so each
 * decode sets this around its synchronous `unpack` call (several nodes may share a process).
 */
let decodingSystem: ActorSystem | undefined;

addExtension({
  Class: ActorRefClass as unknown as new () => ActorRef,
  type: ACTOR_REF_EXTENSION,
  pack: (ref: ActorRef) => Buffer.from(ref.id, 'utf8'),
  unpack: (bytes: Buffer) => {
    if (!decodingSystem) throw new Error('actor ref decoded outside of a node');
    if (bytes.length > 1024) throw new Error('actor ref address too long');
    return decodingSystem.refFor(Buffer.from(bytes).toString('utf8'));
  },
});

export function withDecodingSystem<T>(system: ActorSystem, decode: () => T): T {
  const previous = decodingSystem;
  decodingSystem = system;
  try {
    return decode();
  } finally {
    decodingSystem = previous;
  }
}

const plainPackr = new Packr({ useRecords: false });
const plainUnpackr = new Unpackr({ useRecords: false });

/** Handshake frames: self-contained, no shared state. */
export function encodePlain(value: unknown): Buffer {
  return plainPackr.pack(value);
}

export function decodePlain(frame: Buffer): unknown {
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

  encode(envelopes: readonly unknown[]): Buffer {
    return this.packr.pack(envelopes);
  }

  /** After an encoded frame was not sent, both sides must drop their record state. */
  reset(): Buffer {
    this.packr = BatchEncoder.newPackr();
    return RESET_FRAME;
  }
}

export class BatchDecoder {
  private unpackr = BatchDecoder.newUnpackr();

  private static newUnpackr(): Unpackr {
    return new Unpackr({ sequential: true, useRecords: true });
  }

  /** The decoded batch, or `'reset'` for a reset frame. Throws on malformed input. */
  decode(system: ActorSystem, frame: Buffer): unknown {
    if (frame.length === 1 && frame[0] === 0xc0) {
      this.unpackr = BatchDecoder.newUnpackr();
      return 'reset';
    }
    return withDecodingSystem(system, () => this.unpackr.unpack(frame));
  }
}
