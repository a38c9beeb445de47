import { readFileSync } from 'node:fs';
import { DOWNING_MODES } from '@doyen/cluster';
import { InvalidConfigError, parseNodeAddress } from '@doyen/core';
import { COORDINATOR_MODES } from '@doyen/election';
import type { NodeConfig } from './node-config.js';
import { parseSeeds } from './node-config.js';

/**
 * The shape of a `--config` file, declared once: a typo (`httpport`, `clusterOptions.downnig`)
 * or a wrong type is refused with its path instead of being silently ignored.
 */
export type Shape =
  | { readonly kind: 'string' | 'number' | 'integer' | 'boolean' }
  | { readonly kind: 'enum'; readonly values: readonly string[] }
  | { readonly kind: 'array'; readonly of: Shape }
  | { readonly kind: 'object'; readonly fields: Readonly<Record<string, Shape>> }
  | { readonly kind: 'either'; readonly options: readonly Shape[] };

const str: Shape = { kind: 'string' };
const num: Shape = { kind: 'number' };
const int: Shape = { kind: 'integer' };
const bool: Shape = { kind: 'boolean' };
const oneOf = (...values: string[]): Shape => ({ kind: 'enum', values });
const arrayOf = (of: Shape): Shape => ({ kind: 'array', of });
const object = (fields: Record<string, Shape>): Shape => ({ kind: 'object', fields });
const either = (...options: Shape[]): Shape => ({ kind: 'either', options });

const sbr = object({
  role: str,
  quorumSize: int,
  downIfAlone: bool,
  stableAfterMs: num,
  downAllWhenUnstableMs: either(num, oneOf('off')),
  acquireLeaseDelayForMinorityMs: num,
  downRemovalMarginMs: num,
  // `lease` is an object with methods: the file's top-level `lease` builds it
});

const clusterOptions = object({
  downing: oneOf(...DOWNING_MODES),
  sbr,
  mayFormCluster: bool,
  joinTimeoutMs: num,
  maxJoinAttempts: num,
  joinBackoffMinMs: num,
  joinBackoffMaxMs: num,
  ackTimeoutMs: num,
  pullIntervalMs: num,
  leaderActionsIntervalMs: num,
  leaveTimeoutMs: num,
  minimumClusterSize: int,
  splitBrainProbeIntervalMs: num,
  heartbeatIntervalMs: num,
  failureDetector: object({
    kind: oneOf('phi-accrual', 'deadline'),
    threshold: num,
    maxSampleSize: int,
    minStdDeviationMs: num,
    acceptableHeartbeatPauseMs: num,
    firstHeartbeatEstimateMs: num,
    heartbeatIntervalMs: num,
  }),
  heartbeatRing: object({ allToAllMax: int, monitoredByNrOfMembers: int }),
});

const wire = object({
  // no `secret`: secrets never sit in a config file (DOYEN_SECRET or --secret-file)
  maxFrameBytes: int,
  batchBytes: int,
  systemQueueCapacity: int,
  userQueueCapacity: int,
  highWaterBytes: int,
  handshakeTimeoutMs: num,
  upgradeTimeoutMs: num,
  maxPendingUpgrades: int,
  maxPendingHandshakes: int,
  maxPendingHandshakesPerIp: int,
  maxHandshakeFrameBytes: int,
  maxNestingDepth: int,
  aliases: arrayOf(str),
  verifyPeerAddress: bool,
  reconnectMinMs: num,
  reconnectMaxMs: num,
  reconnectJitter: num,
  tls: object({ caFile: str, certFile: str, keyFile: str, verifyHostname: bool, reloadIntervalMs: num }),
});

const endpoints = { endpoints: arrayOf(str), ttlMs: num, timeoutMs: num };

/** Settable in a file: NodeConfig minus the secrets (`secret`, `httpToken`), plus `lease`. */
const fileFields = {
  cluster: str,
  host: str,
  port: int,
  bindHost: str,
  seeds: either(str, arrayOf(either(str, object({ host: str, port: int })))),
  name: str,
  roles: arrayOf(str),
  httpPort: int,
  httpHost: str,
  httpAllowedOrigins: arrayOf(str),
  httpTls: object({ certFile: str, keyFile: str }),
  logLevel: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'),
  clusterOptions,
  wire,
  onDowned: oneOf('restart', 'exit'),
  partitions: object({ count: int, backupCount: int, role: str }),
  coordinator: oneOf(...COORDINATOR_MODES),
  election: object({
    voteFile: str,
    etcd: object(endpoints),
    timing: object({
      heartbeatIntervalMs: num,
      leaderTimeoutMs: num,
      replyTimeoutMs: num,
      electionTimeoutMinMs: num,
      electionTimeoutMaxMs: num,
      tieBreakStepMs: num,
      inviteIntervalMs: num,
    }),
  }),
  lease: object(endpoints),
  insecure: bool,
  faultInjection: bool,
  inspect: either(bool, object({ url: str })),
} satisfies Partial<Record<Exclude<keyof NodeConfig, 'secret' | 'httpToken'> | 'lease', Shape>>;

export const CONFIG_FILE_SHAPE: Shape = object(fileFields);

/** Keys that look like settings but are secrets: said explicitly rather than "unknown". */
const SECRET_KEYS: Readonly<Record<string, string>> = {
  secret: 'use DOYEN_SECRET in the environment or --secret-file F',
  httpToken: 'use DOYEN_HTTP_TOKEN in the environment or --http-token-file F',
  'wire.secret': 'use DOYEN_SECRET in the environment or --secret-file F',
};

function describe(shape: Shape): string {
  switch (shape.kind) {
    case 'enum':
      return `one of ${shape.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'array':
      return `an array of ${describe(shape.of)}`;
    case 'object':
      return 'an object';
    case 'either':
      return shape.options.map(describe).join(' or ');
    case 'integer':
      return 'an integer';
    default:
      return `a ${shape.kind}`;
  }
}

function matches(value: unknown, shape: Shape): boolean {
  try {
    check(value, shape, '');
    return true;
  } catch {
    return false;
  }
}

/** Throws InvalidConfigError naming the first path that does not fit `shape`. */
export function check(value: unknown, shape: Shape, path: string): void {
  const wrong = () =>
    new InvalidConfigError(
      `${path || 'the config'}: expected ${describe(shape)}, got ${JSON.stringify(value)}`,
    );
  switch (shape.kind) {
    case 'string':
    case 'boolean':
      if (typeof value !== shape.kind) throw wrong();
      return;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw wrong();
      return;
    case 'integer':
      if (!Number.isInteger(value)) throw wrong();
      return;
    case 'enum':
      if (typeof value !== 'string' || !shape.values.includes(value)) throw wrong();
      return;
    case 'array':
      if (!Array.isArray(value)) throw wrong();
      for (const [i, item] of value.entries()) check(item, shape.of, `${path}[${i}]`);
      return;
    case 'either':
      if (!shape.options.some((option) => matches(value, option))) {
        // one option of the right container kind: its own, more precise message
        const near = shape.options.filter(
          (o) => (o.kind === 'array') === Array.isArray(value) && (o.kind === 'object') === isRecord(value),
        );
        if (near.length === 1 && (near[0]!.kind === 'array' || near[0]!.kind === 'object'))
          check(value, near[0]!, path);
        throw wrong();
      }
      return;
    case 'object': {
      if (!isRecord(value)) throw wrong();
      for (const [key, item] of Object.entries(value)) {
        const at = path ? `${path}.${key}` : key;
        const secret = SECRET_KEYS[at];
        if (secret) throw new InvalidConfigError(`${at}: secrets are not read from a config file: ${secret}`);
        const field = shape.fields[key];
        if (!field)
          throw new InvalidConfigError(
            `${at}: unknown setting (known${path ? ` in ${path}` : ''}: ${Object.keys(shape.fields).join(', ')})`,
          );
        check(item, field, at);
      }
      return;
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The settings a `--config` file holds, checked against CONFIG_FILE_SHAPE; seeds parsed. */
export function parseConfigFile(text: string, path: string): Partial<NodeConfig> & { lease?: FileLease } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new InvalidConfigError(`config ${path}: ${(error as Error).message}`);
  }
  try {
    check(raw, CONFIG_FILE_SHAPE, '');
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
