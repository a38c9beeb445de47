import { DoyenError } from '@doyen/core';
import type { RejectReason } from './protocol.js';

/** MessagePack extension type under which actor refs travel (as their address string). */
export const ACTOR_REF_EXTENSION = 0x44; // 'D'
/** msgpackr's `undefined`, and MessagePack's timestamp (type -1): plain values its encoder writes. */
const UNDEFINED_EXTENSION = 0x00;
const TIMESTAMP_EXTENSION = 0xff;
/** msgpackr's inline record definition: fixext 1, type 'r', then the record id. */
const RECORD_DEFINITION_EXTENSION = 0x72;
/** Bytes after the type byte of fixed-size numbers (floats, ints, uints). */
const SCALAR_SIZES: Readonly<Record<number, number>> = {
  202: 4,
  203: 8,
  204: 1,
  205: 2,
  206: 4,
  207: 8,
  208: 1,
  209: 2,
  210: 4,
  211: 8,
};
/** What a scanner holds between checks. */
const NO_BYTES = new Uint8Array(0);
/** Longest actor ref address accepted inside an extension. */
const MAX_ACTOR_REF_BYTES = 1024;

/** What a frame may contain, checked on its bytes before msgpackr decodes it. */
export interface ScanRules {
  /** msgpackr records (one-byte ids, defined inline before use): batch frames only. */
  readonly records: boolean;
  /**
   * doyen's actor refs (0x44), and the two extensions msgpackr's encoder writes for plain
   * messages: `undefined` (type 0) and MessagePack timestamps (type -1, a Date). Not in handshake frames.
   */
  readonly actorRefs: boolean;
  /** Deepest nesting of arrays, maps and records. */
  readonly maxDepth: number;
}

/** A frame refused by the scanner, with the reason it is counted under. */
export class FrameRejectedError extends DoyenError {
  constructor(
    readonly reason: Extract<RejectReason, 'malformed-msgpack' | 'unsupported-msgpack' | 'too-deep'>,
    message: string,
  ) {
    super(message, reason);
  }
}

/**
 * Validates MessagePack bytes against a strict grammar before msgpackr sees them. msgpackr's
 * extension table is process-global and its decoder understands structured-clone references
 * (0x69/0x70: cycles), Set (0x73), Error (0x65), RegExp (0x78), typed arrays (0x74), BigInt
 * (0x42), bundled strings (0x62, 0xc1), any extension another library registered, and record
 * definitions even with `useRecords: false`. Only this is let through: nil, booleans, numbers,
 * strings, binary, arrays, maps with string keys, and (per the rules) doyen's actor refs,
 * `undefined`, timestamps and msgpackr records with one-byte ids — exactly what the wire's own
 * encoder writes for plain messages — so what msgpackr builds from an accepted frame is acyclic
 * plain data.
 * Every container length is checked against the bytes left, so scanning costs O(frame bytes).
 *
 * Record definitions change how later bytes parse (0x40-0x7f is a record reference once its id
 * is defined, an integer before), so a scanner for a sequential stream mirrors the record ids
 * the decoder knows. A frame refused halfway leaves that mirror unreliable: the caller must end
 * the connection, as it does.
 */
export class FrameScanner {
  /** Per record id 0x40-0x7f: how many values a reference reads, -1 while undefined. */
  private readonly recordArity: Int32Array | undefined;
  private bytes: Uint8Array = NO_BYTES;
  private pos = 0;

  constructor(private readonly rules: ScanRules) {
    this.recordArity = rules.records ? new Int32Array(64).fill(-1) : undefined;
  }

  /** Forgets the record ids (the decoder got a reset frame). */
  reset(): void {
    this.recordArity?.fill(-1);
  }

  /** Throws `FrameRejectedError` unless the frame is one value of the allowed grammar, exactly. */
  check(frame: Uint8Array): void {
    this.bytes = frame;
    this.pos = 0;
    try {
      this.value(0);
      if (this.pos !== frame.length) this.malformed(`${frame.length - this.pos} bytes after the value`);
    } finally {
      // the frame is not kept past the check (one shared empty view, not a new one per frame)
      this.bytes = NO_BYTES;
    }
  }

  private value(depth: number): void {
    const b = this.bytes;
    if (this.pos >= b.length) this.malformed('truncated');
    const t = b[this.pos++]!;
    if (t < 0x80) {
      const arity = t >= 0x40 ? this.recordArity?.[t - 0x40] : undefined;
      if (arity !== undefined && arity >= 0) this.values(arity, depth + 1);
      return;
    }
    if (t < 0x90) {
      this.map(t & 0x0f, depth + 1);
      return;
    }
    if (t < 0xa0) {
      this.values(t & 0x0f, depth + 1);
      return;
    }
    if (t < 0xc0) {
      this.skip(t & 0x1f);
      return;
    }
    if (t >= 0xe0) return;
    switch (t) {
      case 0xc0:
      case 0xc2:
      case 0xc3:
        return;
      case 0xc4: // bin 8, str 8
      case 0xd9:
        this.skip(this.u8());
        return;
      case 0xc5: // bin 16, str 16
      case 0xda:
        this.skip(this.u16());
        return;
      case 0xc6: // bin 32, str 32
      case 0xdb:
        this.skip(this.u32());
        return;
      case 0xc7:
        this.ext(this.u8(), false, depth);
        return;
      case 0xc8:
        this.ext(this.u16(), false, depth);
        return;
      case 0xc9:
        this.ext(this.u32(), false, depth);
        return;
      case 0xca:
        this.skip(4);
        return;
      case 0xcb:
        this.skip(8);
        return;
      // uint 8, 16, 32, 64 (0xcc-0xcf) and int 8, 16, 32, 64 (0xd0-0xd3): the low two bits say the width
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3:
        this.skip(1 << (t & 0x03));
        return;
      // fixext 1, 2, 4, 8, 16
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        this.ext(1 << (t - 0xd4), true, depth);
        return;
      case 0xdc: // array 16, 32
      case 0xdd:
        this.values(t === 0xdc ? this.u16() : this.u32(), depth + 1);
        return;
      case 0xde: // map 16, 32
      case 0xdf:
        this.map(t === 0xde ? this.u16() : this.u32(), depth + 1);
        return;
      default:
        // 0xc1: msgpack's never-used byte (msgpackr: bundled strings or a C1 object)
        this.unsupported(`byte 0x${t.toString(16)}`);
    }
  }

  /** `count` values one level down: an array's elements or a record's fields. */
  private values(count: number, depth: number): void {
    this.enter(depth, count);
    for (let i = 0; i < count; i++) this.value(depth);
  }

  private map(count: number, depth: number): void {
    this.enter(depth, count * 2);
    for (let i = 0; i < count; i++) {
      this.key();
      this.value(depth);
    }
  }

  private enter(depth: number, minBytes: number): void {
    if (depth > this.rules.maxDepth) {
      throw new FrameRejectedError('too-deep', `nested deeper than ${this.rules.maxDepth}`);
    }
    if (minBytes > this.bytes.length - this.pos) this.malformed('container longer than the frame');
  }

  private ext(length: number, fixed: boolean, depth: number): void {
    if (this.pos >= this.bytes.length) this.malformed('truncated extension');
    const type = this.bytes[this.pos++]!;
    if (type === RECORD_DEFINITION_EXTENSION && fixed && length === 1 && this.recordArity) {
      this.recordDefinition(depth);
      return;
    }
    if (this.rules.actorRefs) {
      if (type === ACTOR_REF_EXTENSION) {
        if (length === 0 || length > MAX_ACTOR_REF_BYTES) this.unsupported(`actor ref of ${length} bytes`);
        this.skip(length);
        return;
      }
      // what the encoder writes for `undefined` (0xd4 0x00 0x00) and for a Date (timestamp 32/64/96, or invalid)
      const isUndefined = type === UNDEFINED_EXTENSION && fixed && length === 1;
      const isTimestamp =
        type === TIMESTAMP_EXTENSION &&
        (fixed ? length === 1 || length === 4 || length === 8 : length === 12);
      if (isUndefined || isTimestamp) {
        this.skip(length);
        return;
      }
    }
    this.unsupported(`extension type 0x${type.toString(16)}`);
  }

  /** `0xd4 0x72 id`, the keys (an array of strings), then the first record's values. */
  private recordDefinition(depth: number): void {
    const id = this.u8();
    if (id < 0x40 || id > 0x7f) this.unsupported(`record id 0x${id.toString(16)}`);
    const t = this.u8();
    let count: number;
    if (t >= 0x90 && t < 0xa0) count = t & 0x0f;
    else if (t === 0xdc) count = this.u16();
    else if (t === 0xdd) count = this.u32();
    else count = this.unsupported('record keys must be an array');
    this.enter(depth + 1, count);
    for (let i = 0; i < count; i++) this.string('record keys must be strings');
    // defined before its values are read, as msgpackr does: a nested reference may use it
    this.recordArity![id - 0x40] = count;
    this.values(count, depth + 1);
  }

  /**
   * A map key: a string or another scalar (msgpackr turns numbers, booleans and nil into
   * strings; a Map with such keys is encoded that way). No containers, no extensions, and no
   * byte that is a defined record id (msgpackr would read a record there).
   */
  private key(): void {
    if (this.pos >= this.bytes.length) this.malformed('truncated');
    const t = this.bytes[this.pos]!;
    if ((t >= 0xa0 && t < 0xc0) || t === 0xd9 || t === 0xda || t === 0xdb) {
      this.string('map keys must be scalars');
      return;
    }
    this.pos++;
    if (t < 0x80) {
      const arity = t >= 0x40 ? this.recordArity?.[t - 0x40] : undefined;
      if (arity !== undefined && arity >= 0) this.unsupported('map keys must be scalars');
      return;
    }
    if (t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) return;
    const size = SCALAR_SIZES[t];
    if (size === undefined) this.unsupported('map keys must be scalars');
    this.skip(size);
  }

  private string(problem: string): void {
    const t = this.u8();
    if (t >= 0xa0 && t < 0xc0) this.skip(t & 0x1f);
    else if (t === 0xd9) this.skip(this.u8());
    else if (t === 0xda) this.skip(this.u16());
    else if (t === 0xdb) this.skip(this.u32());
    else this.unsupported(problem);
  }

  private skip(n: number): void {
    if (n > this.bytes.length - this.pos) this.malformed('truncated');
    this.pos += n;
  }

  private u8(): number {
    if (this.pos + 1 > this.bytes.length) this.malformed('truncated');
    return this.bytes[this.pos++]!;
  }

  // big-endian, from the bytes: a DataView per frame cost an allocation per frame (issue 29)
  private u16(): number {
    const b = this.bytes;
    const p = this.pos;
    if (p + 2 > b.length) this.malformed('truncated');
    this.pos = p + 2;
    return (b[p]! << 8) | b[p + 1]!;
  }

  private u32(): number {
    const b = this.bytes;
    const p = this.pos;
    if (p + 4 > b.length) this.malformed('truncated');
    this.pos = p + 4;
    return b[p]! * 0x1000000 + ((b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!);
  }

  private malformed(detail: string): never {
    throw new FrameRejectedError('malformed-msgpack', `malformed MessagePack: ${detail}`);
  }

  private unsupported(detail: string): never {
    throw new FrameRejectedError('unsupported-msgpack', `not allowed on the wire: ${detail}`);
  }
}
