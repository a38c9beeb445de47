#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { JoinFailedError } from '@doyen/cluster';
import { DoyenError, formatNodeAddress, type Logger } from '@doyen/core';
import { type AppModule, AppModuleError, importAppModule } from './app-module.js';
import { nodeOptionsUsage, parseNodeArgs } from './cli-options.js';
import { compileCacheReport } from './compile-cache.js';
import { assembleNodeConfig, takeSecretsFromEnvironment } from './config-assembly.js';
// config-file.js (TypeBox, yaml: ~150 ms to load) is imported only when a file is given
import type { ConfigFileReading } from './config-file.js';
// the standalone console and inspector (child_process, their pages) are imported only for
// their own commands: a `doyen node` start does not pay for loading them
import { exitAfterLogs } from './log-drain.js';
import type { NodeConfig } from './node-config.js';
import { createNodeLogger } from './node-logger.js';
import type { SecretWarning } from './secret-sources.js';
import { startNode } from './start-node.js';

/** Exit codes a supervisor (systemd, Kubernetes) can act on. */
export const ExitCode = { ok: 0, failure: 1, usage: 2, joinFailed: 3, downed: 4 } as const;

const USAGE = `usage: doyen node --cluster NAME --host H --port P (--seeds H1:P1,H2:P2 | --discovery dns --service NAME --http-port Q)
                  (DOYEN_SECRET=S in the environment | --secret-file F
                   | --tls-ca F --tls-cert F --tls-key F | --insecure) [options]
       doyen inspector [--port 8080] [--host 127.0.0.1] [--allowed-origins https://a,...] [--open]
       doyen console --node http://HOST:PORT [--port 8090] [--host 127.0.0.1]
       doyen config-schema        (prints the JSON Schema of --config files)
       doyen --help | --version (-v, version)

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
with --http-port, GET /inspector serves a local live state chart page, and GET /console the
cluster console (every member's view, gathered over the wire; \`doyen console\` serves it for a
remote node).
--app (DOYEN_APP) imports an ES module and runs its \`setup(node, incarnation)\` for every
incarnation of the node (register message types, spawn actors, singletons there); its optional
\`config\` export holds defaults, below the --config file. Apps that start the node themselves
read the same settings with \`loadNodeConfig()\`.

Options of doyen node, each also an environment variable (boolean ones take true|false|1|0);
a flag wins over its variable, a variable over the --config file (JSON, or YAML when it ends
in .yaml/.yml), which is checked against the schema \`doyen config-schema\` prints: unknown
settings and wrong types are refused. Secrets are never read from the config file.
${nodeOptionsUsage()}`;

function fail(message: string, code: number = ExitCode.usage): never {
  process.stderr.write(`doyen: ${message}\n`);
  process.exit(code);
}

/** As `fail`, once the logger's buffered lines are written (a line logged just before is not lost). */
function failAfterLogs(logger: Logger, message: string, code: number = ExitCode.usage): Promise<never> {
  process.stderr.write(`doyen: ${message}\n`);
  return exitAfterLogs(logger, code);
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

/** Said after a usage error instead of the whole usage text. */
const HELP_HINT = 'doyen node --help lists the options';

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') say(USAGE);
  if (command === '--version' || command === '-v' || command === 'version') say(version());
  if (command === 'config-schema')
    say(JSON.stringify((await import('./config-file.js')).configFileJsonSchema(), null, 2));
  if (command === 'inspector') {
    const { INSPECTOR_USAGE, runInspectorServerCommand } = await import('./inspector/server-cli.js');
    if (rest.includes('--help') || rest.includes('-h')) say(INSPECTOR_USAGE);
    if (rest.includes('--version') || rest.includes('-v')) say(version());
    const logger = createNodeLogger();
    const server = await runInspectorServerCommand(rest, undefined, logger);
    if ('error' in server) return failAfterLogs(logger, server.error);
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        server.stop();
        void exitAfterLogs(logger, ExitCode.ok);
      });
    return;
  }
  if (command === 'console') {
    const { CONSOLE_USAGE, runConsoleCommand } = await import('./console/console-standalone.js');
    if (rest.includes('--help') || rest.includes('-h')) say(CONSOLE_USAGE);
    const standalone = await runConsoleCommand(rest);
    if ('error' in standalone) fail(standalone.error);
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => void standalone.stop().then(() => process.exit(ExitCode.ok)));
    return;
  }
  if (command === undefined) fail(USAGE);
  if (command !== 'node')
    fail(`unknown ${command.startsWith('-') ? 'option' : 'command'} ${command} (doyen --help lists them)`);
  // the flags once here for --help, --version, --app and --config; assembleNodeConfig reads them all
  let parsed: ReturnType<typeof parseNodeArgs>;
  try {
    parsed = parseNodeArgs(rest, process.env);
  } catch (error) {
    fail(`${(error as Error).message} (${HELP_HINT})`);
  }
  if (parsed.help) say(USAGE);
  if (parsed.version) say(version());
  // nothing this process runs needs the secrets in its environment, the app module included
  const env = takeSecretsFromEnvironment(process.env);
  let app: AppModule | undefined;
  if (parsed.values.app) {
    try {
      app = await importAppModule(parsed.values.app, parsed.sourceOf('app'));
    } catch (error) {
      if (error instanceof AppModuleError) fail(error.message);
      throw error;
    }
  }
  const file = parsed.values.config;
  const readFile: (path: string) => ConfigFileReading = file
    ? (await import('./config-file.js')).readConfigFileSettings
    : () => ({ settings: {}, problems: [] });
  let config: NodeConfig;
  let secretWarnings: readonly SecretWarning[];
  try {
    ({ config, warnings: secretWarnings } = assembleNodeConfig(
      { argv: rest, env, defaults: app?.config },
      readFile,
    ));
  } catch (error) {
    if (error instanceof DoyenError) fail(error.message);
    throw error;
  }
  if (app) config = { ...config, setup: app.setup };
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
      return failAfterLogs(logger, error.message, ExitCode.joinFailed);
    }
    if (error instanceof DoyenError) return failAfterLogs(logger, error.message);
    return failAfterLogs(logger, `could not start: ${(error as Error).message}`, ExitCode.failure);
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
  // every line written before the exit: pino's exit hook alone loses a chunk on a full pipe
  await exitAfterLogs(logger, reason === 'downed' ? ExitCode.downed : ExitCode.ok);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`doyen: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(ExitCode.failure);
});
