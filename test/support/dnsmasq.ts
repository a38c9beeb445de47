// Debian's dnsmasq as the real DNS server of the discovery tests and the bootstrap bench: one
// command line (authoritative for `*.test`, nothing forwarded, no system files read) and one
// check of what it needs.
import { execFileSync } from 'node:child_process';
import { Resolver } from 'node:dns/promises';

/** What running dnsmasq here lacks: the binary (package dnsmasq-base), and root (it drops privileges to nobody). */
export function dnsmasqMissing(): readonly string[] {
  const lack: string[] = [];
  try {
    execFileSync('dnsmasq', ['--version'], { stdio: 'ignore' });
  } catch {
    lack.push('dnsmasq (Debian package dnsmasq-base)');
  }
  if (process.getuid?.() !== 0) lack.push('root (dnsmasq drops privileges to nobody)');
  return lack;
}

export interface DnsmasqOptions {
  readonly listen: string;
  readonly port: number;
  /**
   * A directory of hosts files (`IP name` lines), re-read whenever a file in it changes and
   * answered with TTL 0, so a test can add and remove records while nodes look them up. It and
   * its files must be readable by nobody.
   */
  readonly hostsDir?: string;
  /** Fixed records: `--host-record=…` / `--srv-host=…` values as dnsmasq spells them. */
  readonly hostRecords?: readonly string[];
  readonly srvHosts?: readonly string[];
}

/** dnsmasq's arguments: in the foreground, answering only for `*.test` (others get NXDOMAIN, never forwarded). */
export function dnsmasqArgs(options: DnsmasqOptions): string[] {
  return [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--no-resolv',
    '--no-hosts',
    '--bind-interfaces',
    `--listen-address=${options.listen}`,
    `--port=${options.port}`,
    '--local=/test/',
    '--local-ttl=0',
    '--pid-file=',
    '--log-facility=-',
    ...(options.hostsDir ? [`--hostsdir=${options.hostsDir}`] : []),
    ...(options.hostRecords ?? []).map((r) => `--host-record=${r}`),
    ...(options.srvHosts ?? []).map((r) => `--srv-host=${r}`),
  ];
}

/**
 * Resolves once the server at `server` (`host:port`) answers: a name under `.test` that it does
 * not hold gets NXDOMAIN, which is an answer. Rejects after `timeoutMs`.
 */
export async function waitUntilDnsAnswers(server: string, timeoutMs = 10_000): Promise<void> {
  const probe = new Resolver({ timeout: 200, tries: 1 });
  probe.setServers([server]);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe.resolve4('probe.test').then(
      () => 'ok',
      (e: NodeJS.ErrnoException) => e.code ?? 'error',
    );
    if (answer === 'ok' || answer === 'ENOTFOUND') return;
    if (Date.now() > deadline) throw new Error(`the DNS server at ${server} did not answer (${answer})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
