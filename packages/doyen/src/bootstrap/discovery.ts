import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { DoyenError, formatNodeAddress, type Logger, type NodeAddress, parseNodeAddress } from '@doyen/core';

/**
 * Where the other nodes are to be found. A method answers with contact points, each a
 * `host:port`: the seed list itself for `static` (cluster ports, joined directly, as before),
 * the management endpoints behind a DNS name for `dns` (probed by the bootstrap, which joins
 * what they answer). One interface, so a Kubernetes-API method can be added beside them.
 */
export interface ServiceDiscovery {
  /** `static` contact points are seeds to join; the others are management endpoints to probe. */
  readonly method: 'static' | 'dns';
  /** The contact points as of now, sorted and without duplicates; rejects when the lookup failed. */
  lookup(): Promise<readonly NodeAddress[]>;
}

/** A lookup that failed (DNS error other than "no such name" or "no records", timeout). */
export class DiscoveryLookupError extends DoyenError {
  constructor(message: string) {
    super(message, 'discovery-lookup');
  }
}

/** The seeds given on the command line or to startNode. */
export class StaticDiscovery implements ServiceDiscovery {
  readonly method = 'static';
  private readonly seeds: readonly NodeAddress[];

  constructor(seeds: readonly NodeAddress[]) {
    this.seeds = [...seeds];
  }

  async lookup(): Promise<readonly NodeAddress[]> {
    return this.seeds;
  }
}

export interface DnsDiscoveryOptions {
  /**
   * A headless service's name: its A and AAAA records are the contact points' hosts, with
   * `port` as their management port. A name of the form `_port._proto.name` is looked up as SRV
   * records instead, whose targets and ports are the contact points.
   */
  readonly service: string;
  /** The management port of A/AAAA contact points (every node serves it on the same port). */
  readonly port: number;
  /** DNS servers to ask (`host` or `host:port`); the system's resolver when absent. */
  readonly servers?: readonly string[];
  /** One query's time limit (the resolver retries once within it). */
  readonly timeoutMs?: number;
  /** Where a partial answer (A answered, AAAA refused, or the reverse) is noted, at debug. */
  readonly logger?: Logger;
}

/** Codes that mean "nothing is registered under this name right now": no contact points, not a failure. */
const EMPTY_ANSWERS = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

/**
 * Contact points from DNS: the records of a Kubernetes headless service (one A/AAAA record per
 * pod, or SRV records naming the pods and their port). Asked again on every lookup, so pods that
 * come and go are seen as the bootstrap probes.
 */
export class DnsDiscovery implements ServiceDiscovery {
  readonly method = 'dns';
  private readonly resolver: Resolver;

  constructor(private readonly options: DnsDiscoveryOptions) {
    const timeoutMs = options.timeoutMs ?? 2000;
    this.resolver = new Resolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
    if (options.servers && options.servers.length > 0) this.resolver.setServers([...options.servers]);
  }

  async lookup(): Promise<readonly NodeAddress[]> {
    const { service, port } = this.options;
    const found: NodeAddress[] = [];
    if (service.startsWith('_')) {
      for (const record of await this.ask(() => this.resolver.resolveSrv(service))) {
        for (const host of await this.hostsOf(record.name)) found.push({ host, port: record.port });
      }
    } else {
      for (const host of await this.hostsOf(service)) found.push({ host, port });
    }
    return sortedUnique(found);
  }

  /**
   * The addresses of a name (an IP literal is its own address). A and AAAA are asked
   * independently and whichever answers is used: a server that answers A and refuses AAAA
   * (dnsmasq with no upstream does) still names every pod. Fails only when both fail.
   */
  private async hostsOf(name: string): Promise<string[]> {
    if (isIP(name)) return [name];
    const [v4, v6] = await Promise.allSettled([
      this.ask(() => this.resolver.resolve4(name)),
      this.ask(() => this.resolver.resolve6(name)),
    ]);
    if (v4.status === 'rejected' && v6.status === 'rejected') throw v4.reason;
    const failed = v4.status === 'rejected' ? ['A', v4] : v6.status === 'rejected' ? ['AAAA', v6] : undefined;
    if (failed) {
      const [record, result] = failed as [string, PromiseRejectedResult];
      const error = (result.reason as Error).message;
      this.options.logger?.debug(
        { event: 'discovery.partial-answer', name, failed: record, error },
        `DNS: ${record} records of ${name} not available (${error}); using the other answer`,
      );
    }
    return [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  }

  private async ask<T>(query: () => Promise<T[]>): Promise<T[]> {
    try {
      return await query();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (EMPTY_ANSWERS.has(code)) return [];
      throw new DiscoveryLookupError(
        `DNS lookup of ${this.options.service} failed: ${code || (error as Error).message}`,
      );
    }
  }
}

/** Contact points in one order every node shares (host, then port), each once. */
export function sortedUnique(points: readonly NodeAddress[]): NodeAddress[] {
  const byKey = new Map(points.map((p) => [formatNodeAddress(p), p]));
  return [...byKey.values()].sort(compareContactPoints);
}

/**
 * The order that decides which contact point may form a new cluster: Akka Cluster Bootstrap's
 * "lowest address". IPv4 hosts compare numerically, then anything else by its text, then port.
 */
export function compareContactPoints(a: NodeAddress, b: NodeAddress): number {
  const ka = hostSortKey(a.host);
  const kb = hostSortKey(b.host);
  if (ka !== kb) return ka < kb ? -1 : 1;
  return a.port - b.port;
}

function hostSortKey(host: string): string {
  if (isIP(host) === 4)
    return `4:${host
      .split('.')
      .map((o) => o.padStart(3, '0'))
      .join('.')}`;
  return `${isIP(host) === 6 ? '6' : 'n'}:${host.toLowerCase()}`;
}

/** `host:port[,host:port…]` of `--dns-server` into the resolver's form; throws on a bad entry. */
export function parseDnsServers(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      if (isIP(s)) return s;
      const server = parseNodeAddress(s);
      if (!isIP(server.host)) throw new DiscoveryLookupError(`--dns-server ${s}: an IP address is expected`);
      return formatNodeAddress(server);
    });
}
