import fc from 'fast-check';
import { Packr, Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { ActorSystem } from '../../packages/core/src/index.js';
import {
  BatchDecoder,
  BatchEncoder,
  decodeHandshakeFrame,
  decodePlain,
  encodePlain,
  FrameRejectedError,
  FrameScanner,
  withDecodingSystem,
} from '../../packages/wire/src/index.js';

const system = new ActorSystem({ cluster: 'scan', host: '127.0.0.1', port: 9 });

function rejection(decode: () => unknown): string | undefined {
  try {
    decode();
    return undefined;
  } catch (error) {
    return error instanceof FrameRejectedError ? error.reason : `other: ${(error as Error).message}`;
  }
}

const cyclic = (): Record<string, unknown> => {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
};

describe('the wire grammar: only plain data and doyen refs get to msgpackr', () => {
  const cloning = new Packr({ structuredClone: true });

  // what msgpackr itself decodes into non-plain values, and the extension each one uses
  const foreign: [string, Buffer][] = [
    ['structured-clone cycle (0x69/0x70)', cloning.pack([cyclic()])],
    ['Set (0x73)', cloning.pack([new Set([1])])],
    ['Error (0x65)', cloning.pack([new Error('x')])],
    ['RegExp (0x78)', cloning.pack([/a+/g])],
    ['typed array (0x74)', cloning.pack([new Float64Array(2)])],
    ['BigInt extension (0x42)', new Packr({ useRecords: false, useBigIntExtension: true }).pack([2n ** 70n])],
    [
      'bundled strings (0x62)',
      new Packr({ useRecords: false, bundleStrings: true }).pack([{ s: 'x'.repeat(40) }]),
    ],
    ['reserved byte 0xc1', Buffer.from([0x91, 0xc1])],
    ['two-byte record definition', Buffer.from([0x91, 0xd5, 0x72, 0x60, 0x01, 0x91, 0xa1, 0x61, 0x01])],
    ['array as a map key', Buffer.from([0x91, 0x81, 0x91, 0x01, 0x02])],
    ['extension as a map key', Buffer.from([0x91, 0x81, 0xd4, 0x00, 0x00, 0x02])],
  ];

  it('msgpackr, as the wire used to configure it, really builds those values (positive control)', () => {
    const [, frame] = foreign[0]!;
    const legacyUnpackr = () => new Unpackr({ sequential: true, useRecords: true });
    const decoded = legacyUnpackr().unpack(frame) as [Record<string, unknown>];
    expect(decoded[0].self).toBe(decoded[0]);
    expect((legacyUnpackr().unpack(foreign[1]![1]) as unknown[])[0]).toBeInstanceOf(Set);
    expect((legacyUnpackr().unpack(foreign[3]![1]) as unknown[])[0]).toBeInstanceOf(RegExp);
  });

  it.each(foreign)('%s is refused before decoding, in batches and in handshake frames', (_, frame) => {
    expect(rejection(() => new BatchDecoder(32).decode(system, frame))).toBe('unsupported-msgpack');
    expect(rejection(() => decodeHandshakeFrame(frame))).toBe('unsupported-msgpack');
  });

  it('undefined and Dates, which the encoder writes for plain messages, pass in batches (not in handshake frames)', () => {
    const values = [
      undefined,
      new Date(0),
      new Date(1_700_000_000_123),
      new Date(-5),
      new Date(2 ** 40 * 1000),
    ];
    const frame = new BatchEncoder().encode([values]);
    expect(new BatchDecoder(32).decode(system, frame)).toEqual([values]);
    expect(rejection(() => decodeHandshakeFrame(frame))).toBe('unsupported-msgpack');
    // other lengths of those types are not what the encoder writes
    expect(rejection(() => new BatchDecoder(32).decode(system, Buffer.from([0x91, 0xd5, 0x00, 0, 0])))).toBe(
      'unsupported-msgpack',
    );
  });

  it('scalar map keys (a Map with number keys) pass, as msgpackr decodes them to string keys', () => {
    const frame = new BatchEncoder().encode([
      new Map<unknown, number>([
        [1, 2],
        ['a', 3],
        [true, 4],
        [-1.5, 5],
      ]),
    ]);
    expect(new BatchDecoder(32).decode(system, frame)).toEqual([{ '1': 2, a: 3, true: 4, '-1.5': 5 }]);
  });

  it('nesting beyond the limit is refused before msgpackr recurses', () => {
    const deep = Buffer.concat([Buffer.alloc(100_000, 0x91), Buffer.from([0x01])]);
    expect(rejection(() => new BatchDecoder(32).decode(system, deep))).toBe('too-deep');
    let nested: unknown = 1;
    for (let i = 0; i < 32; i++) nested = [nested];
    expect(rejection(() => new BatchDecoder(32).decode(system, new Packr().pack(nested)))).toBeUndefined();
    expect(rejection(() => new BatchDecoder(32).decode(system, new Packr().pack([nested])))).toBe('too-deep');
  });

  it('containers longer than the frame, truncation and trailing bytes are malformed', () => {
    for (const frame of [
      Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
      Buffer.from([0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa1]),
      Buffer.from([0xda, 0x00, 0x10, 0x61]),
      Buffer.from([0x92, 0x01, 0x02, 0x03]),
      Buffer.from([]),
    ]) {
      expect(rejection(() => new BatchDecoder(32).decode(system, frame))).toBe('malformed-msgpack');
    }
  });

  it('plain values (the simulated network) take refs but no records', () => {
    const ref = system.refFor('doyen://scan@127.0.0.1:9/user/x#u');
    const decoded = withDecodingSystem(system, () => decodePlain(encodePlain(['/user/x', { ref }]))) as [
      string,
      { ref: { id: string } },
    ];
    expect(decoded[1].ref.id).toBe(ref.id);
    const recorded = new Packr({ useRecords: true }).pack([{ a: 1 }]);
    expect(rejection(() => decodePlain(recorded))).toBe('unsupported-msgpack');
  });

  it('records and actor refs pass in batches, not in handshake frames', () => {
    const ref = system.refFor('doyen://scan@127.0.0.1:9/user/x#u');
    const frame = new BatchEncoder().encode([['/user/x', 'u', null, { type: 't', ref, n: 1 }]]);
    const decoded = new BatchDecoder(32).decode(system, frame) as [[string, string, null, { ref: unknown }]];
    expect((decoded[0][3].ref as { id: string }).id).toBe(ref.id);
    expect(rejection(() => decodeHandshakeFrame(frame))).toBe('unsupported-msgpack');
  });

  it('whatever the encoder writes, over many frames and more shapes than record ids, decodes to the same data', () => {
    const key = fc.string({ minLength: 1, maxLength: 6 });
    const leaf = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
      fc.string({ maxLength: 20 }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.date({ noInvalidDate: true }),
      fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
    );
    const value = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
      array: fc.array(tie('tree'), { maxLength: 4 }),
      object: fc.dictionary(key, tie('tree'), { maxKeys: 4 }),
    })).tree;
    fc.assert(
      fc.property(
        fc.array(fc.array(value, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 30 }),
        (frames) => {
          const encoder = new BatchEncoder();
          const decoder = new BatchDecoder(32);
          for (const batch of frames) expect(decoder.decode(system, encoder.encode(batch))).toEqual(batch);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a scanner mirrors record ids: a reset frame forgets them', () => {
    const scanner = new FrameScanner({ records: true, actorRefs: true, maxDepth: 8 });
    const packr = new Packr({ sequential: true, useRecords: true });
    scanner.check(packr.pack([{ a: 1, b: 2 }]));
    const reference = packr.pack([{ a: 3, b: 4 }]);
    scanner.check(reference); // 0x40 is a record with two values here
    scanner.reset();
    // now 0x40 is the integer 64, followed by two stray bytes
    expect(() => scanner.check(reference)).toThrow(FrameRejectedError);
  });
});
