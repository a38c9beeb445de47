// How `doyen node` and an app calling loadNodeConfig() build a NodeConfig from its layers:
// flags > DOYEN_* environment > the config file > defaults (an app module's `config`). Every
// problem of every layer is collected and thrown at once (ConfigProblemsError).
//
// The file is read through `readFile`, given by the caller: config-file.ts (TypeBox, yaml) costs
// the CLI ~150 ms to load, so the CLI imports it only when a file is named (config-loader.ts,
// for apps, imports it directly).
import { defaultClusterConfig } from '@doyen/cluster';
import { EtcdLease } from '@doyen/lease';
import { parseDnsServers } from './bootstrap/discovery.js';
import { CliUsageError, type NodeOptionName, type OptionValues, parseNodeArgs } from './cli-options.js';
import type { ConfigFileReading, FileSettings } from './config-file.js';
import { type ConfigProblem, ConfigProblemsError } from './config-problems.js';
import { type NodeConfig, nodeConfigProblems, parseSeeds } from './node-config.js';
import { HTTP_TOKEN_ENV, resolveSecrets, SECRET_ENV, type SecretWarning } from './secret-sources.js';

export interface NodeConfigSources {
  /** `doyen node`'s flags (`--port 2552 --seeds …`). */
  readonly argv: readonly string[];
  /** The environment its DOYEN_* variables (and the secrets) are read from. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The config file when neither `--config` nor DOYEN_CONFIG names one. */
  readonly file?: string | undefined;
  /** The lowest layer: what the app brings (its module's `config`). */
  readonly defaults?: Partial<NodeConfig> | undefined;
}

export interface AssembledNodeConfig {
  readonly config: NodeConfig;
  /** To log once there is a logger (never with a secret in them). */
  readonly warnings: readonly SecretWarning[];
}

/**
 * The environment without the cluster secret and the management token, which are taken out of
 * `env` itself: nothing the process starts afterwards (a child, a crash reporter dumping its
 * environment) sees them. What `doyen node` does before it loads an app module.
 */
export function takeSecretsFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  const copy = { ...env };
  delete env[SECRET_ENV];
  delete env[HTTP_TOKEN_ENV];
  return copy;
}

/** The NodeConfig setting an option sets, where it is not the option's name in camelCase. */
const SETTING_OF: Partial<Record<NodeOptionName, readonly (keyof NodeConfig)[]>> = {
  seeds: ['seeds', 'discovery'],
  discovery: ['seeds', 'discovery'],
  service: ['seeds', 'discovery'],
  'required-contact-points': ['discovery'],
  'stable-margin-ms': ['discovery'],
  'discovery-interval-ms': ['discovery'],
  'contact-point-port': ['discovery'],
  'dns-server': ['discovery'],
  // without a way to authenticate peers the node reports "no cluster secret": refused, not missing
  secret: ['secret'],
  'secret-file': ['secret'],
  insecure: ['secret'],
  'tls-ca': ['wire', 'secret'],
  'tls-cert': ['wire', 'secret'],
  'tls-key': ['wire', 'secret'],
  'http-token-file': ['httpToken'],
  'http-tls-cert': ['httpTls'],
  'http-tls-key': ['httpTls'],
  downing: ['clusterOptions'],
  'quorum-size': ['clusterOptions'],
  'host-lease-ms': ['hostLease'],
  'pause-bound-ms': ['hostLease'],
  'vote-file': ['election'],
  etcd: ['election', 'coordinator'],
  'enable-fault-injection': ['faultInjection'],
  'inspect-url': ['inspect'],
};

function settingsOf(name: NodeOptionName): readonly string[] {
  return SETTING_OF[name] ?? [name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `higher` over `lower`, nested settings (wire, clusterOptions, …) merged key by key; seeds and
 * discovery exclude each other, so a layer giving one replaces the other too.
 */
export function mergeSettings<T extends object>(lower: T, higher: T): T {
  const out: Record<string, unknown> = { ...(lower as Record<string, unknown>) };
  const above = higher as Record<string, unknown>;
  if (above.seeds !== undefined || above.discovery !== undefined) {
    delete out.seeds;
    delete out.discovery;
  }
  for (const [key, value] of Object.entries(above)) {
    if (value === undefined) continue;
    const below = out[key];
    out[key] = isPlainObject(below) && isPlainObject(value) ? mergeSettings(below, value) : value;
  }
  return out as T;
}

/** Builds the config from its layers; throws ConfigProblemsError naming every problem. */
export function assembleNodeConfig(
  sources: NodeConfigSources,
  readFile: (path: string) => ConfigFileReading,
): AssembledNodeConfig {
  const problems: ConfigProblem[] = [];
  /** Settings a layer refused: the check of the whole does not report them again as missing. */
  const refused = new Set<string>();
  const problem = (settings: readonly string[], message: string) => {
    problems.push({ message });
    for (const s of settings) refused.add(s);
  };
  let parsed: ReturnType<typeof parseNodeArgs>;
  try {
    parsed = parseNodeArgs(sources.argv, sources.env);
  } catch (error) {
    // the flags could not be read at all: nothing else can be checked against them
    if (error instanceof CliUsageError) throw new ConfigProblemsError([error.message]);
    throw error;
  }
  const { values, sourceOf } = parsed;
  for (const p of parsed.problems) problem(settingsOf(p.name), p.message);
  const int = (name: NodeOptionName): number | undefined => {
    const v = values[name] as string | undefined;
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n)) {
      problem(settingsOf(name), `${sourceOf(name)} must be an integer, got ${v}`);
      return undefined;
    }
    return n;
  };

  const path = values.config ?? sources.file;
  const reading: ConfigFileReading = path === undefined ? { settings: {}, problems: [] } : readFile(path);
  for (const p of reading.problems) problem(p.setting === undefined ? [] : [p.setting], p.message);
  const base = mergeSettings<FileSettings>((sources.defaults ?? {}) as FileSettings, reading.settings ?? {});

  // each secret on its own, so that a problem with one is not taken for the other
  let warnings: readonly SecretWarning[] = [];
  let secret: string | undefined;
  let httpToken: string | undefined;
  try {
    const s = resolveSecrets({
      secretFlag: values.secret,
      secretFile: values['secret-file'],
      env: { [SECRET_ENV]: sources.env[SECRET_ENV] },
    });
    ({ secret, warnings } = s);
  } catch (error) {
    problem(['secret'], (error as Error).message);
  }
  try {
    ({ httpToken } = resolveSecrets({
      httpTokenFile: values['http-token-file'],
      env: { [HTTP_TOKEN_ENV]: sources.env[HTTP_TOKEN_ENV] },
    }));
  } catch (error) {
    problem(['httpToken'], (error as Error).message);
  }

  const tlsFlags = [values['tls-ca'], values['tls-cert'], values['tls-key']];
  const tls = tlsFlags.every((f) => f);
  if (tlsFlags.some((f) => f !== undefined) && !tls)
    problem(['wire', 'secret'], '--tls-ca, --tls-cert and --tls-key go together: give all three or none');
  const httpTlsFlags = [values['http-tls-cert'], values['http-tls-key']];
  const httpTls = httpTlsFlags.every((f) => f);
  if (httpTlsFlags.some((f) => f !== undefined) && !httpTls)
    problem(['httpTls'], '--http-tls-cert and --http-tls-key go together');
  let onDowned: 'restart' | 'exit' | undefined;
  const od = values['on-downed'];
  if (od === 'restart' || od === 'exit') onDowned = od;
  else if (od) problem(['onDowned'], `${sourceOf('on-downed')} must be restart or exit, got ${od}`);

  const port = int('port');
  const httpPort = int('http-port');
  const quorumSize = int('quorum-size');
  const partitions = int('partitions');
  const leaseMs = int('host-lease-ms');
  const pauseBoundMs = int('pause-bound-ms');
  const downing = values.downing ?? base.clusterOptions?.downing;
  const { lease, seeds: _seeds, discovery: _discovery, ...settings } = base;
  const when = <K extends keyof NodeConfig>(key: K, value: NodeConfig[K] | undefined) =>
    value === undefined ? {} : { [key]: value };
  const list = (text: string | undefined) => text?.split(',').filter(Boolean);
  // required settings may be missing here: nodeConfigProblems below says which
  const config = {
    ...settings,
    ...when('cluster', values.cluster ?? base.cluster),
    ...when('host', values.host ?? base.host),
    ...when('port', port ?? (values.port === undefined ? base.port : undefined)),
    ...contactPoints(
      values,
      base,
      sourceOf,
      int,
      problem,
      reading.settings !== undefined && !refused.has('seeds') && !refused.has('discovery'),
    ),
    ...when('name', values.name || undefined),
    ...when('roles', list(values.roles || undefined)),
    ...when('httpPort', httpPort),
    ...when('secret', secret),
    ...when('httpToken', httpToken),
    ...when('insecure', values.insecure),
    ...(tls
      ? {
          wire: {
            ...base.wire,
            tls: {
              ...base.wire?.tls,
              caFile: values['tls-ca']!,
              certFile: values['tls-cert']!,
              keyFile: values['tls-key']!,
            },
          },
        }
      : {}),
    ...when('httpHost', values['http-host'] || undefined),
    ...(values['http-allowed-origins'] !== undefined
      ? {
          httpAllowedOrigins: values['http-allowed-origins']
            .split(',')
            .map((o) => o.trim())
            .filter(Boolean),
        }
      : {}),
    ...(httpTls ? { httpTls: { certFile: values['http-tls-cert']!, keyFile: values['http-tls-key']! } } : {}),
    ...when('bindHost', values['bind-host'] || undefined),
    ...when('identityKeyFile', values['identity-key-file'] || undefined),
    ...when('logLevel', values['log-level'] || undefined),
    clusterOptions: {
      ...base.clusterOptions,
      ...(downing ? { downing: downing as 'auto' } : {}),
      ...(quorumSize !== undefined
        ? { sbr: { ...defaultClusterConfig.sbr, ...base.clusterOptions?.sbr, quorumSize } }
        : {}),
    },
    ...when('onDowned', onDowned),
    ...(partitions !== undefined ? { partitions: { ...base.partitions, count: partitions } } : {}),
    ...when('faultInjection', values['enable-fault-injection']),
    ...when('coordinator', values.coordinator as NodeConfig['coordinator']),
    ...(leaseMs !== undefined || pauseBoundMs !== undefined
      ? {
          hostLease: {
            ...base.hostLease,
            ...(leaseMs !== undefined ? { leaseMs } : {}),
            ...(pauseBoundMs !== undefined ? { pauseBoundMs } : {}),
          },
        }
      : {}),
    ...(values['vote-file'] || values.etcd
      ? {
          election: {
            ...base.election,
            ...(values['vote-file'] ? { voteFile: values['vote-file'] } : {}),
            ...(values.etcd ? { etcd: { ...base.election?.etcd, endpoints: list(values.etcd)! } } : {}),
          },
        }
      : {}),
    ...(values['inspect-url']
      ? { inspect: { url: values['inspect-url'] } }
      : values.inspect !== undefined
        ? { inspect: values.inspect }
        : {}),
  } as NodeConfig;
  const leaseMajority = config.clusterOptions?.downing === 'lease-majority';
  if (leaseMajority && !(lease && Array.isArray(lease.endpoints)))
    problem(
      ['clusterOptions'],
      '--downing lease-majority needs "lease": { "endpoints": [...] } in the --config file',
    );
  // a file that could not be read may hold any setting: checking the whole would guess
  if (reading.settings !== undefined)
    for (const p of nodeConfigProblems(config))
      if (p.setting === undefined || !refused.has(p.setting)) problems.push(p);
  if (problems.length > 0) throw new ConfigProblemsError(problems);
  if (!leaseMajority || !lease) return { config, warnings };
  const etcd = new EtcdLease({
    endpoints: lease.endpoints,
    cluster: config.cluster,
    name: 'sbr',
    ttlMs: lease.ttlMs ?? 5000,
    timeoutMs: lease.timeoutMs ?? 2000,
  });
  const sbr = { ...defaultClusterConfig.sbr, ...config.clusterOptions?.sbr, lease: etcd };
  return { config: { ...config, clusterOptions: { ...config.clusterOptions, sbr } }, warnings };
}

/**
 * `--seeds` (static discovery), or `--discovery dns --service NAME` and its settings; the lower
 * layers' `seeds` or `discovery` when neither flag is given (`complete`: every layer was read and
 * none had its contact points refused, so that none is missing them only in appearance).
 */
function contactPoints(
  values: OptionValues,
  base: FileSettings,
  sourceOf: (name: NodeOptionName) => string,
  int: (name: NodeOptionName) => number | undefined,
  problem: (settings: readonly string[], message: string) => void,
  complete: boolean,
): Pick<NodeConfig, 'seeds' | 'discovery'> {
  const both = ['seeds', 'discovery'];
  const method = values.discovery ?? (values.seeds ? 'static' : undefined);
  if (method === undefined) {
    if (base.seeds) return { seeds: base.seeds };
    if (base.discovery) return { discovery: base.discovery };
    // (a file that could not be read may hold them)
    if (complete) problem(both, '--seeds or --discovery dns --service NAME is required');
    return {};
  }
  if (method === 'static') {
    if (!values.seeds) {
      problem(both, '--discovery static needs --seeds H1:P1,H2:P2');
      return {};
    }
    try {
      return { seeds: parseSeeds(values.seeds) };
    } catch (error) {
      problem(both, (error as Error).message);
      return {};
    }
  }
  if (method !== 'dns') {
    problem(both, `${sourceOf('discovery')} must be static or dns, got ${method}`);
    return {};
  }
  if (values.seeds) {
    problem(both, '--seeds and --discovery dns exclude each other: give one of them');
    return {};
  }
  const service = values.service ?? base.discovery?.service;
  if (!service) problem(both, '--discovery dns needs --service NAME');
  const positive = (name: NodeOptionName) => {
    const n = int(name);
    if (n !== undefined && n <= 0) {
      problem(settingsOf(name), `${sourceOf(name)} must be positive, got ${n}`);
      return undefined;
    }
    return n;
  };
  const required = positive('required-contact-points');
  const stable = positive('stable-margin-ms');
  const interval = positive('discovery-interval-ms');
  const port = positive('contact-point-port');
  let dnsServers: string[] | undefined;
  try {
    dnsServers = values['dns-server'] ? parseDnsServers(values['dns-server']) : undefined;
  } catch (error) {
    problem(['discovery'], (error as Error).message);
  }
  if (!service) return {};
  return {
    discovery: {
      ...base.discovery,
      method: 'dns',
      service,
      ...(required !== undefined ? { requiredContactPoints: required } : {}),
      ...(stable !== undefined ? { stableMarginMs: stable } : {}),
      ...(interval !== undefined ? { intervalMs: interval } : {}),
      ...(port !== undefined ? { contactPointPort: port } : {}),
      ...(dnsServers ? { dnsServers } : {}),
    },
  };
}
