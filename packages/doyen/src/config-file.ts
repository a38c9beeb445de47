import { readFileSync } from 'node:fs';
import { DOWNING_MODES } from '@doyen/cluster';
import { parseNodeAddress } from '@doyen/core';
import { COORDINATOR_MODES } from '@doyen/election';
import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { type ConfigProblem, ConfigProblemsError } from './config-problems.js';
import { SHUTDOWN_PHASES } from './coordinated-shutdown.js';
import { jsonErrorOffset, lineAndColumn } from './json-error-position.js';
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
  hostLease: object({ leaseMs: num(), pauseBoundMs: num(), maxClockDrift: num() }),
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
  console: object({ enabled: bool(), historyMs: num(), historyBytes: num() }),
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

/** A secret put in the file: said explicitly rather than "unknown setting". */
function secretProblems(value: unknown): ConfigProblem[] {
  if (!isRecord(value)) return [];
  const keys = [
    ...Object.keys(value),
    ...(isRecord(value.wire) ? Object.keys(value.wire).map((k) => `wire.${k}`) : []),
  ];
  return keys.flatMap((at) => {
    const secret = SECRET_KEYS[at];
    return secret
      ? [{ setting: at.split('.')[0]!, message: `${at}: secrets are not read from a config file: ${secret}` }]
      : [];
  });
}

/** The top-level setting a JSON pointer is under (`/seeds/0/port` → seeds); undefined for the root. */
function settingAt(pointer: string): string | undefined {
  const first = pointer.split('/')[1];
  return first === undefined || first === '' ? undefined : first.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Every way `value` (at `pointer`) misses `schema`, in words naming its path; empty when it fits. */
function schemaProblems(schema: TSchema, value: unknown, pointer: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (at: string, message: string) => {
    const setting = settingAt(at);
    problems.push(setting === undefined ? { message } : { setting, message });
  };
  for (const error of Value.Errors(schema, value)) {
    const at = pointer + error.path;
    const where = dotted(at) || 'the config';
    if (error.type === ValueErrorType.ObjectAdditionalProperties) {
      const parent = dotted(at.slice(0, at.lastIndexOf('/')));
      const known = Object.keys((error.schema.properties as TProperties | undefined) ?? {});
      // a secret key has its own message (secretProblems)
      if (!SECRET_KEYS[dotted(at)])
        add(at, `${where}: unknown setting (known${parent ? ` in ${parent}` : ''}: ${known.join(', ')})`);
      continue;
    }
    if (error.type === ValueErrorType.Union) {
      // one option of the value's own container kind: its own, more precise problems
      const near = (error.schema.anyOf as TSchema[]).filter(
        (o) =>
          (o.type === 'array') === Array.isArray(error.value) &&
          (o.type === 'object') === isRecord(error.value),
      );
      if (near.length === 1 && (near[0]!.type === 'array' || near[0]!.type === 'object')) {
        const deeper = schemaProblems(near[0]!, error.value, at);
        if (deeper.length > 0) {
          problems.push(...deeper);
          continue;
        }
      }
    }
    add(at, `${where}: expected ${describe(error.schema)}, got ${shownValue(error.value)}`);
  }
  return problems;
}

/** Every way a parsed config file misses the schema (secrets in it included); empty when it fits. */
export function configFileProblems(value: unknown): ConfigProblem[] {
  return [...secretProblems(value), ...schemaProblems(CONFIG_FILE_SCHEMA, value, '')];
}

/** Throws InvalidConfigError naming every path of `value` that does not fit the file's schema. */
export function checkConfigFile(value: unknown): void {
  const problems = configFileProblems(value);
  if (problems.length > 0) throw new ConfigProblemsError(problems);
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
  const offset = jsonErrorOffset(text);
  if (offset === text.length || offset < 0) return 'not valid JSON: it ends too early';
  const { line, column } = lineAndColumn(text, offset);
  return `not valid JSON at line ${line}, column ${column}`;
}

/** What a config file gave: its settings (without those refused), and its problems. */
export interface ConfigFileReading {
  /** Undefined when the file could not be read or parsed at all. */
  readonly settings: FileSettings | undefined;
  readonly problems: readonly ConfigProblem[];
}

/** The settings of a `--config` file's text, and every problem in it (each prefixed with the file). */
export function readConfigText(text: string, path: string): ConfigFileReading {
  const inFile = (p: ConfigProblem): ConfigProblem => ({ ...p, message: `config ${path}: ${p.message}` });
  let raw: unknown;
  const yaml = /\.ya?ml$/i.test(path);
  try {
    // YAML 1.2's core schema: plain data only (no custom tags), aliases bounded by the parser
    raw = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    return {
      settings: undefined,
      problems: [inFile({ message: syntaxProblem(error as Error, text, yaml) })],
    };
  }
  const problems = configFileProblems(raw).map(inFile);
  if (!isRecord(raw)) return { settings: undefined, problems };
  const refused = new Set(problems.map((p) => p.setting));
  const kept = Object.fromEntries(Object.entries(raw).filter(([key]) => !refused.has(key)));
  const seeds = kept.seeds;
  try {
    const settings: FileSettings = {
      ...(kept as FileSettings),
      ...(typeof seeds === 'string' ? { seeds: parseSeeds(seeds) } : {}),
      ...(Array.isArray(seeds)
        ? { seeds: seeds.map((s) => (typeof s === 'string' ? parseNodeAddress(s) : s)) }
        : {}),
    };
    return { settings, problems };
  } catch (error) {
    const { seeds: _refused, ...others } = kept;
    return {
      settings: others as FileSettings,
      problems: [...problems, inFile({ setting: 'seeds', message: `seeds: ${(error as Error).message}` })],
    };
  }
}

/** The settings a config file may hold: NodeConfig's (no secrets), and the etcd `lease` of lease-majority. */
export type FileSettings = Partial<NodeConfig> & { lease?: FileLease };

/** The settings a `--config` file holds, checked against CONFIG_FILE_SCHEMA (JSON, or YAML for .yaml/.yml); seeds parsed. */
export function parseConfigFile(text: string, path: string): FileSettings {
  const { settings, problems } = readConfigText(text, path);
  if (problems.length > 0 || settings === undefined) throw new ConfigProblemsError(problems);
  return settings;
}

/** `"lease": { "endpoints": ["http://127.0.0.1:2379"], "ttlMs": 5000 }` in the config file. */
export interface FileLease {
  readonly endpoints: string[];
  readonly ttlMs?: number;
  readonly timeoutMs?: number;
}

/** The settings and problems of the config file at `path` (a file that cannot be read is one problem). */
export function readConfigFileSettings(path: string): ConfigFileReading {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return {
      settings: undefined,
      problems: [{ message: `cannot read config ${path}: ${(error as Error).message}` }],
    };
  }
  return readConfigText(text, path);
}

/** The settings of the config file at `path`; throws InvalidConfigError naming every problem. */
export function readConfigFile(path: string): FileSettings {
  const { settings, problems } = readConfigFileSettings(path);
  if (problems.length > 0 || settings === undefined) throw new ConfigProblemsError(problems);
  return settings;
}
