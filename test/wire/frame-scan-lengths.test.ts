// The scanner reads the 16- and 32-bit lengths of strings, binaries, arrays, maps and extensions
// from the frame's bytes (no DataView per frame, issue 29): each width is read right, so a value
// of exactly its length passes and one byte short is refused.
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { FrameRejectedError, FrameScanner } from '../../packages/wire/src/index.js';

const packr = new Packr({ useRecords: false, variableMapSize: true });
const scanner = new FrameScanner({ records: false, actorRefs: true, maxDepth: 8 });

function reason(frame: Uint8Array): string | undefined {
  try {
    scanner.check(frame);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(FrameRejectedError);
    return (error as FrameRejectedError).reason;
  }
}

const cases: [string, unknown, number][] = [
  ['str 16', 'x'.repeat(300), 0xda],
  ['str 32', 'é'.repeat(40_000), 0xdb],
  ['bin 16', Buffer.alloc(300, 7), 0xc5],
  ['bin 32', Buffer.alloc(70_000, 7), 0xc6],
  ['array 16', Array.from({ length: 300 }, (_, i) => i), 0xdc],
  ['array 32', Array.from({ length: 70_000 }, (_, i) => i & 0x7f), 0xdd],
  ['map 16', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i])), 0xde],
  ['map 32', Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, 1])), 0xdf],
];

describe('lengths of 16 and 32 bits', () => {
  it.each(cases)('%s: the whole value passes, one byte short is truncated', (_name, value, type) => {
    const frame = packr.pack(value);
    expect(frame[0]).toBe(type);
    expect(reason(frame)).toBeUndefined();
    expect(reason(frame.subarray(0, frame.length - 1))).toBe('malformed-msgpack');
    // a length one larger than the bytes left (the top bytes matter: 0x0100 is not 0x0001)
    const longer = Buffer.from(frame);
    const at = type === 0xda || type === 0xc5 || type === 0xdc || type === 0xde ? 2 : 4;
    longer[at] = longer[at]! + 1;
    expect(reason(longer)).toBe('malformed-msgpack');
  });

  it('a 32-bit length over 2^31 is read unsigned (refused as truncated, not as a negative length)', () => {
    expect(reason(Buffer.from([0xdb, 0x80, 0x00, 0x00, 0x01, 0x61]))).toBe('malformed-msgpack');
    expect(reason(Buffer.from([0xc6, 0xff, 0xff, 0xff, 0xff, 0x61]))).toBe('malformed-msgpack');
  });
});
