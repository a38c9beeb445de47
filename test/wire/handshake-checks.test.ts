import { describe, expect, it } from 'vitest';
import {
  helloCheck,
  helloProof,
  helloSignatureValid,
  NodeIdentity,
  signedHello,
  signedWelcome,
  transcriptOf,
  welcomeCheck,
  welcomeProof,
  welcomeSignatureValid,
} from '../../packages/wire/src/index.js';

// helloCheck / welcomeCheck encode the transcript once for both proofs: they must refuse exactly
// what helloProof + helloSignatureValid (and the welcome's pair) refuse, and the transcript's
// bytes must not change (a node of this build must still shake hands with one of the last).
describe('handshake checks over one encoding of the transcript', () => {
  const dialer = NodeIdentity.generate();
  const acceptor = NodeIdentity.generate();
  const stranger = NodeIdentity.generate();
  const challenge = Buffer.alloc(16, 9);
  const fields = {
    version: 4,
    cluster: 'c',
    host: 'h',
    port: 1,
    uid: 'u',
    lane: 'system' as const,
    target: 'a:2',
    nonce: Buffer.alloc(16, 7),
  };
  const { hello, transcript } = signedHello(fields, challenge, 's', dialer);
  const welcome = signedWelcome({ host: 'a', port: 2, uid: 'x' }, transcript, 's', acceptor);

  it('the proofs are byte for byte those of the previous encoding (golden values)', () => {
    const t = transcriptOf({ ...fields, publicKey: 'k'.repeat(43) }, challenge);
    expect(helloProof('s', t).toString('hex')).toBe(
      'd742f74c96b43884e00302583f610d31533eed284cf0b2932329c7635c40bb13',
    );
    expect(
      welcomeProof('s', t, { host: 'a', port: 2, uid: 'x', publicKey: 'q'.repeat(43) }).toString('hex'),
    ).toBe('6af2058cd34dfbf4a9284746dd4e900e2e31fd6db11461a908e2b343ab06b42a');
  });

  it('accepts a genuine hello and welcome, as the separate checks do', () => {
    expect(helloCheck('s', hello, transcript)).toBe('ok');
    expect(helloSignatureValid(hello, transcript)).toBe(true);
    expect(welcomeCheck('s', welcome, transcript)).toBe('ok');
    expect(welcomeSignatureValid(welcome, transcript)).toBe(true);
  });

  it('a wrong secret or another transcript fails the proof first', () => {
    expect(helloCheck('t', hello, transcript)).toBe('bad-proof');
    expect(welcomeCheck('t', welcome, transcript)).toBe('bad-proof');
    const other = transcriptOf({ ...hello, target: 'b:3' }, challenge);
    expect(helloCheck('s', hello, other)).toBe('bad-proof');
    expect(welcomeCheck('s', welcome, other)).toBe('bad-proof');
    expect(helloCheck('s', { ...hello, proof: Buffer.alloc(32) }, transcript)).toBe('bad-proof');
  });

  it('a secret holder without the named key fails the signature (the identity cannot be borrowed)', () => {
    // the stranger knows the secret and signs with its own key while naming the dialer's
    const forged = signedHello(fields, challenge, 's', stranger).hello;
    const claimed = { ...forged, publicKey: dialer.publicKey };
    const t = transcriptOf(claimed, challenge);
    // its proof over the claimed transcript is good (it knows the secret): only the key betrays it
    const withProof = { ...claimed, proof: helloProof('s', t) };
    expect(helloCheck('s', withProof, t)).toBe('wrong-key');
    expect(helloSignatureValid(withProof, t)).toBe(false);
    // positive control: the same forgery naming the stranger's own key passes
    expect(helloCheck('s', forged, transcriptOf(forged, challenge))).toBe('ok');

    const fakeWelcome = signedWelcome({ host: 'a', port: 2, uid: 'x' }, transcript, 's', stranger);
    const claimedWelcome = { ...fakeWelcome, publicKey: acceptor.publicKey };
    const welcomeWithProof = { ...claimedWelcome, proof: welcomeProof('s', transcript, claimedWelcome) };
    expect(welcomeCheck('s', welcomeWithProof, transcript)).toBe('wrong-key');
    expect(welcomeCheck('s', fakeWelcome, transcript)).toBe('ok');
  });
});
