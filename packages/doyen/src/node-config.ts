import type { ClusterConfig } from '@doyen/cluster';
import { InvalidConfigError, type NodeAddress, parseNodeAddress } from '@doyen/core';
import { COORDINATOR_MODES, type CoordinatorMode, type ElectionTiming } from '@doyen/election';
import type { RememberOptions } from '@doyen/sharding';
import { checkHostLeaseSettings, type HostLeaseSettings } from '@doyen/singleton';
import type { WireConfig } from '@doyen/wire';
import { type ConfigProblem, ConfigProblemsError } from './config-problems.js';
import { SHUTDOWN_PHASES, type ShutdownPhase } from './coordinated-shutdown.js';
import type { DoyenNode } from './doyen-node.js';
import { shownValue } from './shown-value.js';

/** Everything `startNode` and `doyen node` take. */
export interface NodeConfig {
  /** Cluster name; nodes of other clusters are refused at the handshake. */
  readonly cluster: string;
  /** Address peers reach this node at. */
  readonly host: string;
  /** 0 picks a free port (only sensible when this node is not a seed). */
  readonly port: number;
  /** Interface to bind (defaults to `host`). */
  readonly bindHost?: string;
  /** The seed nodes to join (the first may form the cluster); or find them with `discovery`. */
  readonly seeds?: readonly NodeAddress[];
  /**
   * Find the other nodes through DNS instead of a seed list, and join or form the cluster by
   * Akka Cluster Bootstrap's rule (probe each contact point's management port; needs `httpPort`).
   */
  readonly discovery?: DiscoveryConfig;
  readonly name?: string;
  readonly roles?: readonly string[];
  /** HTTP management port; off when absent. */
  readonly httpPort?: number;
  /** Interface the HTTP management port binds (default 127.0.0.1: only local clients). */
  readonly httpHost?: string;
  /**
   * Bearer token that state-changing management routes (leave, down, fault injection) require.
   * Without one the management plane is read-only.
   */
  readonly httpToken?: string;
  /** Browser origins besides the server's own (`http://127.0.0.1:PORT`, …) allowed on the management port. */
  readonly httpAllowedOrigins?: readonly string[];
  /** Serve management over HTTPS with this certificate and key (PEM files). */
  readonly httpTls?: { readonly certFile: string; readonly keyFile: string };
  /** Shared cluster secret for the handshake. */
  readonly secret?: string;
  /**
   * A file holding this node's identity key (Ed25519, PKCS#8 PEM; created mode 0600 when absent)
   * for an identity that survives restarts: a restarted node proves it is the member it replaces
   * and is admitted at once. Absent: a new key per process, and a restart at the same address is
   * admitted once the old incarnation is unreachable.
   */
  readonly identityKeyFile?: string;
  /**
   * Run without a cluster secret and without TLS: any process that reaches the port may join.
   * A node refuses to start that way unless this says so.
   */
  readonly insecure?: boolean;
  readonly logLevel?: string;
  /** Cluster protocol tuning (downing, timeouts, failure detector). */
  readonly clusterOptions?: Partial<Omit<ClusterConfig, 'seeds' | 'name' | 'roles'>>;
  readonly wire?: Partial<WireConfig>;
  /**
   * What a node does when the split-brain resolver downs it: `restart` as a new incarnation
   * that rejoins through the members it knew (default), or `exit` (the CLI exits with code 4).
   */
  readonly onDowned?: 'restart' | 'exit';
  /**
   * Sends every machine of the node to Stately's inspector through `@statelyai/inspect`'s
   * WebSocket inspector server (`doyen inspector`): `true` for `ws://127.0.0.1:8080`, or its `url`.
   * The local page at `GET /inspector` of the HTTP endpoint needs no option.
   */
  readonly inspect?: boolean | { readonly url?: string };
  /** The fixed-partition allocator singleton: `count` 0 turns it off (default 271 partitions). */
  readonly partitions?: { readonly count?: number; readonly backupCount?: number; readonly role?: string };
  /**
   * Sharded entities: `remember` is the store where types registered with `remember: true` keep
   * their active ids (a `MemoryRememberStore` in one process, an `EtcdRememberStore` across
   * processes) and how fast a partition's new owner restarts them (`restartsPerSecond`, default 100).
   */
  readonly sharding?: { readonly remember?: RememberOptions };
  /**
   * Who coordinates (runs the singletons, the partition allocator among them): `emergent`, the
   * oldest member (default, availability first); `quorum`, the generation-clock leader, acting
   * only while a majority acknowledges it; `etcd`, only the holder of an etcd key's lease.
   */
  readonly coordinator?: CoordinatorMode;
  /**
   * The emergent coordinator's singleton lease (see README "Singletons"): a host runs singletons
   * only while a majority granted it the lease within `leaseMs`; a successor waits `pauseBoundMs`
   * after grants that expired. Ignored under an elected coordinator.
   */
  readonly hostLease?: HostLeaseSettings;
  readonly election?: {
    /** quorum: the file that keeps generation and vote across restarts (default under the OS temp dir). */
    readonly voteFile?: string;
    /** etcd: client URLs, the key's TTL (default 5000 ms) and the bound on every call (default 2000 ms). */
    readonly etcd?: {
      readonly endpoints: readonly string[];
      readonly ttlMs?: number;
      readonly timeoutMs?: number;
    };
    readonly timing?: Partial<ElectionTiming>;
  };
  /**
   * The cluster console at `GET /console` of the management endpoint (on unless `enabled` is
   * false): the serving node keeps what it gathered for `historyMs` (default 10 min) and at most
   * `historyBytes` (default 16 MiB) of JSON.
   */
  readonly console?: {
    readonly enabled?: boolean;
    readonly historyMs?: number;
    readonly historyBytes?: number;
  };
  /** Mount POST /fault/blackhole, /fault/heal and /fault/stall (tests and demos only; never in production). */
  readonly faultInjection?: boolean;
  /**
   * Runs for every incarnation of the node, once its actor system, cluster and singletons exist
   * (at the start, and again after a downing or a merge made it a new incarnation): spawn the
   * app's actors, register its singletons and cluster subscriptions here so they come back. A
   * setup that throws fails `startNode`, or stops a re-incarnated node (`node.setup-failed`).
   */
  readonly setup?: (node: DoyenNode, incarnation: IncarnationInfo) => void | Promise<void>;
  /** Coordinated shutdown: how long each phase may take (ms; see SHUTDOWN_PHASES). */
  readonly shutdown?: { readonly phaseTimeoutsMs?: Partial<Record<ShutdownPhase, number>> };
}

/** `discovery` of NodeConfig: a headless service's DNS records name the contact points. */
export interface DiscoveryConfig {
  readonly method: 'dns';
  /** The DNS name: A/AAAA records (with `contactPointPort`), or `_port._proto.name` for SRV records. */
  readonly service: string;
  /** The others' management port for A/AAAA records (default: this node's `httpPort`). */
  readonly contactPointPort?: number;
  /** Contact points that must be discovered before a new cluster forms (2; Akka's default). */
  readonly requiredContactPoints?: number;
  /** How long the discovered set must stay the same before a new cluster forms (5000 ms). */
  readonly stableMarginMs?: number;
  /** Discovery and probes run again this often (1000 ms). */
  readonly intervalMs?: number;
  /** DNS servers (`ip` or `ip:port`); the system's resolver when absent. */
  readonly dnsServers?: readonly string[];
}

export const DISCOVERY_DEFAULTS = {
  requiredContactPoints: 2,
  stableMarginMs: 5000,
  intervalMs: 1000,
} as const;

/** Which incarnation a `setup` call is for: 1 at the start, then one more per restart. */
export interface IncarnationInfo {
  readonly number: number;
  readonly reason: 'start' | 'downed' | 'merge';
}

export function parseSeeds(text: string): NodeAddress[] {
  const seeds = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map(parseNodeAddress);
  if (seeds.length === 0) throw new InvalidConfigError('--seeds needs at least one host:port');
  return seeds;
}

/** Throws InvalidConfigError (a ConfigProblemsError) naming every problem of `c`; returns it when there is none. */
export function validateNodeConfig(c: NodeConfig): NodeConfig {
  const problems = nodeConfigProblems(c);
  if (problems.length > 0) throw new ConfigProblemsError(problems);
  return c;
}

/** Every problem of a whole NodeConfig, each with the setting it is about; empty when it can start. */
export function nodeConfigProblems(c: NodeConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (setting: keyof NodeConfig, message: string) => problems.push({ setting, message });
  if (c.cluster === undefined) add('cluster', 'cluster is required (--cluster, DOYEN_CLUSTER)');
  else if (typeof c.cluster !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(c.cluster))
    add(
      'cluster',
      `cluster name ${typeof c.cluster === 'string' ? JSON.stringify(c.cluster) : shownValue(c.cluster)}: use letters, digits and - _ . (max 64)`,
    );
  if (!c.host) add('host', 'host is required (--host, DOYEN_HOST)');
  if (c.setup !== undefined && typeof c.setup !== 'function')
    add('setup', 'setup must be a function (node, incarnation) => void');
  for (const [phase, ms] of Object.entries(c.shutdown?.phaseTimeoutsMs ?? {})) {
    if (!SHUTDOWN_PHASES.includes(phase as ShutdownPhase))
      add('shutdown', `shutdown.phaseTimeoutsMs: unknown phase ${phase} (${SHUTDOWN_PHASES.join(', ')})`);
    else if (typeof ms !== 'number' || !(ms >= 0))
      add('shutdown', `shutdown.phaseTimeoutsMs.${phase}: expected a number of ms`);
  }
  if (c.hostLease !== undefined) {
    try {
      checkHostLeaseSettings(c.hostLease);
    } catch (error) {
      add('hostLease', (error as Error).message);
    }
  }
  for (const cap of ['historyMs', 'historyBytes'] as const) {
    const value = c.console?.[cap];
    if (value !== undefined && !(typeof value === 'number' && value > 0))
      add('console', `console.${cap} must be a number above 0, got ${shownValue(value)}`);
  }
  if (c.port === undefined) add('port', 'port is required (--port, DOYEN_PORT; 0: any free port)');
  else if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535)
    add('port', `bad port ${shownValue(c.port)}`);
  if (c.httpPort !== undefined && (!Number.isInteger(c.httpPort) || c.httpPort < 0 || c.httpPort > 65535))
    add('httpPort', `bad http port ${shownValue(c.httpPort)}`);
  if (typeof c.inspect === 'object' && c.inspect !== null && c.inspect.url !== undefined) {
    let protocol = '';
    try {
      protocol = new URL(c.inspect.url).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'ws:' && protocol !== 'wss:')
      add('inspect', `inspect url must be ws:// or wss://, got ${protocol ? 'another scheme' : 'no URL'}`);
  }
  if (c.coordinator !== undefined && !COORDINATOR_MODES.includes(c.coordinator))
    add(
      'coordinator',
      `coordinator must be one of ${COORDINATOR_MODES.join(', ')}, got ${shownValue(c.coordinator)}`,
    );
  if (c.coordinator === 'etcd' && !(c.election?.etcd?.endpoints && c.election.etcd.endpoints.length > 0))
    add('coordinator', "coordinator 'etcd' needs election.etcd.endpoints (etcd client URLs)");
  if (c.coordinator === 'quorum' && c.clusterOptions?.downing === 'auto')
    add(
      'coordinator',
      "coordinator 'quorum' needs a split-brain resolver strategy, not downing 'auto': under auto both sides of a partition shrink their membership and could each elect a majority",
    );
  contactPointProblems(c, add);
  managementProblems(c, add);
  clusterAuthProblems(c, add);
  return problems;
}

type AddProblem = (setting: keyof NodeConfig, message: string) => void;

/** The cluster secret a config carries (`secret`, or `wire.secret`); undefined when empty. */
export function clusterSecretOf(c: NodeConfig): string | undefined {
  const secret = c.secret ?? c.wire?.secret;
  return secret ? secret : undefined;
}

/** Said whenever a node has no way to authenticate its peers. */
export const NO_CLUSTER_AUTH_MESSAGE =
  'no cluster secret and no TLS: a node needs a cluster secret (DOYEN_SECRET in the environment, --secret-file F; `secret` with startNode), ' +
  'or mutual TLS (--tls-ca F --tls-cert F --tls-key F, or `wire.tls`), ' +
  'or an explicit --insecure (`insecure: true`) to let any process that reaches the port join';

function clusterAuthProblems(c: NodeConfig, add: AddProblem): void {
  const tls = c.wire?.tls;
  if (tls !== undefined) {
    const files = [tls.caFile, tls.certFile, tls.keyFile];
    if (!files.every((f) => typeof f === 'string' && f.length > 0))
      add(
        'wire',
        'wire.tls needs caFile, certFile and keyFile (--tls-ca, --tls-cert and --tls-key: all three or none)',
      );
  }
  if (clusterSecretOf(c) === undefined && tls === undefined && c.insecure !== true)
    add('secret', NO_CLUSTER_AUTH_MESSAGE);
}

/** Either seeds or discovery, never both; discovery needs the management port its probes use. */
function contactPointProblems(c: NodeConfig, add: AddProblem): void {
  const d = c.discovery;
  if (d === undefined) {
    if (!c.seeds || c.seeds.length === 0)
      add(
        'seeds',
        'at least one seed is required (use your own address to form), or discovery (--discovery dns --service NAME)',
      );
    return;
  }
  if (c.seeds && c.seeds.length > 0) {
    add('seeds', 'seeds and discovery exclude each other: give --seeds or --discovery dns');
    return;
  }
  if (d.method !== 'dns') {
    add('discovery', `discovery method ${String(d.method)}: only dns is known`);
    return;
  }
  if (typeof d.service !== 'string' || !/^[A-Za-z0-9_.-]{1,253}$/.test(d.service))
    add('discovery', `discovery service ${JSON.stringify(d.service)}: a DNS name is expected (--service)`);
  if (c.httpPort === undefined || c.httpPort === 0 || c.port === 0)
    add(
      'discovery',
      'discovery needs fixed ports: the management port (--http-port), where contact points are probed, and the cluster port (--port)',
    );
  const positive = (value: number | undefined, what: string, integer = false) => {
    if (value !== undefined && !(value > 0 && (!integer || Number.isInteger(value))))
      add(
        'discovery',
        `discovery ${what} must be a positive ${integer ? 'integer' : 'number'}, got ${value}`,
      );
  };
  positive(d.requiredContactPoints, 'requiredContactPoints (--required-contact-points)', true);
  positive(d.stableMarginMs, 'stableMarginMs (--stable-margin-ms)');
  positive(d.intervalMs, 'intervalMs (--discovery-interval-ms)');
  positive(d.contactPointPort, 'contactPointPort (--contact-point-port)', true);
}

function managementProblems(c: NodeConfig, add: AddProblem): void {
  if (c.httpHost !== undefined && c.httpHost.trim() === '')
    add('httpHost', 'httpHost (--http-host) must not be empty');
  if (c.httpToken !== undefined && c.httpToken.trim() === '')
    add('httpToken', 'the management token (DOYEN_HTTP_TOKEN, --http-token-file) is empty');
  for (const origin of c.httpAllowedOrigins ?? []) {
    try {
      normalizeOrigin(origin);
    } catch (error) {
      add('httpAllowedOrigins', (error as Error).message);
    }
  }
  const tls = c.httpTls;
  if (tls !== undefined && !(tls.certFile && tls.keyFile))
    add('httpTls', 'httpTls needs certFile and keyFile (--http-tls-cert and --http-tls-key together)');
}

/** `scheme://host[:port]` of an allowed origin, as browsers send it; throws on anything else. */
export function normalizeOrigin(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // reported below
  }
  const bare = url && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new InvalidConfigError(
      `allowed origin ${JSON.stringify(text)}: expected scheme://host[:port] (e.g. https://ops.example:8443), no path`,
    );
  return url.origin;
}
