import { readFileSync } from 'node:fs';
import { DOWNING_MODES } from '@doyen/cluster';
import { InvalidConfigError, parseNodeAddress } from '@doyen/core';
import { COORDINATOR_MODES } from '@doyen/election';
import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { SHUTDOWN_PHASES } from './coordinated-shutdown.js';
import type { NodeConfig } from './node-config.js';
import { parseSeeds } from './node-config.js';
import { shownValue } from './shown-value.js';

/*
 * The shape of a `--config` file, declared once with TypeBox: the declaration is a JSON Schema
 * (published as `doyen/config.schema.json`, printed by `doyen config-schema`) and the validator.
 * TypeBox rather than zod or valibot because its schemas are JSON Schema as they stand: one
 * declaration is both what editors and CI check a file against and what the node enforces.
 * A typo (`httpport`, `clusterOptions.downnig`) or a wrong type is refused with its path.
 */

const str = () => Type.String();
const num = () => Type.Number();
const int = () => Type.Integer();
const bool = () => Type.Boolean();
const oneOf = (...values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));
const arrayOf = (of: TSchema) => Type.Array(of);
const either = (...options: TSchema[]) => Type.Union(options);
/** An object whose every field is optional and that refuses keys it does not declare. */
const object = <T extends TProperties>(fields: T) =>
  Type.Partial(Type.Object(fields, { additionalProperties: false }), { additionalProperties: false });

const sbr = object({
  role: str(),
  quorumSize: int(),
  downIfAlone: bool(),
  stableAfterMs: num(),
  downAllWhenUnstableMs: either(num(), oneOf('off')),
  acquireLeaseDelayForMinorityMs: num(),
  downRemovalMarginMs: num(),
  // `lease` is an object with methods: the file's top-level `lease` builds it
});

const clusterOptions = object({
  downing: oneOf(...DOWNING_MODES),
  sbr,
  mayFormCluster: bool(),
  joinTimeoutMs: num(),
  maxJoinAttempts: num(),
  joinBackoffMinMs: num(),
  joinBackoffMaxMs: num(),
  ackTimeoutMs: num(),
  pullIntervalMs: num(),
  leaderActionsIntervalMs: num(),
  leaveTimeoutMs: num(),
  minimumClusterSize: int(),
  splitBrainProbeIntervalMs: num(),
  pullsPerPeerPerSecond: num(),
  heartbeatIntervalMs: num(),
  firstHeartbeatGraceMs: num(),
  failureDetector: object({
    kind: oneOf('phi-accrual', 'deadline'),
    threshold: num(),
    maxSampleSize: int(),
    minStdDeviationMs: num(),
    acceptableHeartbeatPauseMs: num(),
    firstHeartbeatEstimateMs: num(),
    heartbeatIntervalMs: num(),
  }),
  heartbeatRing: object({ allToAllMax: int(), monitoredByNrOfMembers: int() }),
});

const wire = object({
  // no `secret`: secrets never sit in a config file (DOYEN_SECRET or --secret-file)
  maxFrameBytes: int(),
  batchBytes: int(),
  systemQueueCapacity: int(),
  userQueueCapacity: int(),
  highWaterBytes: int(),
  handshakeTimeoutMs: num(),
  upgradeTimeoutMs: num(),
  maxPendingUpgrades: int(),
  maxPendingHandshakes: int(),
  maxPendingHandshakesPerIp: int(),
  maxHandshakeFrameBytes: int(),
  maxNestingDepth: int(),
  aliases: arrayOf(str()),
  verifyPeerAddress: bool(),
  maxSystemFrameBytes: int(),
  inboundTurnBudgetMs: num(),
  maxInboundConnections: int(),
  maxInboundPerIdentity: int(),
  reservedHandshakeSlots: int(),
  reconnectMinMs: num(),
  reconnectMaxMs: num(),
  reconnectJitter: num(),
  tls: object({
    caFile: str(),
    certFile: str(),
    keyFile: str(),
    verifyHostname: bool(),
    bindIdentity: bool(),
    reloadIntervalMs: num(),
  }),
});

const endpoints = () => object({ endpoints: arrayOf(str()), ttlMs: num(), timeoutMs: num() });

/** Settable in a file: NodeConfig minus the secrets (`secret`, `httpToken`), plus `lease`. */
const fileFields = {
  cluster: str(),
  host: str(),
  port: int(),
  bindHost: str(),
  identityKeyFile: str(),
  seeds: either(str(), arrayOf(either(str(), object({ host: str(), port: int() })))),
  discovery: object({
    method: oneOf('dns'),
    service: str(),
    contactPointPort: int(),
    requiredContactPoints: int(),
    stableMarginMs: num(),
    intervalMs: num(),
    dnsServers: arrayOf(str()),
  }),
  name: str(),
  roles: arrayOf(str()),
  httpPort: int(),
  httpHost: str(),
  httpAllowedOrigins: arrayOf(str()),
  httpTls: object({ certFile: str(), keyFile: str() }),
  logLevel: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'),
  clusterOptions,
  wire,
  onDowned: oneOf('restart', 'exit'),
  partitions: object({ count: int(), backupCount: int(), role: str() }),
  coordinator: oneOf(...COORDINATOR_MODES),
  election: object({
    voteFile: str(),
    etcd: endpoints(),
    timing: object({
      heartbeatIntervalMs: num(),
      leaderTimeoutMs: num(),
      replyTimeoutMs: num(),
      electionTimeoutMinMs: num(),
      electionTimeoutMaxMs: num(),
      tieBreakStepMs: num(),
      inviteIntervalMs: num(),
    }),
  }),
  lease: endpoints(),
  insecure: bool(),
  faultInjection: bool(),
  inspect: either(bool(), object({ url: str() })),
  shutdown: object({
    phaseTimeoutsMs: object(Object.fromEntries(SHUTDOWN_PHASES.map((phase) => [phase, num()]))),
  }),
} satisfies Partial<Record<Exclude<keyof NodeConfig, 'secret' | 'httpToken'> | 'lease', TSchema>>;

/** The `--config` file's schema (a TypeBox schema, which is a JSON Schema). */
export const CONFIG_FILE_SCHEMA = object(fileFields);

/** The published JSON Schema of a `--config` file (draft-07), as `doyen config-schema` prints it. */
export function configFileJsonSchema(): Record<string, unknown> {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'doyen node --config file',
    description:
      'Settings of `doyen node` in a JSON or YAML file. Secrets are refused here: use DOYEN_SECRET / --secret-file and DOYEN_HTTP_TOKEN / --http-token-file.',
    ...(JSON.parse(JSON.stringify(CONFIG_FILE_SCHEMA)) as Record<string, unknown>),
  };
}

/** Keys that look like settings but are secrets: said explicitly rather than "unknown". */
const SECRET_KEYS: Readonly<Record<string, string>> = {
  secret: 'use DOYEN_SECRET in the environment or --secret-file F',
  httpToken: 'use DOYEN_HTTP_TOKEN in the environment or --http-token-file F',
  'wire.secret': 'use DOYEN_SECRET in the environment or --secret-file F',
};

/** What a schema accepts, in words. */
function describe(schema: TSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.anyOf)) {
    const options = schema.anyOf as TSchema[];
    if (options.every((o) => o.const !== undefined))
      return `one of ${options.map((o) => JSON.stringify(o.const)).join(', ')}`;
    return options.map(describe).join(' or ');
  }
  switch (schema.type) {
    case 'array':
      return `an array of ${describe(schema.items as TSchema)}`;
    case 'object':
      return 'an object';
    case 'integer':
      return 'an integer';
    default:
      return `a ${String(schema.type)}`;
  }
}

/** `/seeds/0/port` → `seeds[0].port`. */
function dotted(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out ? `.${key}` : key;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function refuseSecrets(value: unknown): void {
  if (!isRecord(value)) return;
  const keys = [
    ...Object.keys(value),
    ...(isRecord(value.wire) ? Object.keys(value.wire).map((k) => `wire.${k}`) : []),
  ];
  for (const at of keys) {
    const secret = SECRET_KEYS[at];
    if (secret) throw new InvalidConfigError(`${at}: secrets are not read from a config file: ${secret}`);
  }
}

/** The first way `value` (at `pointer`) misses `schema`, in words naming its path; undefined when it fits. */
function firstProblem(schema: TSchema, value: unknown, pointer: string): string | undefined {
  const first = Value.Errors(schema, value).First();
  if (!first) return undefined;
  const at = pointer + first.path;
  const where = dotted(at) || 'the config';
  if (first.type === ValueErrorType.ObjectAdditionalProperties) {
    const parent = dotted(at.slice(0, at.lastIndexOf('/')));
    const known = Object.keys((first.schema.properties as TProperties | undefined) ?? {});
    return `${where}: unknown setting (known${parent ? ` in ${parent}` : ''}: ${known.join(', ')})`;
  }
  if (first.type === ValueErrorType.Union) {
    // one option of the value's own container kind: its own, more precise problem
    const near = (first.schema.anyOf as TSchema[]).filter(
      (o) =>
        (o.type === 'array') === Array.isArray(first.value) &&
        (o.type === 'object') === isRecord(first.value),
    );
    if (near.length === 1 && (near[0]!.type === 'array' || near[0]!.type === 'object')) {
      const deeper = firstProblem(near[0]!, first.value, at);
      if (deeper) return deeper;
    }
  }
  return `${where}: expected ${describe(first.schema)}, got ${shownValue(first.value)}`;
}

/** Throws InvalidConfigError naming the first path of `value` that does not fit the file's schema. */
export function checkConfigFile(value: unknown): void {
  refuseSecrets(value);
  const problem = firstProblem(CONFIG_FILE_SCHEMA, value, '');
  if (problem) throw new InvalidConfigError(problem);
}

/**
 * A parse error without the file's text: V8 quotes the JSON around the error and yaml prints the
 * line under it, and that line may hold a secret. Where it is, by line and column, is enough.
 */
function syntaxProblem(error: Error, text: string, yaml: boolean): string {
  if (yaml) {
    const [first = 'not valid YAML'] = error.message.split('\n');
    return first.replace(/:$/, '');
  }
  const position = /at position (\d+)/.exec(error.message);
  if (position) {
    const before = text.slice(0, Number(position[1])).split('\n');
    return `not valid JSON at line ${before.length}, column ${before.at(-1)!.length + 1}`;
  }
  return /end of JSON input/.test(error.message) ? 'not valid JSON: it ends too early' : 'not valid JSON';
}

/** The settings a `--config` file holds, checked against CONFIG_FILE_SCHEMA (JSON, or YAML for .yaml/.yml); seeds parsed. */
export function parseConfigFile(text: string, path: string): Partial<NodeConfig> & { lease?: FileLease } {
  let raw: unknown;
  const yaml = /\.ya?ml$/i.test(path);
  try {
    // YAML 1.2's core schema: plain data only (no custom tags), aliases bounded by the parser
    raw = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new InvalidConfigError(`config ${path}: ${syntaxProblem(error as Error, text, yaml)}`);
  }
  try {
    checkConfigFile(raw);
  } catch (error) {
    throw new InvalidConfigError(`config ${path}: ${(error as Error).message}`);
  }
  const file = raw as Record<string, unknown>;
  const seeds = file.seeds;
  return {
    ...(file as Partial<NodeConfig>),
    ...(typeof seeds === 'string' ? { seeds: parseSeeds(seeds) } : {}),
    ...(Array.isArray(seeds)
      ? { seeds: seeds.map((s) => (typeof s === 'string' ? parseNodeAddress(s) : s)) }
      : {}),
  };
}

/** `"lease": { "endpoints": ["http://127.0.0.1:2379"], "ttlMs": 5000 }` in the config file. */
export interface FileLease {
  readonly endpoints: string[];
  readonly ttlMs?: number;
  readonly timeoutMs?: number;
}

export function readConfigFile(path: string): Partial<NodeConfig> & { lease?: FileLease } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidConfigError(`cannot read config ${path}: ${(error as Error).message}`);
  }
  return parseConfigFile(text, path);
}
