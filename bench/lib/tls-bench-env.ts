// How the messaging bench tells its doyen child process to run with mutual TLS: `wire.tls` as JSON in one
// environment variable (file paths only; the files are made by the parent in a temp dir).
import type { WireConfig, WireTlsConfig } from './doyen.js';

const VARIABLE = 'DOYEN_BENCH_WIRE_TLS';

export function tlsEnv(tls: WireTlsConfig): NodeJS.ProcessEnv {
  return { [VARIABLE]: JSON.stringify(tls) };
}

/** `{ tls }` when the parent asked for it, else nothing (plaintext). */
export function tlsFromEnv(): Partial<WireConfig> {
  const json = process.env[VARIABLE];
  return json ? { tls: JSON.parse(json) as WireTlsConfig } : {};
}
