import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = 'packages/doyen/src/cli.ts';

export interface CliNode {
  readonly process: ChildProcess;
  readonly logs: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly httpPort: number | undefined;
  /** Parsed JSON log lines with an `event` field. */
  events(): Record<string, unknown>[];
}

/** Runs `doyen <args>` as a child process (TypeScript sources through tsx). */
export function runCli(args: string[], httpPort?: number): CliNode {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@doyen/source', CLI, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DOYEN_LOG_LEVEL: 'info' },
  });
  const logs: string[] = [];
  const collect = (chunk: Buffer) => logs.push(...chunk.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    process: child,
    logs,
    exited,
    httpPort,
    events: () =>
      logs.flatMap((l) => {
        try {
          const j = JSON.parse(l) as Record<string, unknown>;
          return typeof j.event === 'string' ? [j] : [];
        } catch {
          return [];
        }
      }),
  };
}

export async function getJson(port: number, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.json() };
}

export function killAll(nodes: CliNode[]): void {
  for (const n of nodes)
    if (n.process.exitCode === null && n.process.signalCode === null) n.process.kill('SIGKILL');
}

/** Runs `doyen node` on 127.0.0.1 with the given ports, seeds and cluster (plus `extra` flags). */
export function runCliNode(
  cluster: string,
  ports: { port: number; httpPort: number; seeds: number[] },
  extra: string[] = [],
): CliNode {
  return runCli(
    [
      'node',
      '--cluster',
      cluster,
      '--host',
      '127.0.0.1',
      '--port',
      String(ports.port),
      '--seeds',
      ports.seeds.map((p) => `127.0.0.1:${p}`).join(','),
      '--http-port',
      String(ports.httpPort),
      '--secret',
      `${cluster}-secret`,
      ...extra,
    ],
    ports.httpPort,
  );
}
