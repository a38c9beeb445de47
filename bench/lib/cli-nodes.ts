// `doyen node` processes of the benches that run the compiled CLI (scale, bootstrap): the testkit's
// NodeProcess (none outlives the bench, JSON events collected) with its addresses and /cluster view.
import { fileURLToPath } from 'node:url';
import type { ClusterView } from '../../packages/doyen/src/management-http.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';

/** DOYEN_BENCH_CLI=path/to/bin.js runs another build (a worktree of an older commit: an A/B of two builds). */
const CLI =
  process.env.DOYEN_BENCH_CLI ?? fileURLToPath(new URL('../../packages/doyen/dist/bin.js', import.meta.url));

export type CliNode = NodeProcess & {
  /** `host:port` of its cluster port. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly httpPort: number;
};

/**
 * Starts `doyen node --cluster NAME --host H --port P --http-port Q --http-host H` plus `args`;
 * the secret and token go through `env`, never argv.
 */
export function spawnCliNode(
  options: { cluster: string; host: string; port: number; httpPort: number; args: readonly string[] },
  env: Readonly<Record<string, string>>,
): CliNode {
  const { cluster, host, port, httpPort } = options;
  const node = NodeProcess.spawn({
    args: [
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
    env: { DOYEN_LOG_LEVEL: 'info', ...env },
    http: { host, port: httpPort },
  });
  return Object.assign(node, { address: `${host}:${port}`, host, port, httpPort });
}

/** A node's GET /cluster, or undefined when it does not answer. */
export function clusterView(n: CliNode): Promise<ClusterView | undefined> {
  return n.getJson<ClusterView>('/cluster');
}

/** Every node up and seeing `n` members up. */
export async function allUp(nodes: readonly CliNode[], n: number): Promise<boolean> {
  const views = await Promise.all(nodes.map(clusterView));
  return views.every((v) => v?.status === 'up' && v.members.filter((m) => m.status === 'up').length === n);
}

/**
 * When every node had logged `member.up` for `n` members still in (none removed since): the
 * latest such log time, or undefined while some node has not. Read from the logs the processes
 * already write, so waiting for convergence costs the nodes nothing (polling /cluster on 50
 * nodes every 100 ms is 500 requests a second on the machine being measured).
 */
export function allUpAt(nodes: readonly CliNode[], n: number): number | undefined {
  let latest = 0;
  for (const node of nodes) {
    const up = new Map<string, number>();
    let reached: number | undefined;
    for (const e of node.events()) {
      const address = e.member?.address as string | undefined;
      if (address === undefined) continue;
      if (e.event === 'member.up') up.set(address, e.time as number);
      else if (e.event === 'member.removed' || e.event === 'member.downed') up.delete(address);
      else continue;
      reached = up.size === n ? (e.time as number) : undefined;
    }
    if (reached === undefined) return undefined;
    latest = Math.max(latest, reached);
  }
  return latest;
}

/**
 * When every node had logged both `coordinator.changed` to `next` (its last such event) and the
 * end of `gone` (`member.downed` or `member.removed`) since `since`: the latest such log time, or
 * undefined while some node has not. From the logs, as allUpAt: polling /cluster on every
 * survivor each 50 ms is what would load the host while the survivors do the work being timed.
 */
export function agreedAt(
  nodes: readonly CliNode[],
  gone: string,
  next: string,
  since: number,
): number | undefined {
  let latest = 0;
  for (const node of nodes) {
    let coordinator: { address: string; time: number } | undefined;
    let goneAt: number | undefined;
    for (const e of node.events()) {
      if (e.time < since) continue;
      const address = e.member?.address as string | undefined;
      if (e.event === 'coordinator.changed' && address !== undefined)
        coordinator = { address, time: e.time as number };
      else if ((e.event === 'member.downed' || e.event === 'member.removed') && address === gone)
        goneAt ??= e.time as number;
    }
    if (coordinator?.address !== next || goneAt === undefined) return undefined;
    latest = Math.max(latest, coordinator.time, goneAt);
  }
  return latest;
}

/** kill -9 of the nodes; resolves once every one has exited. */
export async function killCliNodes(nodes: readonly CliNode[]): Promise<void> {
  for (const n of nodes) n.kill9();
  await Promise.all(nodes.map((n) => n.exited));
}
