import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InvalidConfigError, silentLogger } from '../../packages/core/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { resolveWireConfig, type WireTlsConfig, WsTransport } from '../../packages/wire/src/index.js';
import { type IssuedCertificate, TestPki } from '../support/certificates.js';
import { servedSerial } from '../support/tls-probe.js';
import { eventually } from '../support/wait.js';

let pki: TestPki;
let good: IssuedCertificate;
beforeAll(() => {
  pki = TestPki.create();
  good = pki.issue('good');
});
afterAll(() => pki.remove());

const refusal = (tls: WireTlsConfig) => {
  try {
    resolveWireConfig({ tls });
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidConfigError);
    return (error as Error).message;
  }
  throw new Error('the config was accepted');
};

describe('wire.tls validation', () => {
  it('accepts a certificate and key from the CA (positive control)', () => {
    expect(resolveWireConfig({ tls: pki.tlsFor(good) }).tls).toEqual(pki.tlsFor(good));
  });

  it('names the file that cannot be read', () => {
    const missing = join(pki.dir, 'missing.pem');
    expect(refusal({ ...pki.tlsFor(good), caFile: missing })).toBe(
      `wire.tls.caFile ${missing}: cannot read the file (ENOENT)`,
    );
    expect(refusal({ ...pki.tlsFor(good), keyFile: missing })).toMatch(/^wire\.tls\.keyFile .*missing\.pem/);
  });

  it('names the file that is not PEM', () => {
    const junk = join(pki.dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate');
    expect(refusal({ ...pki.tlsFor(good), certFile: junk })).toMatch(
      /^wire\.tls\.certFile .*junk\.pem: no PEM certificate/,
    );
    expect(refusal({ ...pki.tlsFor(good), caFile: junk })).toMatch(
      /^wire\.tls\.caFile .*junk\.pem: no PEM certificate/,
    );
    expect(refusal({ ...pki.tlsFor(good), keyFile: junk })).toMatch(
      /^wire\.tls\.keyFile .*junk\.pem: not an unencrypted PEM/,
    );
    const broken = join(pki.dir, 'broken.pem');
    writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(refusal({ ...pki.tlsFor(good), certFile: broken })).toMatch(
      /broken\.pem: certificate 1 is not a valid PEM/,
    );
  });

  it('refuses a key of another certificate, a certificate of another CA, expired and not yet valid ones', () => {
    const other = pki.issue('other');
    expect(refusal({ ...pki.tlsFor(good), keyFile: other.keyFile })).toMatch(
      /key does not belong to the certificate/,
    );
    const alien = pki.issue('alien', { ca: 'foreign' });
    expect(refusal(pki.tlsFor(alien))).toMatch(
      /issuer CN=doyen test foreign CA\) is not signed by a CA in wire\.tls\.caFile/,
    );
    const expired = pki.issue('expired', {
      notBefore: new Date('2020-01-01'),
      notAfter: new Date('2020-02-01'),
    });
    expect(refusal(pki.tlsFor(expired))).toMatch(/expired-\d+\.crt: expired on Feb {2}1 00:00:00 2020 GMT/);
    const future = pki.issue('future', { notBefore: new Date(Date.now() + 48 * 3_600_000) });
    expect(refusal(pki.tlsFor(future))).toMatch(/future-\d+\.crt: not valid before .* \(not yet valid\)/);
    expect(refusal({ ...pki.tlsFor(good), reloadIntervalMs: 0 })).toMatch(/reloadIntervalMs must be > 0/);
  });

  it('a node does not start with an expired certificate', async () => {
    const expired = pki.issue('expired', {
      notBefore: new Date('2020-01-01'),
      notAfter: new Date('2020-02-01'),
    });
    await expect(
      WsTransport.start({ cluster: 'c', host: '127.0.0.1', port: 0, wire: { tls: pki.tlsFor(expired) } }),
    ).rejects.toThrow(InvalidConfigError);
  });
});

describe('startNode with wire.tls', () => {
  const nodes: DoyenNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.close()));
  });

  it('passes it to the transport: two nodes form a cluster over mutual TLS', async () => {
    const ports = await freePorts(2);
    const second = pki.issue('second');
    for (const [i, cert] of [good, second].entries()) {
      nodes.push(
        await startNode(
          {
            cluster: 'tls-node',
            host: '127.0.0.1',
            port: ports[i]!,
            seeds: [{ host: '127.0.0.1', port: ports[0]! }],
            secret: 's',
            partitions: { count: 0 },
            wire: { tls: pki.tlsFor(cert) },
          },
          { logger: silentLogger() },
        ),
      );
    }
    await eventually(() => nodes.every((n) => n.cluster.reachableMemberCount() === 2), {
      what: 'two members',
      timeoutMs: 15_000,
    });
    expect(nodes.every((n) => n.transport.tls !== undefined)).toBe(true);
    expect(await servedSerial(ports[1]!, pki.caFile, good)).toBe(second.serial);
  });
});
