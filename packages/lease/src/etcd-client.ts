import type { Etcd3, IOptions } from 'etcd3';

/**
 * etcd3 (and its gRPC stack) costs ~200 ms to load: it is loaded on first use, so a node that
 * never talks to etcd starts without it. Every etcd user in doyen goes through here.
 */
let etcd3: Promise<typeof import('etcd3')> | undefined;
export const loadEtcd3 = (): Promise<typeof import('etcd3')> => (etcd3 ??= import('etcd3'));

/** The client options doyen uses: unary calls get a deadline of `timeoutMs`; watch streams live on. */
export function etcdClientOptions(endpoints: readonly string[], timeoutMs: number): IOptions {
  return {
    hosts: [...endpoints],
    dialTimeout: timeoutMs,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
  };
}

/** An etcd client on `endpoints` (etcd3 loaded on first use). Close it with `client.close()`. */
export async function etcdClient(endpoints: readonly string[], timeoutMs: number): Promise<Etcd3> {
  const { Etcd3 } = await loadEtcd3();
  return new Etcd3(etcdClientOptions(endpoints, timeoutMs));
}
