import { describe, expect, it } from 'vitest';
import {
  InvalidPartitionCountError,
  MAX_PARTITION_COUNT,
  murmur3_32,
  PARTITION_HASH_SEED,
  partitionOf,
} from '../../packages/partitions/src/index.js';
import { P } from './support.js';

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('murmur3_32', () => {
  it('matches the reference MurmurHash3_x86_32 vectors', () => {
    const unsigned = (s: string, seed: number) => murmur3_32(utf8(s), seed) >>> 0;
    expect(unsigned('', 0)).toBe(0);
    expect(unsigned('', 1)).toBe(0x514e28b7);
    expect(unsigned('hello', 0)).toBe(0x248bfa47);
    expect(unsigned('abc', 0)).toBe(0xb3dd93fa);
    expect(unsigned('The quick brown fox jumps over the lazy dog', 0)).toBe(0x2e4ff723);
  });

  it('returns a signed 32-bit integer like Java', () => {
    expect(murmur3_32(utf8('hello'), 0)).toBe(0x248bfa47);
    expect(murmur3_32(utf8('abc'), 0)).toBe(0xb3dd93fa | 0);
  });
});

describe('partitionOf', () => {
  // Regression pins, also checked against an independent Python implementation. If one changes,
  // every key in every running cluster moves: do not update them, fix the code.
  const pins: [string, number, number, number][] = [
    ['', 238, 69, 3141],
    ['a', 46, 832, 56128],
    ['user-42', 130, 85, 36949],
    ['order:1001', 206, 412, 60828],
    ['héllo', 261, 684, 57004],
    ['😀', 140, 1007, 53231],
    ['The quick brown fox jumps over the lazy dog', 147, 290, 43298],
  ];
  it.each(pins)('pins %j', (key, p271, p1024, p65536) => {
    expect([partitionOf(key, 271), partitionOf(key, 1024), partitionOf(key, 65536)]).toEqual([
      p271,
      p1024,
      p65536,
    ]);
  });

  it('pins raw bytes and the seed', () => {
    expect(PARTITION_HASH_SEED).toBe(0x01000193);
    expect(partitionOf(new Uint8Array([0, 1, 2, 3, 255]), 271)).toBe(213);
  });

  it('gives the same partition for a string and its UTF-8 bytes', () => {
    const long = 'ü'.repeat(5000); // longer than the reusable scratch buffer
    for (const key of ['', 'a', 'user-42', 'héllo', '😀', '中文键', long, `${long}x`]) {
      for (const count of [1, 7, 271, MAX_PARTITION_COUNT]) {
        expect(partitionOf(key, count)).toBe(partitionOf(utf8(key), count));
      }
    }
  });

  it('spreads 100k keys uniformly over 271 partitions', () => {
    const counts = new Array<number>(P).fill(0);
    const n = 100_000;
    for (let i = 0; i < n; i++) counts[partitionOf(`key-${i}`, P)]!++;
    const expected = n / P;
    const chiSquare = counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
    // 270 degrees of freedom: mean 270, sd ≈ 23; 370 is beyond p = 0.0001.
    expect(chiSquare).toBeLessThan(370);
    expect(Math.min(...counts)).toBeGreaterThan(expected * 0.75);
    expect(Math.max(...counts)).toBeLessThan(expected * 1.25);
  });

  it('always lands in 0..count-1', () => {
    const outside: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const count = (i % 97) + 1;
      const p = partitionOf(`k${i}`, count);
      if (!Number.isInteger(p) || p < 0 || p >= count) outside.push(`k${i} -> ${p} of ${count}`);
    }
    expect(outside).toEqual([]);
  });

  it('rejects partition counts outside 1..65536 with a typed error', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, MAX_PARTITION_COUNT + 1]) {
      expect(() => partitionOf('k', bad)).toThrow(InvalidPartitionCountError);
    }
    try {
      partitionOf('k', 0);
    } catch (error) {
      expect(error).toMatchObject({ code: 'invalid-config', partitionCount: 0 });
    }
  });
});
