import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DiscoveryLookupError,
  DnsDiscovery,
  parseDnsServers,
  StaticDiscovery,
} from '../../packages/doyen/src/bootstrap/discovery.js';
import { validateNodeConfig } from '../../packages/doyen/src/node-config.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { runCli } from '../support/cli-process.js';
import { dnsmasqArgs, dnsmasqMissing, waitUntilDnsAnswers } from '../support/dnsmasq.js';

// Debian's dnsmasq on 127.0.0.1 at a free port, answering for `*.test` from its command line
const missing = dnsmasqMissing();
const canRun = missing.length === 0;
if (!canRun) console.warn(`DNS discovery tests skipped: missing ${missing.join(', ')}`);

describe.skipIf(!canRun)('DnsDiscovery against a real DNS server (dnsmasq)', () => {
  let dnsmasq: ChildProcess;
  let server: string;

  beforeAll(async () => {
    const [port] = await freePorts(1);
    server = `127.0.0.1:${port}`;
    dnsmasq = spawn(
      'dnsmasq',
      dnsmasqArgs({
        listen: '127.0.0.1',
        port: port!,
        hostRecords: [
          'svc.doyen.test,10.0.0.3',
          'svc.doyen.test,10.0.0.10',
          'svc.doyen.test,fd00::7',
          'a.pods.test,10.1.0.1',
          'b.pods.test,10.1.0.2',
        ],
        srvHosts: [
          '_management._tcp.doyen.test,b.pods.test,8600',
          '_management._tcp.doyen.test,a.pods.test,8558',
          '_management._tcp.doyen.test,10.1.0.9,8700',
        ],
      }),
      { stdio: 'ignore' },
    );
    await waitUntilDnsAnswers(server);
  });
  afterAll(() => {
    dnsmasq?.kill('SIGKILL');
  });

  it('A and AAAA records of a headless service, with the management port, in one shared order', async () => {
    const d = new DnsDiscovery({ service: 'svc.doyen.test', port: 8558, servers: [server] });
    expect(await d.lookup()).toEqual([
      { host: '10.0.0.3', port: 8558 },
      { host: '10.0.0.10', port: 8558 },
      { host: 'fd00::7', port: 8558 },
    ]);
  });

  it('SRV records: their targets resolved, their ports kept', async () => {
    const d = new DnsDiscovery({ service: '_management._tcp.doyen.test', port: 1, servers: [server] });
    expect(await d.lookup()).toEqual([
      { host: '10.1.0.1', port: 8558 },
      { host: '10.1.0.2', port: 8600 },
      { host: '10.1.0.9', port: 8700 },
    ]);
  });

  it('a name with no records is no contact points, not an error', async () => {
    const d = new DnsDiscovery({ service: 'nobody.doyen.test', port: 8558, servers: [server] });
    expect(await d.lookup()).toEqual([]);
  });

  it('a server that does not answer is a lookup error', async () => {
    const [silent] = await freePorts(1);
    const d = new DnsDiscovery({
      service: 'svc.doyen.test',
      port: 8558,
      servers: [`127.0.0.1:${silent}`],
      timeoutMs: 200,
    });
    await expect(d.lookup()).rejects.toBeInstanceOf(DiscoveryLookupError);
  });
});

describe('discovery settings', () => {
  const base = { cluster: 'c', host: '10.0.0.1', port: 2552, insecure: true } as const;
  const dns = { method: 'dns', service: 'doyen.test' } as const;

  it('static seeds are a discovery method of their own', async () => {
    expect(await new StaticDiscovery([{ host: 'h', port: 1 }]).lookup()).toEqual([{ host: 'h', port: 1 }]);
  });

  it('wants seeds or discovery, not both, and discovery wants fixed ports', () => {
    expect(() => validateNodeConfig({ ...base })).toThrow(/seed is required.*or discovery/);
    expect(() => validateNodeConfig({ ...base, seeds: [{ host: 'h', port: 1 }], discovery: dns })).toThrow(
      /exclude each other/,
    );
    expect(() => validateNodeConfig({ ...base, discovery: dns })).toThrow(/--http-port/);
    expect(() => validateNodeConfig({ ...base, port: 0, httpPort: 8558, discovery: dns })).toThrow(
      /fixed ports/,
    );
    expect(() =>
      validateNodeConfig({ ...base, httpPort: 8558, discovery: { ...dns, requiredContactPoints: 0 } }),
    ).toThrow(/requiredContactPoints/);
    expect(() =>
      validateNodeConfig({ ...base, httpPort: 8558, discovery: { ...dns, service: 'a b' } }),
    ).toThrow(/DNS name/);
    expect(validateNodeConfig({ ...base, httpPort: 8558, discovery: dns }).discovery).toEqual(dns);
  });

  it('--dns-server takes IP addresses with an optional port', () => {
    expect(parseDnsServers('10.0.0.2, 127.0.0.1:5353,[fd00::1]:53')).toEqual([
      '10.0.0.2',
      '127.0.0.1:5353',
      '[fd00::1]:53',
    ]);
    expect(() => parseDnsServers('dns.example:53')).toThrow(/IP address/);
  });

  it('the CLI refuses --discovery dns without --service, an unknown method, and seeds beside discovery', async () => {
    const common = [
      'node',
      '--cluster',
      'c',
      '--host',
      '127.0.0.1',
      '--port',
      '2552',
      '--http-port',
      '8558',
      '--insecure',
    ];
    for (const [args, message] of [
      [['--discovery', 'dns'], /needs --service/],
      [['--discovery', 'kubernetes'], /static or dns/],
      [['--discovery', 'dns', '--service', 'x.test', '--seeds', '127.0.0.1:2552'], /exclude each other/],
      [['--discovery', 'dns', '--service', 'x.test', '--required-contact-points', '0'], /positive/],
      [[], /--seeds or --discovery dns/],
    ] as const) {
      const cli = runCli([...common, ...args]);
      const { code } = await cli.exited;
      expect(code, cli.logs.join('\n')).toBe(2);
      expect(cli.logs.join('\n')).toMatch(message);
    }
  });
});
