import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Envelope } from '../../packages/core/src/index.js';
import {
  Association,
  CloseCode,
  HandshakeKind,
  NodeIdentity,
  resolveWireConfig,
  WS_PATH,
} from '../../packages/wire/src/index.js';
import type { IssuedCertificate } from '../support/certificates.js';
import { helloFrame, plain, unplain } from '../support/raw-peer.js';
import { eventsOf, type LoggedNode, ping, TEST_SECRET } from '../support/tls-nodes.js';
import { servedSerial } from '../support/tls-probe.js';
import { loggedNodesClosedAfterEach, twoNodeCertificates } from '../support/tls-suite.js';
import { eventually } from '../support/wait.js';

const certs = twoNodeCertificates();
const node = loggedNodesClosedAfterEach();

const tlsRejected = (n: LoggedNode) =>
  n.transport.system.metrics.value('doyen_wire_rejected_total', { reason: 'tls' });
const addressOf = (n: LoggedNode) => ({ host: '127.0.0.1', port: n.transport.port });

/** The certificate a node serves to a client presenting `client` (a raw TLS connection, no ws). */
const served = (n: LoggedNode, client: IssuedCertificate) =>
  servedSerial(n.transport.port, certs.pki.caFile, client, { checkServerIdentity: () => undefined });

describe('mutual TLS between nodes', () => {
  it('two nodes with certificates from the cluster CA exchange messages over wss', async () => {
    const a = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const b = await node({ wire: { tls: certs.pki.tlsFor(certs.b) } });
    for (let n = 0; n < 100; n++) ping(a, b, n);
    ping(b, a);
    await eventually(() => b.inbox.length === 100 && a.inbox.length === 1, { what: 'messages both ways' });
    expect(b.inbox.map((m) => (m as unknown as { n: number }).n)).toEqual([...Array(100).keys()]);
    // it was TLS: each node serves its own certificate, and says so at start
    expect(await served(b, certs.a)).toBe(certs.b.serial);
    expect(eventsOf(a, 'wire.tls.enabled')).toHaveLength(1);
    expect(tlsRejected(a) + tlsRejected(b)).toBe(0);
  });

  it('a plaintext node cannot reach a TLS node: the TLS side logs why', async () => {
    const secure = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const plain = await node();
    const control = await node({ wire: { tls: certs.pki.tlsFor(certs.b) } });
    ping(plain, secure);
    await eventually(() => tlsRejected(secure) > 0, { what: 'the plaintext dial to be refused' });
    const [line] = eventsOf(secure, 'wire.tls.rejected');
    expect(line).toMatchObject({ code: 'ERR_SSL_HTTP_REQUEST' });
    expect(String(line!.reason)).toMatch(/does not speak TLS/);
    // positive control: the same message from a TLS node arrives
    ping(control, secure);
    await eventually(() => secure.inbox.length === 1, { what: 'the TLS node message' });
    expect(secure.transport.inboundConnections).toBe(1);
  });

  it('nodes of another CA are refused in both directions, with a log line on both sides', async () => {
    const ours = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const alien = certs.pki.issue('alien', { ca: 'foreign' });
    const theirs = await node({
      wire: { tls: { caFile: certs.pki.foreignCaFile, certFile: alien.certFile, keyFile: alien.keyFile } },
    });
    // they dial us: they cannot verify our certificate, and they tell us so with an alert
    ping(theirs, ours);
    await eventually(() => eventsOf(theirs, 'wire.handshake.failed').length > 0, { what: 'their failure' });
    // OpenSSL sends the chain up to our CA, which they do not trust
    expect(eventsOf(theirs, 'wire.handshake.failed')[0]).toMatchObject({
      tls: expect.stringMatching(/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)$/),
      reason: expect.stringMatching(/not signed by the cluster CA/),
    });
    await eventually(() => eventsOf(ours, 'wire.tls.rejected').length > 0, { what: 'our refusal' });
    expect(String(eventsOf(ours, 'wire.tls.rejected')[0]!.reason)).toMatch(
      // an alert when it arrives before the hang-up, else the hang-up
      /unknown ca|may not trust this node's certificate/i,
    );
    // we dial them: we refuse their certificate
    ping(ours, theirs);
    await eventually(() => eventsOf(ours, 'wire.handshake.failed').length > 0, { what: 'our failure' });
    expect(eventsOf(ours, 'wire.handshake.failed')[0]).toMatchObject({
      tls: expect.stringMatching(/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)$/),
    });
    expect(ours.inbox).toHaveLength(0);
    expect(theirs.inbox).toHaveLength(0);
  });

  it('a dialer trusting our CA but presenting a certificate from another CA is refused by name', async () => {
    const ours = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const alien = certs.pki.issue('impostor', { ca: 'foreign' });
    const error = await wssDial(ours, alien);
    expect(error).toMatch(/ECONNRESET|socket hang up/);
    await eventually(() => eventsOf(ours, 'wire.tls.rejected').length > 0, { what: 'the refusal log line' });
    expect(eventsOf(ours, 'wire.tls.rejected')[0]).toMatchObject({
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      reason: expect.stringMatching(/not signed by the cluster CA.*CN=impostor/),
    });
    // positive control: the same dial with a cluster certificate completes the WebSocket upgrade
    expect(await wssDial(ours, certs.b)).toBe('open');
  });

  it('a dialer presenting no certificate is refused', async () => {
    const ours = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    expect(await wssDial(ours, undefined)).toMatch(/ECONNRESET|socket hang up/);
    await eventually(() => eventsOf(ours, 'wire.tls.rejected').length > 0, { what: 'the refusal log line' });
    expect(eventsOf(ours, 'wire.tls.rejected')[0]).toMatchObject({ code: 'NO_CLIENT_CERTIFICATE' });
    expect(tlsRejected(ours)).toBe(1);
  });

  it('an expired certificate is refused with a clear log line on both sides', async () => {
    const ours = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const expired = certs.pki.issue('stale', {
      notBefore: new Date('2020-01-01'),
      notAfter: new Date('2020-02-01'),
    });
    // a node cannot start with it…
    expect(() => resolveWireConfig({ tls: certs.pki.tlsFor(expired) })).toThrow(/stale-\d+\.crt: expired on/);
    // …but one whose certificate expired while it ran still dials with it
    const dialer = await node();
    const config = resolveWireConfig({ secret: 'x' });
    const secureContext = createSecureContext({
      ca: readFileSync(certs.pki.caFile),
      cert: readFileSync(expired.certFile),
      key: readFileSync(expired.keyFile),
    });
    const association = new Association(
      dialer.transport.system,
      config,
      addressOf(ours),
      'system',
      NodeIdentity.generate(),
      () => ({
        secureContext,
        rejectUnauthorized: true,
        checkServerIdentity: () => undefined,
      }),
    );
    try {
      association.enqueue(envelopeFor(ours));
      await eventually(() => eventsOf(ours, 'wire.tls.rejected').length > 0, { what: 'the refusal' });
      expect(eventsOf(ours, 'wire.tls.rejected')[0]).toMatchObject({
        code: 'CERT_HAS_EXPIRED',
        reason: expect.stringMatching(/expired.*CN=stale/),
      });
      await eventually(() => eventsOf(dialer, 'wire.handshake.failed').length > 0, {
        what: 'the dialer log',
      });
      expect(eventsOf(dialer, 'wire.handshake.failed')[0]).toMatchObject({
        tls: 'ECONNRESET',
        reason: expect.stringMatching(/refused this node's certificate/),
      });
    } finally {
      association.close();
    }
  });

  it('with the right certificates, the wrong cluster secret is still refused (HMAC second factor)', async () => {
    const ours = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    const wrong = await node({ wire: { tls: certs.pki.tlsFor(certs.b), secret: 'not-the-secret' } });
    ping(wrong, ours);
    await eventually(
      () => ours.transport.system.metrics.value('doyen_wire_rejected_total', { reason: 'bad-proof' }) > 0,
      { what: 'the bad proof to be refused' },
    );
    // the TLS handshake itself succeeded: the refusal came from the HMAC check above it
    expect(tlsRejected(ours)).toBe(0);
    expect(ours.inbox).toHaveLength(0);
    // positive control: the right secret with the same certificates gets through
    const right = await node({ wire: { tls: certs.pki.tlsFor(certs.b) } });
    ping(right, ours);
    await eventually(() => ours.inbox.length === 1, { what: 'the message with the right secret' });
  });

  it('verifyHostname refuses a peer whose certificate does not name the address it was dialled at', async () => {
    // certificates name 127.0.0.1 and localhost; this node is reached at 127.0.0.2
    const elsewhere = await node({ host: '127.0.0.2', wire: { tls: certs.pki.tlsFor(certs.b) } });
    const strict = await node({ wire: { tls: certs.pki.tlsFor(certs.a, { verifyHostname: true }) } });
    ping(strict, elsewhere);
    await eventually(() => eventsOf(strict, 'wire.handshake.failed').length > 0, { what: 'the failure' });
    expect(eventsOf(strict, 'wire.handshake.failed')[0]).toMatchObject({
      tls: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    // default (off): the CA is the anchor, the address is not checked
    const lenient = await node({ wire: { tls: certs.pki.tlsFor(certs.a) } });
    ping(lenient, elsewhere);
    await eventually(() => elsewhere.inbox.length === 1, { what: 'the message without hostname check' });
    // and with it on, a peer at a named address passes
    const named = await node({ wire: { tls: certs.pki.tlsFor(certs.b) } });
    ping(strict, named);
    await eventually(() => named.inbox.length === 1, { what: 'the message to 127.0.0.1' });
  });
});

describe('wire.tls.bindIdentity: a certificate speaks only for the hosts it names', () => {
  /** A wss client with certs.a (SAN IP:127.0.0.1, DNS:localhost) whose hello claims `host`. */
  function claimOverTls(n: LoggedNode, host: string): Promise<string> {
    return new Promise((resolve) => {
      const ws = new WebSocket(`wss://127.0.0.1:${n.transport.port}${WS_PATH}`, {
        ca: readFileSync(certs.pki.caFile),
        cert: readFileSync(certs.a.certFile),
        key: readFileSync(certs.a.keyFile),
        perMessageDeflate: false,
      });
      ws.once('message', (data: Buffer) => {
        const [, , nonce] = unplain.unpack(data) as [number, number, Buffer];
        ws.once('message', (reply: Buffer) => {
          resolve((unplain.unpack(reply) as unknown[])[0] === HandshakeKind.Welcome ? 'welcome' : 'other');
          ws.terminate();
        });
        const hello = helloFrame({ port: n.transport.port }, Buffer.from(nonce), {
          cluster: 'tls',
          secret: TEST_SECRET,
          host,
          port: 2552,
          uid: 'claimer',
        });
        ws.send(plain.pack(hello));
      });
      ws.once('close', (code) => resolve(`closed ${code}`));
      ws.once('error', () => {});
    });
  }

  it('refuses a hello whose host the certificate does not name; welcomes one it names', async () => {
    // verifyPeerAddress off, so the certificate is what binds (a node name, or behind NAT)
    const strict = await node({
      wire: { tls: { ...certs.pki.tlsFor(certs.b), bindIdentity: true }, verifyPeerAddress: false },
    });
    expect(await claimOverTls(strict, '10.9.9.9')).toBe(`closed ${CloseCode.wrongSource}`);
    expect(await claimOverTls(strict, 'node-7.example')).toBe(`closed ${CloseCode.wrongSource}`);
    expect(
      strict.transport.system.metrics.value('doyen_wire_rejected_total', { reason: 'certificate-mismatch' }),
    ).toBe(2);
    // positive controls: the hosts the certificate names are welcomed…
    expect(await claimOverTls(strict, 'localhost')).toBe('welcome');
    expect(await claimOverTls(strict, '127.0.0.1')).toBe('welcome');
    // …and without the option the same certificate may claim any host
    const lenient = await node({ wire: { tls: certs.pki.tlsFor(certs.b), verifyPeerAddress: false } });
    expect(await claimOverTls(lenient, '10.9.9.9')).toBe('welcome');
    // two bound nodes still talk: each certificate names 127.0.0.1, where each is dialled
    const other = await node({ wire: { tls: { ...certs.pki.tlsFor(certs.a), bindIdentity: true } } });
    ping(strict, other);
    ping(other, strict);
    await eventually(() => other.inbox.length === 1 && strict.inbox.length === 1, {
      what: 'messages both ways',
    });
  });
});

/** A bare wss client to a node's endpoint: resolves 'open' or the error's message. */
function wssDial(n: LoggedNode, cert: IssuedCertificate | undefined): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`wss://127.0.0.1:${n.transport.port}${WS_PATH}`, {
      ca: readFileSync(certs.pki.caFile),
      ...(cert ? { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } : {}),
      rejectUnauthorized: true,
    });
    ws.once('open', () => {
      ws.terminate();
      resolve('open');
    });
    ws.once('error', (e: Error & { code?: string }) => resolve(`${e.code ?? ''} ${e.message}`));
  });
}

function envelopeFor(n: LoggedNode): Envelope {
  return {
    to: '/user/inbox',
    toUid: n.transport.system.node.uid,
    from: undefined,
    message: { type: 'test.ping' },
  };
}
