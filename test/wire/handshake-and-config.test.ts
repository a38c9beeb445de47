import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import {
  decodeHello,
  decodeWelcome,
  encodeHello,
  encodeWelcome,
  helloProof,
  helloSignatureValid,
  NodeIdentity,
  proofMatches,
  quotaKeyOf,
  reconnectDelay,
  resolveWireConfig,
  signedHello,
  signedWelcome,
  transcriptOf,
  verifyNodeSignature,
  welcomeProof,
  welcomeSignatureValid,
} from '../../packages/wire/src/index.js';

describe('handshake proofs', () => {
  const dialerKey = NodeIdentity.generate();
  const acceptorKey = NodeIdentity.generate();
  const hello = {
    version: 2,
    cluster: 'c',
    host: 'h',
    port: 1,
    uid: 'u',
    lane: 'system' as const,
    target: 'a:2',
    nonce: Buffer.alloc(16, 5),
    publicKey: dialerKey.publicKey,
  };
  const challenge = Buffer.alloc(16, 7);
  const t = transcriptOf(hello, challenge);
  const acceptor = { host: 'a', port: 2, uid: 'x', publicKey: acceptorKey.publicKey };

  it('bind the secret, both nonces, every identity field and the address dialled', () => {
    const p = helloProof('s', t);
    expect(proofMatches(p, helloProof('s', transcriptOf(hello, challenge)))).toBe(true);
    const variants = [
      helloProof('t', t),
      helloProof('s', transcriptOf(hello, Buffer.alloc(16, 8))),
      helloProof('s', transcriptOf({ ...hello, nonce: Buffer.alloc(16, 6) }, challenge)),
      helloProof('s', transcriptOf({ ...hello, uid: 'v' }, challenge)),
      helloProof('s', transcriptOf({ ...hello, lane: 'user' }, challenge)),
      helloProof('s', transcriptOf({ ...hello, target: 'b:2' }, challenge)),
      helloProof('s', transcriptOf({ ...hello, cluster: 'd' }, challenge)),
      helloProof('s', transcriptOf({ ...hello, version: 3 }, challenge)),
      helloProof('s', transcriptOf({ ...hello, publicKey: acceptorKey.publicKey }, challenge)),
    ];
    for (const v of variants) expect(proofMatches(p, v)).toBe(false);
    expect(proofMatches(p, Buffer.alloc(3))).toBe(false);
  });

  it('the welcome proof covers the transcript and the acceptor, and differs from the hello proof', () => {
    const w = welcomeProof('s', t, acceptor);
    expect(proofMatches(w, welcomeProof('s', t, acceptor))).toBe(true);
    expect(proofMatches(w, welcomeProof('s', t, { ...acceptor, port: 3 }))).toBe(false);
    expect(proofMatches(w, welcomeProof('s', t, { ...acceptor, publicKey: dialerKey.publicKey }))).toBe(
      false,
    );
    expect(
      proofMatches(w, welcomeProof('s', transcriptOf({ ...hello, target: 'b:2' }, challenge), acceptor)),
    ).toBe(false);
    expect(proofMatches(w, helloProof('s', t))).toBe(false);
  });

  it('length-prefixes the parts: shifting a boundary changes the proof', () => {
    const a = helloProof('s', transcriptOf({ ...hello, cluster: 'ab', host: 'c' }, challenge));
    const b = helloProof('s', transcriptOf({ ...hello, cluster: 'a', host: 'bc' }, challenge));
    expect(proofMatches(a, b)).toBe(false);
  });

  it('a hello is signed by the key it names, and by nothing else', () => {
    const { hello: signed, transcript } = signedHello(hello, challenge, 's', dialerKey);
    expect(signed.publicKey).toBe(dialerKey.publicKey);
    expect(helloSignatureValid(signed, transcript)).toBe(true);
    // another key claimed with the same signature, or the signature over another transcript
    expect(helloSignatureValid({ ...signed, publicKey: acceptorKey.publicKey }, transcript)).toBe(false);
    const other = transcriptOf({ ...hello, uid: 'v' }, challenge);
    expect(helloSignatureValid(signed, other)).toBe(false);
    // a secret holder's own key, signing a hello that claims the dialer's key
    const forged = signedHello(hello, challenge, 's', acceptorKey).hello;
    expect(helloSignatureValid({ ...forged, publicKey: dialerKey.publicKey }, transcript)).toBe(false);
    expect(verifyNodeSignature('not a key', Buffer.alloc(1), signed.signature)).toBe(false);
  });

  it('a welcome is signed by the acceptor over the transcript and its own identity', () => {
    const welcome = signedWelcome({ host: 'a', port: 2, uid: 'x' }, t, 's', acceptorKey);
    expect(welcome.publicKey).toBe(acceptorKey.publicKey);
    expect(proofMatches(welcome.proof, welcomeProof('s', t, acceptor))).toBe(true);
    expect(welcomeSignatureValid(welcome, t)).toBe(true);
    expect(welcomeSignatureValid({ ...welcome, uid: 'y' }, t)).toBe(false);
    expect(welcomeSignatureValid({ ...welcome, publicKey: dialerKey.publicKey }, t)).toBe(false);
    expect(decodeWelcome(encodeWelcome(welcome))).toEqual(welcome);
    expect(decodeWelcome(encodeWelcome(welcome).slice(0, 6))).toBeUndefined();
  });

  it('an identity key survives a round trip through PEM (a stable identity on disk)', () => {
    const again = NodeIdentity.fromPem(dialerKey.toPem());
    expect(again.publicKey).toBe(dialerKey.publicKey);
    expect(() => NodeIdentity.fromPem('nonsense')).toThrow(InvalidConfigError);
  });

  it('hello frames round-trip and malformed ones are refused', () => {
    const full = signedHello(hello, challenge, 's', dialerKey).hello;
    expect(decodeHello(encodeHello(full))).toEqual(full);
    expect(decodeHello([1, 2, 'c'])).toBeUndefined();
    const frame = encodeHello(full);
    const withPort = [...frame];
    withPort[4] = 70000;
    expect(decodeHello(withPort)).toBeUndefined();
    const withLane = [...frame];
    withLane[6] = 'bulk';
    expect(decodeHello(withLane)).toBeUndefined();
    const shortNonce = [...frame];
    shortNonce[8] = Buffer.alloc(3);
    expect(decodeHello(shortNonce)).toBeUndefined();
    expect(decodeHello(frame.slice(0, 11))).toBeUndefined();
    const shortKey = [...frame];
    shortKey[9] = Buffer.alloc(31);
    expect(decodeHello(shortKey)).toBeUndefined();
    expect(decodeHello('hello')).toBeUndefined();
  });
});

describe('per-address handshake quota', () => {
  it('groups IPv6 by /64 and IPv4-mapped addresses with IPv4', () => {
    expect(quotaKeyOf('127.0.0.2')).toBe('127.0.0.2');
    expect(quotaKeyOf('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(quotaKeyOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(quotaKeyOf('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(quotaKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(quotaKeyOf('::1')).toBe('0:0:0:0::/64');
    expect(quotaKeyOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
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
    expect(() => resolveWireConfig({ maxPendingHandshakesPerIp: 0 })).toThrow(InvalidConfigError);
    expect(() => resolveWireConfig({ maxHandshakeFrameBytes: 2_000_000 })).toThrow(InvalidConfigError);
    expect(() => resolveWireConfig({ aliases: ['no-port'] })).toThrow();
  });

  it('normalises aliases the way a dialer writes its target', () => {
    expect(resolveWireConfig({ aliases: [' node-1.example:2552 ', '[::1]:7'] }).aliases).toEqual([
      'node-1.example:2552',
      '[::1]:7',
    ]);
  });
});
