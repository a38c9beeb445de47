/**
 * MurmurHash3 x86_32 (Austin Appleby, public domain), returned as a signed 32-bit integer like
 * Java's `int` so results line up with Hazelcast's `HashUtil.MurmurHash3_x86_32`. Pure integer
 * arithmetic (`Math.imul`, shifts): identical on every platform and Node version.
 */
export function murmur3_32(bytes: Uint8Array, seed: number, length = bytes.length): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed | 0;
  const blocks = length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, c2);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = length & 3;
  if (tail > 0) {
    // The last 1-3 bytes, little-endian, mixed like a block but without the h rotation.
    let k = 0;
    for (let i = tail - 1; i >= 0; i--) k = (k << 8) | bytes[blocks + i]!;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, c2);
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
