import { type AddressInfo, createServer, type Server } from 'node:net';

/**
 * Free TCP ports on `host`, picked by binding port 0 and releasing it: seed lists and real-socket tests
 * need their ports before the nodes bind them.
 */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, host, () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
