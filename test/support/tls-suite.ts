// What the mutual-TLS test files set up around their tests: a PKI for the file, and logged nodes
// closed after each test.
import { afterAll, beforeAll } from 'vitest';
import { type IssuedCertificate, TestPki } from './certificates.js';
import { startedClosedAfterEach } from './started-closed-after-each.js';
import { type LoggedNode, startLoggedNode } from './tls-nodes.js';

export interface TwoNodeCertificates {
  readonly pki: TestPki;
  /** Issued to `node-a`, then `node-b`, by the cluster CA. */
  readonly a: IssuedCertificate;
  readonly b: IssuedCertificate;
}

/**
 * A PKI made before the file's first test (openssl runs then, not at import) and removed after its
 * last, with two node certificates. Read the fields inside tests and hooks only.
 */
export function twoNodeCertificates(): TwoNodeCertificates {
  const fixture = {} as { pki: TestPki; a: IssuedCertificate; b: IssuedCertificate };
  beforeAll(() => {
    fixture.pki = TestPki.create();
    fixture.a = fixture.pki.issue('node-a');
    fixture.b = fixture.pki.issue('node-b');
  });
  afterAll(() => fixture.pki.remove());
  return fixture;
}

/** A starter of logged nodes (`startLoggedNode`) whose nodes are all closed after each test of the file. */
export function loggedNodesClosedAfterEach(): (
  options?: Parameters<typeof startLoggedNode>[0],
) => Promise<LoggedNode> {
  return startedClosedAfterEach(startLoggedNode);
}
