// What a node says at start about who may join must be true: with mutual TLS and no secret only
// holders of a certificate from the cluster CA may; with neither, any process that reaches it.
import { describe, expect, it } from 'vitest';
import { eventsOf } from '../support/tls-nodes.js';
import { loggedNodesClosedAfterEach, twoNodeCertificates } from '../support/tls-suite.js';

const certs = twoNodeCertificates();
const node = loggedNodesClosedAfterEach();

describe('the admission a node logs at start (wire.no-secret)', () => {
  it('a TLS-only node logs that only certificate holders may join, never "any process may join"', async () => {
    const a = await node({ wire: { secret: '', tls: certs.pki.tlsFor(certs.a) } });
    const b = await node({ wire: { secret: '', tls: certs.pki.tlsFor(certs.b) } });
    for (const n of [a, b]) {
      expect(eventsOf(n, 'wire.no-secret')).toEqual([]);
      expect(JSON.stringify(n.logs)).not.toContain('any process');
      const [line, ...more] = eventsOf(n, 'wire.tls-only');
      expect(more).toEqual([]);
      expect(line).toMatchObject({ level: 30 });
      expect(line!.msg).toMatch(/only holders of a certificate from the cluster CA may join/);
    }
  });

  it('positive control: a node with neither secret nor TLS (--insecure) warns that any process may join', async () => {
    const open = await node({ wire: { secret: '' } });
    const [warning] = eventsOf(open, 'wire.no-secret');
    expect(warning).toMatchObject({ level: 40 });
    expect(warning!.msg).toMatch(/any process that can reach this port may join/);
    expect(eventsOf(open, 'wire.tls-only')).toEqual([]);
  });

  it('a node with a secret (with or without TLS) logs neither', async () => {
    for (const wire of [{}, { tls: certs.pki.tlsFor(certs.a) }]) {
      const n = await node({ wire });
      expect(eventsOf(n, 'wire.no-secret')).toEqual([]);
      expect(eventsOf(n, 'wire.tls-only')).toEqual([]);
    }
  });
});
