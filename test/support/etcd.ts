import { connect, createServer, type Server, type Socket } from 'node:net';
// The raw etcd client comes from @doyen/lease's own dependency: the workspace root does not list etcd3.
import { Etcd3 } from '../../packages/lease/node_modules/etcd3/lib/index.js';

export const ETCD_HOW_TO = 'export $(bash .ci/etcd.sh | tail -1) && npx vitest run test/lease';

/** etcd client URLs from `ETCD_ENDPOINTS` (comma-separated), or undefined when unset. */
export function etcdEndpoints(): string[] | undefined {
  const endpoints = (process.env.ETCD_ENDPOINTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return endpoints.length > 0 ? endpoints : undefined;
}

/**
 * Endpoints for a suite that needs a real etcd, for `describe.skipIf(!endpoints)`. Without
 * `ETCD_ENDPOINTS` it prints how to get one and returns undefined, except under CI, which must have
 * etcd: there it throws.
 */
export function etcdForSuite(suite: string): string[] | undefined {
  const endpoints = etcdEndpoints();
  if (endpoints) return endpoints;
  if (process.env.CI) {
    throw new Error(
      `${suite}: CI is set but ETCD_ENDPOINTS is not; CI must start etcd first: ${ETCD_HOW_TO}`,
    );
  }
  console.warn(
    `[${suite}] skipped: ETCD_ENDPOINTS is not set. To run against a throwaway etcd: ${ETCD_HOW_TO}`,
  );
  return undefined;
}

/** A plain etcd3 client, for poking at keys behind a lease's back. Close it after use. */
export function rawEtcd(endpoints: string[]): Etcd3 {
  return new Etcd3({ hosts: endpoints, dialTimeout: 2000 });
}

/** A name no earlier run against the same etcd used, so reruns never see stale keys. */
export function uniqueCluster(prefix = 'test'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * A TCP proxy to etcd that can silently drop everything, like a network partition. Its server
 * goes into `servers` so the suite's `afterEach` closes it.
 */
export async function blackholeProxy(target: URL, servers: Server[]) {
  let blocked = false;
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.push(client, upstream);
    client.on('data', (d) => blocked || upstream.write(d));
    upstream.on('data', (d) => blocked || client.write(d));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    block: () => {
      blocked = true;
    },
    close: () => {
      for (const s of sockets) s.destroy();
    },
  };
}
