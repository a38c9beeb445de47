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
 * The logger a node gets when none is given: structured JSON with `pid`, `hostname` and, once
 * known, the `node` (`host:port`) on every line; secrets redacted.
 */
export function createNodeLogger(
  options: { level?: string; destination?: NodeJS.WritableStream; node?: string } = {},
): Logger {
  const level = options.level ?? process.env.DOYEN_LOG_LEVEL ?? 'info';
  const base = { pid: process.pid, hostname: hostname(), ...(options.node ? { node: options.node } : {}) };
  const settings = { level, base, redact: { paths: [...REDACTED_LOG_PATHS] } };
  return options.destination ? pino(settings, options.destination as never) : pino(settings);
}

/** `logger`, bound to `node` unless it already names one (a second `node` key would repeat in the JSON). */
export function withNodeField(logger: Logger, node: string): Logger {
  return logger.bindings().node === undefined ? logger.child({ node }) : logger;
}
