// `doyen node` processes of the benches that run the compiled CLI (scale, bootstrap): spawned
// tracked (none outlives the bench), their JSON events collected, their /cluster view read.
import { fileURLToPath } from 'node:url';
import type { ClusterView } from '../../packages/doyen/src/management-http.js';
import { spawnTracked } from './node-processes.js';

const CLI = fileURLToPath(new URL('../../packages/doyen/dist/cli.js', import.meta.url));

export interface CliNode {
  /** `host:port` of its cluster port. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly httpPort: number;
  readonly child: ReturnType<typeof spawnTracked>;
  /** Its log lines that carry an `event`, in order. */
  readonly events: { event: string; time: number; [k: string]: unknown }[];
  exitedAt: number | undefined;
}

/**
 * Starts `doyen node --cluster NAME --host H --port P --http-port Q --http-host H` plus `args`;
 * the secret and token go through `env`, never argv.
 */
export function spawnCliNode(
  options: { cluster: string; host: string; port: number; httpPort: number; args: readonly string[] },
  env: Readonly<Record<string, string>>,
): CliNode {
  const { cluster, host, port, httpPort } = options;
  const child = spawnTracked(
    process.execPath,
    [
      CLI,
      'node',
      '--cluster',
      cluster,
      '--host',
      host,
      '--port',
      String(port),
      '--http-port',
      String(httpPort),
      '--http-host',
      host,
      ...options.args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DOYEN_LOG_LEVEL: 'info', ...env } },
  );
  const node: CliNode = {
    address: `${host}:${port}`,
    host,
    port,
    httpPort,
    child,
    events: [],
    exitedAt: undefined,
  };
  let rest = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      try {
        const j = JSON.parse(line);
        if (typeof j.event === 'string') node.events.push(j);
      } catch {}
    }
  });
  child.stderr!.resume();
  child.once('exit', () => (node.exitedAt = Date.now()));
  return node;
}

/** A node's GET /cluster, or undefined when it does not answer. */
export async function clusterView(n: CliNode): Promise<ClusterView | undefined> {
  try {
    const r = await fetch(`http://${n.host}:${n.httpPort}/cluster`, { signal: AbortSignal.timeout(2000) });
    return r.ok ? ((await r.json()) as ClusterView) : undefined;
  } catch {
    return undefined;
  }
}

/** Every node up and seeing `n` members up. */
export async function allUp(nodes: readonly CliNode[], n: number): Promise<boolean> {
  const views = await Promise.all(nodes.map(clusterView));
  return views.every((v) => v?.status === 'up' && v.members.filter((m) => m.status === 'up').length === n);
}

/** SIGKILLs the nodes and waits until every one has exited. */
export async function killCliNodes(nodes: readonly CliNode[]): Promise<void> {
  await Promise.all(
    nodes.map(
      (n) =>
        new Promise<void>((resolve) => {
          if (n.child.exitCode !== null || n.child.signalCode !== null) return resolve();
          n.child.once('exit', () => resolve());
          n.child.kill('SIGKILL');
        }),
    ),
  );
}
