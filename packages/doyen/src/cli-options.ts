import { parseArgs } from 'node:util';
import { DoyenError } from '@doyen/core';
import { SECRET_ENV } from './secret-sources.js';
import { shownValue } from './shown-value.js';

/** A bad flag or environment variable: the CLI exits 2 with this message. */
export class CliUsageError extends DoyenError {
  constructor(message: string) {
    super(message, 'cli-usage');
  }
}

export interface NodeOption {
  readonly type: 'string' | 'boolean';
  /** The value's placeholder in the usage text (string options). */
  readonly arg?: string;
  readonly help: string;
}

/**
 * Every `doyen node` flag, once: parseArgs, the environment (`DOYEN_` + the flag upper-cased,
 * `-` → `_`) and the usage text are all derived from this table, so no flag misses its variable.
 */
export const NODE_OPTIONS = {
  cluster: { type: 'string', arg: 'NAME', help: 'cluster name (required)' },
  host: { type: 'string', arg: 'H', help: 'address peers reach this node at (required)' },
  port: { type: 'string', arg: 'P', help: 'cluster port (required; 0: any free port)' },
  seeds: {
    type: 'string',
    arg: 'H1:P1,H2:P2',
    help: 'seed nodes; the first may form the cluster (or use --discovery dns)',
  },
  discovery: { type: 'string', arg: 'static|dns', help: 'how contact points are found (static: --seeds)' },
  service: {
    type: 'string',
    arg: 'NAME',
    help: 'dns: a headless service name (A/AAAA), or _port._tcp.NAME for SRV',
  },
  'required-contact-points': {
    type: 'string',
    arg: 'N',
    help: 'dns: contact points seen before a new cluster forms (2)',
  },
  'stable-margin-ms': {
    type: 'string',
    arg: 'MS',
    help: 'dns: how long the contact points stay the same first (5000)',
  },
  'discovery-interval-ms': { type: 'string', arg: 'MS', help: 'dns: re-resolve and probe this often (1000)' },
  'contact-point-port': {
    type: 'string',
    arg: 'Q',
    help: "dns with A records: the others' management port (--http-port)",
  },
  'dns-server': { type: 'string', arg: 'H[:P]', help: 'dns: ask this server (default: the system resolver)' },
  name: { type: 'string', arg: 'N', help: 'name shown in /cluster' },
  roles: { type: 'string', arg: 'a,b', help: 'roles of this node' },
  'bind-host': { type: 'string', arg: 'B', help: 'interface to bind (default: --host)' },
  config: { type: 'string', arg: 'file.json', help: 'settings file (startNode fields; checked)' },
  app: {
    type: 'string',
    arg: 'app.js',
    help: 'an ES module exporting setup(node, incarnation) (and config defaults) to run',
  },
  secret: { type: 'string', arg: 'S', help: 'cluster secret (on argv `ps` shows it: prefer the variable)' },
  'secret-file': { type: 'string', arg: 'F', help: 'file holding the cluster secret' },
  'identity-key-file': {
    type: 'string',
    arg: 'F',
    help: "this node's identity key (Ed25519 PEM; made if absent): a stable identity",
  },
  'tls-ca': { type: 'string', arg: 'F', help: 'mutual TLS between nodes: the cluster CA (PEM)' },
  'tls-cert': { type: 'string', arg: 'F', help: "this node's certificate (PEM)" },
  'tls-key': { type: 'string', arg: 'F', help: 'its private key (PEM)' },
  insecure: { type: 'boolean', help: 'run without secret or TLS: anyone reaching the port may join' },
  'http-port': { type: 'string', arg: 'Q', help: 'HTTP management port (off when absent)' },
  'http-host': { type: 'string', arg: 'H', help: 'interface the management port binds (127.0.0.1)' },
  'http-token-file': { type: 'string', arg: 'F', help: 'management token file (or DOYEN_HTTP_TOKEN)' },
  'http-allowed-origins': { type: 'string', arg: 'URL,URL', help: 'browser origins allowed besides its own' },
  'http-tls-cert': { type: 'string', arg: 'F', help: 'serve management over HTTPS: certificate' },
  'http-tls-key': { type: 'string', arg: 'F', help: 'and its key' },
  downing: {
    type: 'string',
    arg: 'STRATEGY',
    help: 'keep-majority|static-quorum|keep-oldest|down-all|lease-majority|auto|manual',
  },
  'quorum-size': { type: 'string', arg: 'N', help: 'static-quorum: smallest side that keeps running' },
  'on-downed': { type: 'string', arg: 'restart|exit', help: 'what a downed node does (restart)' },
  partitions: { type: 'string', arg: 'N', help: 'partition count (271; 0: no partition allocator)' },
  'host-lease-ms': {
    type: 'string',
    arg: 'MS',
    help: 'emergent: a singleton host runs while a majority granted its lease this recently (1000)',
  },
  'pause-bound-ms': {
    type: 'string',
    arg: 'MS',
    help: 'emergent: the longest stall (GC, SIGSTOP) singletons stay safe under (500)',
  },
  coordinator: { type: 'string', arg: 'emergent|quorum|etcd', help: 'who runs the singletons' },
  'vote-file': { type: 'string', arg: 'F', help: 'quorum: where generation and vote are kept' },
  etcd: { type: 'string', arg: 'URL,URL', help: 'etcd: client URLs' },
  'enable-fault-injection': {
    type: 'boolean',
    help: 'POST /fault/blackhole, /fault/heal, /fault/stall (tests, demos)',
  },
  'log-level': { type: 'string', arg: 'LEVEL', help: 'fatal|error|warn|info|debug|trace|silent (info)' },
  inspect: { type: 'boolean', help: "send machines to Stately's inspector (doyen inspector)" },
  'inspect-url': { type: 'string', arg: 'URL', help: 'inspector server (ws://127.0.0.1:8080)' },
} as const satisfies Record<string, NodeOption>;

export type NodeOptionName = keyof typeof NODE_OPTIONS;

/** `--http-port` → `DOYEN_HTTP_PORT`. */
export function envNameOf(flag: string): string {
  return `DOYEN_${flag.toUpperCase().replaceAll('-', '_')}`;
}

export type OptionValues = {
  -readonly [K in NodeOptionName]?: (typeof NODE_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

export interface ParsedNodeArgs {
  readonly values: OptionValues;
  /** Where a value came from, for messages: `--port` or `DOYEN_PORT`. */
  readonly sourceOf: (name: NodeOptionName) => string;
  readonly help: boolean;
  readonly version: boolean;
  /** Variables whose value was refused (left out of `values`): reported with the config's other problems. */
  readonly problems: readonly { readonly name: NodeOptionName; readonly message: string }[];
}

/**
 * `doyen node` arguments, then the environment for each flag not on argv (flag > environment;
 * the config file comes after both). An empty variable counts as unset. `--secret`'s twin
 * DOYEN_SECRET is left to resolveSecrets: it must not look like the flag (which warns). Bad
 * arguments throw CliUsageError (one line, naming the flag); bad variables are `problems`.
 */
export function parseNodeArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedNodeArgs {
  let parsed: Record<string, string | boolean | undefined>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: {
        ...NODE_OPTIONS,
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new CliUsageError(argumentProblem(error as Error & { code?: string }));
  }
  const values: Record<string, string | boolean> = {};
  const fromEnv = new Set<string>();
  const problems: { name: NodeOptionName; message: string }[] = [];
  for (const [name, option] of Object.entries(NODE_OPTIONS) as [NodeOptionName, NodeOption][]) {
    const given = parsed[name];
    if (given !== undefined) {
      values[name] = given;
      continue;
    }
    const variable = envNameOf(name);
    if (variable === SECRET_ENV) continue;
    const text = env[variable];
    if (text === undefined || text === '') continue;
    fromEnv.add(name);
    if (option.type === 'string') {
      values[name] = text;
      continue;
    }
    const t = text.trim().toLowerCase();
    if (t === 'true' || t === '1') values[name] = true;
    else if (t === 'false' || t === '0') values[name] = false;
    else problems.push({ name, message: `${variable} must be true, false, 1 or 0, got ${shownValue(text)}` });
  }
  return {
    values: values as OptionValues,
    sourceOf: (name) => (fromEnv.has(name) ? envNameOf(name) : `--${name}`),
    help: parsed.help === true,
    version: parsed.version === true,
    problems,
  };
}

/**
 * parseArgs' error in one line: an unknown flag by its name only (`--secrte=S` must not show S),
 * without its advice about positionals, which does not apply to `doyen node`.
 */
function argumentProblem(error: Error & { code?: string }): string {
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /'([^']*)'/.exec(error.message)?.[1]?.split('=')[0];
    return option ? `unknown option ${option}` : 'unknown option';
  }
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return 'doyen node takes no arguments besides its options (--name value)';
  return error.message.split('\n')[0]!.replace(/\.$/, '');
}

/** The option list of the usage text: flag, its variable, what it does. */
export function nodeOptionsUsage(): string {
  const rows = Object.entries(NODE_OPTIONS).map(([name, o]: [string, NodeOption]) => [
    `--${name}${o.arg ? ` ${o.arg}` : ''}`,
    envNameOf(name),
    o.help,
  ]);
  const w0 = Math.max(...rows.map((r) => r[0]!.length));
  const w1 = Math.max(...rows.map((r) => r[1]!.length));
  return rows.map(([f, e, h]) => `  ${f!.padEnd(w0)}  ${e!.padEnd(w1)}  ${h}`).join('\n');
}
