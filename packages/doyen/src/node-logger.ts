import { hostname } from 'node:os';
import type { Logger } from '@doyen/core';
import { pino } from 'pino';

/**
 * Where a cluster secret or a management token could sit in a log line. Nothing logs them on
 * purpose (the config object is never logged raw); this catches a field that slips in later.
 */
export const REDACTED_LOG_PATHS: readonly string[] = [
  'secret',
  'token',
  'httpToken',
  'authorization',
  'password',
  '*.secret',
  '*.token',
  '*.httpToken',
  '*.authorization',
  '*.password',
  '*.*.secret',
  '*.*.httpToken',
  '*.*.authorization',
  '*.headers.authorization',
  '*.headers.cookie',
];

/**
 * The field numbering a process's log lines 1, 2, 3, … (over every logger this module makes in
 * it): a reader that finds a number skipped knows a line went missing on the way, rather than
 * taking its absence for a fact (issue 29: lost stop lines read as overlapping activations).
 * packages/testkit/src/node-process.ts counts the gaps under the same name.
 */
export const LOG_SEQ_FIELD = 'logSeq';

let linesLogged = 0;
/** pino calls it once per line written (not for lines below the level). */
const numberLine = () => ({ [LOG_SEQ_FIELD]: ++linesLogged });

/**
 * The logger a node gets when none is given: structured JSON with `pid`, `hostname`, the line's
 * number (`logSeq`) and, once known, the `node` (`host:port`) on every line; secrets redacted.
 */
export function createNodeLogger(
  options: { level?: string; destination?: NodeJS.WritableStream; node?: string } = {},
): Logger {
  const level = options.level ?? process.env.DOYEN_LOG_LEVEL ?? 'info';
  const base = { pid: process.pid, hostname: hostname(), ...(options.node ? { node: options.node } : {}) };
  const settings = { level, base, mixin: numberLine, redact: { paths: [...REDACTED_LOG_PATHS] } };
  return options.destination ? pino(settings, options.destination as never) : pino(settings);
}

/** `logger`, bound to `node` unless it already names one (a second `node` key would repeat in the JSON). */
export function withNodeField(logger: Logger, node: string): Logger {
  return logger.bindings().node === undefined ? logger.child({ node }) : logger;
}
