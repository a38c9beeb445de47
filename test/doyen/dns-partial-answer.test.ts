import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DiscoveryLookupError, DnsDiscovery } from '../../packages/doyen/src/bootstrap/discovery.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { type FakeDns, RCODE, startFakeDns } from '../support/fake-dns.js';
import { jsonLogCapture } from '../support/json-log.js';

/**
 * A DNS server that answers the A query and refuses the AAAA one (dnsmasq with no upstream does
 * exactly that): discovery uses the answer that came, and a cluster forms on it.
 */

const servers: FakeDns[] = [];
const nodes: DoyenNode[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function dns(options: Parameters<typeof startFakeDns>[0]): Promise<FakeDns> {
  const server = await startFakeDns(options);
  servers.push(server);
  return server;
}

const records = { 'svc.doyen.test': ['10.0.0.3', '10.0.0.10', 'fd00::7'] };

describe('DNS discovery with a partial answer', () => {
  it('A answered, AAAA refused: the A records are the contact points, the refusal noted at debug', async () => {
    const server = await dns({ records, refuse: { AAAA: RCODE.refused } });
    const { lines, logger } = jsonLogCapture();
    const d = new DnsDiscovery({ service: 'svc.doyen.test', port: 8558, servers: [server.server], logger });
    expect(await d.lookup()).toEqual([
      { host: '10.0.0.3', port: 8558 },
      { host: '10.0.0.10', port: 8558 },
    ]);
    expect(server.queries.AAAA).toBeGreaterThan(0);
    const partial = lines.filter((l) => l.event === 'discovery.partial-answer');
    expect(partial).toHaveLength(1);
    expect(partial[0]).toMatchObject({ level: 20, name: 'svc.doyen.test', failed: 'AAAA' });
    expect(String(partial[0]!.error)).toMatch(/EREFUSED/);
  });

  it('AAAA answered, A failing: the AAAA records are used', async () => {
    const server = await dns({ records, refuse: { A: RCODE.serverFailure } });
    const d = new DnsDiscovery({ service: 'svc.doyen.test', port: 8558, servers: [server.server] });
    expect(await d.lookup()).toEqual([{ host: 'fd00::7', port: 8558 }]);
  });

  it('positive control: both refused is a lookup error; both answered gives every address', async () => {
    const refusing = await dns({ records, refuse: { A: RCODE.refused, AAAA: RCODE.refused } });
    const d = new DnsDiscovery({ service: 'svc.doyen.test', port: 8558, servers: [refusing.server] });
    await expect(d.lookup()).rejects.toBeInstanceOf(DiscoveryLookupError);
    await expect(d.lookup()).rejects.toThrow(/EREFUSED/);
    const answering = await dns({ records });
    const all = new DnsDiscovery({ service: 'svc.doyen.test', port: 8558, servers: [answering.server] });
    expect((await all.lookup()).map((p) => p.host)).toEqual(['10.0.0.3', '10.0.0.10', 'fd00::7']);
  });

  it('a node bootstrapping through a server that refuses AAAA forms its cluster', async () => {
    const server = await dns({
      records: { 'one.doyen.test': ['127.0.0.1'] },
      refuse: { AAAA: RCODE.refused },
    });
    const [port, httpPort] = await freePorts(2);
    const { lines, logger } = jsonLogCapture('info');
    const node = await startNode(
      {
        cluster: 'partial-dns',
        host: '127.0.0.1',
        port: port!,
        httpPort: httpPort!,
        secret: randomBytes(16).toString('hex'),
        partitions: { count: 0 },
        discovery: {
          method: 'dns',
          service: 'one.doyen.test',
          dnsServers: [server.server],
          requiredContactPoints: 1,
          stableMarginMs: 200,
          intervalMs: 200,
        },
      },
      { logger },
    );
    nodes.push(node);
    await node.cluster.whenUp();
    expect(node.cluster.reachableMemberCount()).toBe(1);
    expect(lines.find((l) => l.event === 'bootstrap.form')).toMatchObject({
      contactPoints: [`127.0.0.1:${httpPort}`],
    });
    expect(lines.filter((l) => l.event === 'bootstrap.lookup-failed')).toEqual([]);
  }, 20_000);
});
