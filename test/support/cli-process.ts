import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The CLI as the `doyen` bin ships it: one bundled JavaScript file, no TypeScript loader (`pnpm test` builds it first). */
export const COMPILED_CLI = join(ROOT, 'packages/doyen/dist/bin.js');

/** The compiled CLI's path; a clear error when nothing built it. */
export function compiledCli(): string {
  if (!existsSync(COMPILED_CLI))
    throw new Error(`${COMPILED_CLI} is missing: run \`pnpm build\` (tsc -b tsconfig.build.json) first`);
  return COMPILED_CLI;
}

/** A `doyen node` child process (the testkit's NodeProcess) and its management HTTP port. */
export type CliNode = NodeProcess & { readonly httpPort: number | undefined };

/** This run's cluster secret and management token: random, and handed over in the environment, never on argv. */
export const TEST_SECRET = randomBytes(16).toString('hex');
export const TEST_HTTP_TOKEN = randomBytes(16).toString('hex');

/** The environment of a CLI node with this run's secret and token (`DOYEN_SECRET`, `DOYEN_HTTP_TOKEN`). */
export function secretEnv(): Record<string, string> {
  return { DOYEN_SECRET: TEST_SECRET, DOYEN_HTTP_TOKEN: TEST_HTTP_TOKEN };
}

/**
 * Runs `doyen <args>` as a child process (the compiled CLI). `env` adds to (or,
 * with `undefined` values, removes from) the inherited environment.
 */
export function runCli(
  args: string[],
  httpPort?: number,
  env: Record<string, string | undefined> = {},
): CliNode {
  const node = NodeProcess.spawn({
    args: [compiledCli(), ...args],
    cwd: ROOT,
    env: { DOYEN_LOG_LEVEL: 'info', ...env },
    ...(httpPort === undefined ? {} : { http: { host: '127.0.0.1', port: httpPort } }),
  });
  return Object.assign(node, { httpPort });
}

export async function getJson(port: number, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.json() };
}

/** A state-changing management request as an operator sends it: the token, JSON. */
export async function postJson(
  port: number,
  path: string,
  body: unknown = {},
  token: string = TEST_HTTP_TOKEN,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

export function killAll(nodes: readonly NodeProcess[]): void {
  for (const n of nodes) n.kill9();
}

/** `doyen node` arguments for a member on 127.0.0.1:`port` joining through `seeds` (its own address: it forms the cluster). */
export function nodeArgs(cluster: string, port: number | string, seeds = `127.0.0.1:${port}`): string[] {
  return ['node', '--cluster', cluster, '--host', '127.0.0.1', '--port', String(port), '--seeds', seeds];
}

/**
 * Runs `doyen node` on 127.0.0.1 with the given ports, seeds and cluster (plus `extra` flags),
 * this run's secret and management token in its environment.
 */
export function runCliNode(
  cluster: string,
  ports: { port: number; httpPort: number; seeds: number[] },
  extra: string[] = [],
): CliNode {
  return runCli(
    [
      ...nodeArgs(cluster, ports.port, ports.seeds.map((p) => `127.0.0.1:${p}`).join(',')),
      '--http-port',
      String(ports.httpPort),
      ...extra,
    ],
    ports.httpPort,
    secretEnv(),
  );
}
