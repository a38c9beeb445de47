import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import {
  decodeHello,
  encodeHello,
  helloProof,
  proofMatches,
  reconnectDelay,
  resolveWireConfig,
} from '../../packages/wire/src/index.js';

describe('handshake proofs', () => {
  const fields = { version: 1, cluster: 'c', host: 'h', port: 1, uid: 'u', lane: 'system' as const };
  const nonce = Buffer.alloc(16, 7);

  it('depend on the secret, the nonce and every identity field', () => {
    const p = helloProof('s', fields, nonce);
    expect(proofMatches(p, helloProof('s', fields, nonce))).toBe(true);
    expect(proofMatches(p, helloProof('t', fields, nonce))).toBe(false);
    expect(proofMatches(p, helloProof('s', fields, Buffer.alloc(16, 8)))).toBe(false);
    expect(proofMatches(p, helloProof('s', { ...fields, uid: 'v' }, nonce))).toBe(false);
    expect(proofMatches(p, helloProof('s', { ...fields, lane: 'user' }, nonce))).toBe(false);
    expect(proofMatches(p, Buffer.alloc(3))).toBe(false);
  });

  it('hello frames round-trip and malformed ones are refused', () => {
    const hello = { ...fields, nonce, proof: helloProof('s', fields, nonce) };
    expect(decodeHello(encodeHello(hello))).toEqual(hello);
    expect(decodeHello([1, 1, 'c'])).toBeUndefined();
    expect(decodeHello([1, 1, 'c', 'h', 70000, 'u', 'system', nonce, nonce])).toBeUndefined();
    expect(decodeHello([1, 1, 'c', 'h', 1, 'u', 'bulk', nonce, nonce])).toBeUndefined();
    expect(decodeHello('hello')).toBeUndefined();
  });
});

describe('wire config', () => {
  it('reconnect delay doubles, caps and spreads by the jitter', () => {
    const c = resolveWireConfig({ reconnectMinMs: 100, reconnectMaxMs: 1000, reconnectJitter: 0.2 });
    expect([0, 1, 2, 3, 4, 10].map((a) => reconnectDelay(c, a, 0.5))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(reconnectDelay(c, 0, 0)).toBe(80);
    expect(reconnectDelay(c, 0, 0.999999)).toBe(120);
  });

  it('refuses nonsense with a typed error', () => {
    expect(() => resolveWireConfig({ maxFrameBytes: 0 })).toThrow(InvalidConfigError);
    expect(() => resolveWireConfig({ batchBytes: 2_000_000, maxFrameBytes: 1_000_000 })).toThrow(
      InvalidConfigError,
    );
  });
});
