import { assertPartitionCount } from './limits.js';
import { murmur3_32 } from './murmur3.js';

/** Hazelcast's default murmur seed; any constant would do, this one is at least familiar. */
export const PARTITION_HASH_SEED = 0x01000193;

const encoder = new TextEncoder();
// Reused so the hot path (every routed message) does not allocate; partitionOf is synchronous.
// Only short keys use it, so one huge key cannot pin a huge buffer.
const scratch = new Uint8Array(3 * 1024);

/**
 * The partition of a key: MurmurHash3 x86_32 of its bytes (strings as UTF-8) with
 * PARTITION_HASH_SEED, folded to 0..partitionCount-1 the way Hazelcast's `hashToIndex` does
 * (`abs(hash) % count`, with INT_MIN going to 0). Stable across nodes, processes and versions:
 * changing it would move every key, so the pinned values in the tests must never change.
 * Hazelcast hashes its serialized form (with type headers), so the indexes are not Hazelcast's.
 * Lone surrogates in strings are encoded as U+FFFD, as TextEncoder does.
 */
export function partitionOf(key: string | Uint8Array, partitionCount: number): number {
  assertPartitionCount(partitionCount);
  const hash = typeof key === 'string' ? hashString(key) : murmur3_32(key, PARTITION_HASH_SEED);
  return hash === -0x80000000 ? 0 : Math.abs(hash) % partitionCount;
}

function hashString(key: string): number {
  // UTF-8 needs at most 3 bytes per UTF-16 code unit.
  if (key.length * 3 > scratch.length) return murmur3_32(encoder.encode(key), PARTITION_HASH_SEED);
  const { written } = encoder.encodeInto(key, scratch);
  return murmur3_32(scratch, PARTITION_HASH_SEED, written);
}
