#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { defaultClusterConfig, JoinFailedError } from '@doyen/cluster';
import { DoyenError, formatNodeAddress } from '@doyen/core';
import { EtcdLease } from '@doyen/lease';
import { parseDnsServers } from './bootstrap/discovery.js';
import { type NodeOptionName, nodeOptionsUsage, type OptionValues, parseNodeArgs } from './cli-options.js';
import { compileCacheReport } from './compile-cache.js';
// config-file.js (TypeBox, yaml: ~150 ms to load) is imported only when a file is given
import type { FileLease, readConfigFile } from './config-file.js';
import { INSPECTOR_USAGE, runInspectorServerCommand } from './inspector/server-cli.js';
import type { NodeConfig } from './node-config.js';
import { parseSeeds } from './node-config.js';
import { createNodeLogger } from './node-logger.js';
import { HTTP_TOKEN_ENV, resolveSecrets, SECRET_ENV, type SecretWarning } from './secret-sources.js';
import { startNode } from './start-node.js';

/** Exit codes a supervisor (systemd, Kubernetes) can act on. */
export const ExitCode = { ok: 0, failure: 1, usage: 2, joinFailed: 3, downed: 4 } as const;

const USAGE = `usage: doyen node --cluster NAME --host H --port P (--seeds H1:P1,H2:P2 | --discovery dns --service NAME --http-port Q)
                  (DOYEN_SECRET=S in the environment | --secret-file F
                   | --tls-ca F --tls-cert F --tls-key F | --insecure) [options]
       doyen inspector [--port 8080] [--host 127.0.0.1] [--allowed-origins https://a,...] [--open]
       doyen config-schema        (prints the JSON Schema of --config files)
       doyen --help | --version

Starts a cluster node. The node whose own address is the first seed may form the cluster.
With --discovery dns there is no seed list: the node finds contact points in the DNS records of
--service, probes their management port (GET /bootstrap/seed-nodes) and joins the cluster one of
them is in; only the lowest-addressed contact point forms a new cluster, once
--required-contact-points were found, stable for --stable-margin-ms, and all of them answered.
Peers prove the cluster secret (DOYEN_SECRET, or the trimmed content of --secret-file) or a
certificate of the --tls-ca; without either the node refuses to start unless --insecure.
--secret S still works but shows the secret to every local user in \`ps\`.
HTTP management binds 127.0.0.1 unless --http-host says otherwise; it is read-only unless a
management token is set (DOYEN_HTTP_TOKEN or --http-token-file): POST /cluster/leave,
/cluster/down/{address} and /fault/* need "Authorization: Bearer TOKEN" and
"Content-Type: application/json", and refuse browser requests from other origins.
SIGTERM (or POST /cluster/leave) leaves gracefully and exits 0; a failed join exits ${ExitCode.joinFailed};
a node downed by the split-brain resolver restarts as a new incarnation, or with
--on-downed exit, exits ${ExitCode.downed}. lease-majority needs an etcd: set "lease" in --config.
--coordinator quorum runs singletons on the generation-clock leader while it holds a majority
(votes kept in --vote-file); --coordinator etcd on the holder of an etcd key (--etcd URLs).
--inspect sends every machine to Stately's inspector through the server \`doyen inspector\` runs;
with --http-port, GET /inspector serves a local live state chart page.

Options of doyen node, each also an environment variable (boolean ones take true|false|1|0);
a flag wins over its variable, a variable over the --config file (JSON, or YAML when it ends
in .yaml/.yml), which is checked against the schema \`doyen config-schema\` prints: unknown
settings and wrong types are refused. Secrets are never read from the config file.
${nodeOptionsUsage()}`;

function fail(message: string, code: number = ExitCode.usage): never {
  process.stderr.write(`doyen: ${message}\n`);
  process.exit(code);
}

/** Help and version go to stdout and exit 0: asked for, not an error. */
function say(text: string): never {
  process.stdout.write(`${text}\n`);
  process.exit(ExitCode.ok);
}

function version(): string {
  // src/cli.ts, dist/cli.js and the bundle the bin runs, dist/cli-bundle.cjs, all sit one level
  // below the package root
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return `doyen ${pkg.version}`;
}

/**
 * `--seeds` (static discovery), or `--discovery dns --service NAME` and its settings; the config
 * file's `seeds` or `discovery` when neither flag is given. Exactly one of them is required.
 */
function contactPointsOf(
  values: OptionValues,
  file: Partial<NodeConfig>,
  int: (name: NodeOptionName, v: string | undefined) => number | undefined,
): Pick<NodeConfig, 'seeds' | 'discovery'> {
  const method = values.discovery ?? (values.seeds ? 'static' : undefined);
  if (method === undefined) {
    if (file.seeds) return { seeds: file.seeds };
    if (file.discovery) return { discovery: file.discovery };
    fail(`--seeds or --discovery dns --service NAME is required\n${USAGE}`);
  }
  if (method === 'static') {
    if (!values.seeds) fail('--discovery static needs --seeds H1:P1,H2:P2');
    return { seeds: parseSeeds(values.seeds) };
  }
  if (method !== 'dns') fail(`--discovery must be static or dns, got ${method}`);
  if (values.seeds) fail('--seeds and --discovery dns exclude each other: give one of them');
  const service = values.service ?? file.discovery?.service ?? fail('--discovery dns needs --service NAME');
  const positive = (name: NodeOptionName) => {
    const n = int(name, values[name] as string | undefined);
    if (n !== undefined && n <= 0) fail(`--${name} must be positive, got ${n}`);
    return n;
  };
  const required = positive('required-contact-points');
  const stable = positive('stable-margin-ms');
  const interval = positive('discovery-interval-ms');
  const port = positive('contact-point-port');
  return {
    discovery: {
      ...file.discovery,
      method: 'dns',
      service,
      ...(required !== undefined ? { requiredContactPoints: required } : {}),
      ...(stable !== undefined ? { stableMarginMs: stable } : {}),
      ...(interval !== undefined ? { intervalMs: interval } : {}),
      ...(port !== undefined ? { contactPointPort: port } : {}),
      ...(values['dns-server'] ? { dnsServers: parseDnsServers(values['dns-server']) } : {}),
    },
  };
}

async function withLease(config: NodeConfig, lease: FileLease | undefined): Promise<NodeConfig> {
  if (config.clusterOptions?.downing !== 'lease-majority') return config;
  if (!lease || !Array.isArray(lease.endpoints)) {
    fail('--downing lease-majority needs "lease": { "endpoints": [...] } in the --config file');
  }
  const etcd = new EtcdLease({
    endpoints: lease.endpoints,
    cluster: config.cluster,
    name: 'sbr',
    ttlMs: lease.ttlMs ?? 5000,
    timeoutMs: lease.timeoutMs ?? 2000,
  });
  const sbr = { ...defaultClusterConfig.sbr, ...config.clusterOptions.sbr, lease: etcd };
  return { ...config, clusterOptions: { ...config.clusterOptions, sbr } };
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h') say(USAGE);
  if (command === '--version') say(version());
  if (command === 'config-schema')
    say(JSON.stringify((await import('./config-file.js')).configFileJsonSchema(), null, 2));
  if (command === 'inspector') {
    if (rest.includes('--help') || rest.includes('-h')) say(INSPECTOR_USAGE);
    if (rest.includes('--version')) say(version());
    const server = await runInspectorServerCommand(rest, undefined, createNodeLogger());
    if ('error' in server) fail(server.error);
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        server.stop();
        process.exit(ExitCode.ok);
      });
    return;
  }
  if (command !== 'node') fail(command === undefined ? USAGE : `unknown command ${command}\n${USAGE}`);
  let parsed: ReturnType<typeof parseNodeArgs>;
  try {
    parsed = parseNodeArgs(rest, process.env);
  } catch (error) {
    fail(`${(error as Error).message}\n${USAGE}`);
  }
  if (parsed.help) say(USAGE);
  if (parsed.version) say(version());
  const { values, sourceOf } = parsed;
  const int = (name: NodeOptionName, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n)) fail(`${sourceOf(name)} must be an integer, got ${v}`);
    return n;
  };
  const onDowned = (v: string): 'restart' | 'exit' => {
    if (v !== 'restart' && v !== 'exit') fail(`${sourceOf('on-downed')} must be restart or exit, got ${v}`);
    return v;
  };
  let file: ReturnType<typeof readConfigFile>;
  try {
    file = values.config ? (await import('./config-file.js')).readConfigFile(values.config) : {};
  } catch (error) {
    fail((error as Error).message);
  }
  let config: NodeConfig;
  let secretWarnings: readonly SecretWarning[] = [];
  try {
    const secrets = resolveSecrets({
      secretFlag: values.secret,
      secretFile: values['secret-file'],
      httpTokenFile: values['http-token-file'],
      env: process.env,
    });
    secretWarnings = secrets.warnings;
    // nothing this process starts needs them: keep them out of children's environments
    delete process.env[SECRET_ENV];
    delete process.env[HTTP_TOKEN_ENV];
    const tlsFlags = [values['tls-ca'], values['tls-cert'], values['tls-key']];
    if (tlsFlags.some((f) => f !== undefined) && !tlsFlags.every((f) => f))
      fail('--tls-ca, --tls-cert and --tls-key go together: give all three or none');
    const httpTlsFlags = [values['http-tls-cert'], values['http-tls-key']];
    if (httpTlsFlags.some((f) => f !== undefined) && !httpTlsFlags.every((f) => f))
      fail('--http-tls-cert and --http-tls-key go together');
    const downing = values.downing ?? file.clusterOptions?.downing;
    config = {
      ...file,
      cluster: values.cluster ?? file.cluster ?? fail(`--cluster is required\n${USAGE}`),
      host: values.host ?? file.host ?? fail(`--host is required\n${USAGE}`),
      port: int('port', values.port) ?? file.port ?? fail(`--port is required\n${USAGE}`),
      ...contactPointsOf(values, file, int),
      ...(values.name ? { name: values.name } : {}),
      ...(values.roles ? { roles: values.roles.split(',').filter(Boolean) } : {}),
      ...(values['http-port'] ? { httpPort: int('http-port', values['http-port'])! } : {}),
      ...(secrets.secret !== undefined ? { secret: secrets.secret } : {}),
      ...(secrets.httpToken !== undefined ? { httpToken: secrets.httpToken } : {}),
      ...(values.insecure !== undefined ? { insecure: values.insecure } : {}),
      ...(values['tls-ca']
        ? {
            wire: {
              ...file.wire,
              tls: {
                ...file.wire?.tls,
                caFile: values['tls-ca'],
                certFile: values['tls-cert']!,
                keyFile: values['tls-key']!,
              },
            },
          }
        : {}),
      ...(values['http-host'] ? { httpHost: values['http-host'] } : {}),
      ...(values['http-allowed-origins'] !== undefined
        ? {
            httpAllowedOrigins: values['http-allowed-origins']
              .split(',')
              .map((o) => o.trim())
              .filter(Boolean),
          }
        : {}),
      ...(values['http-tls-cert']
        ? { httpTls: { certFile: values['http-tls-cert'], keyFile: values['http-tls-key']! } }
        : {}),
      ...(values['bind-host'] ? { bindHost: values['bind-host'] } : {}),
      ...(values['identity-key-file'] ? { identityKeyFile: values['identity-key-file'] } : {}),
      ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
      clusterOptions: {
        ...file.clusterOptions,
        ...(downing ? { downing: downing as 'auto' } : {}),
        ...(values['quorum-size']
          ? {
              sbr: {
                ...defaultClusterConfig.sbr,
                ...file.clusterOptions?.sbr,
                quorumSize: int('quorum-size', values['quorum-size'])!,
              },
            }
          : {}),
      },
      ...(values['on-downed'] ? { onDowned: onDowned(values['on-downed']) } : {}),
      ...(values.partitions !== undefined
        ? { partitions: { ...file.partitions, count: int('partitions', values.partitions)! } }
        : {}),
      ...(values['enable-fault-injection'] !== undefined
        ? { faultInjection: values['enable-fault-injection'] }
        : {}),
      ...(values.coordinator ? { coordinator: values.coordinator as 'quorum' } : {}),
      ...(values['vote-file'] || values.etcd
        ? {
            election: {
              ...file.election,
              ...(values['vote-file'] ? { voteFile: values['vote-file'] } : {}),
              ...(values.etcd
                ? { etcd: { ...file.election?.etcd, endpoints: values.etcd.split(',').filter(Boolean) } }
                : {}),
            },
          }
        : {}),
      ...(values['inspect-url']
        ? { inspect: { url: values['inspect-url'] } }
        : values.inspect !== undefined
          ? { inspect: values.inspect }
          : {}),
    };
    config = await withLease(config, file.lease);
  } catch (error) {
    fail((error as Error).message);
  }
  const logger = createNodeLogger({
    level: config.logLevel ?? 'info',
    ...(config.port !== 0 ? { node: formatNodeAddress({ host: config.host, port: config.port }) } : {}),
  });
  for (const w of secretWarnings) logger.warn({ event: w.event }, w.message);
  const compileCache = compileCacheReport();
  if (compileCache)
    logger.info({ event: 'node.compile-cache', ...compileCache }, `compile cache: ${compileCache.status}`);
  let node: Awaited<ReturnType<typeof startNode>>;
  try {
    node = await startNode(config, { logger });
  } catch (error) {
    if (error instanceof JoinFailedError) {
      logger.error({ event: 'node.join-failed', reason: error.message }, error.message);
      fail(error.message, ExitCode.joinFailed);
    }
    if (error instanceof DoyenError) fail(error.message);
    fail(`could not start: ${(error as Error).message}`, ExitCode.failure);
  }
  const http = node.http ? ` (http on ${node.http.port})` : '';
  logger.info({ event: 'node.started' }, `node up${http}`);
  const onSignal = (signal: string) => {
    logger.info({ event: 'node.signal', signal }, `${signal}: leaving gracefully`);
    void node.shutdown(signal);
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  const reason = await node.closed;
  logger.info({ event: 'node.stopped', reason }, `node stopped (${reason})`);
  logger.flush?.();
  process.exit(reason === 'downed' ? ExitCode.downed : ExitCode.ok);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`doyen: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(ExitCode.failure);
});
