/**
 * The TTL the etcd suites ask for: etcd grants whole seconds, and at least 2 s with its default
 * election timeout, so nothing shorter would be what the server really runs.
 */
export const ETCD_TTL_MS = 2000;

/** The per-request timeout the lease suites give their etcd clients: half the TTL. */
export const ETCD_LEASE_TIMEOUT_MS = 1000;

/** The options an etcd client of a suite starts from: its endpoints (none when etcd is absent), `name`, the TTL and `timeoutMs`. */
export function etcdClientOptions(endpoints: string[] | undefined, name: string, timeoutMs: number) {
  return { endpoints: endpoints ?? [], name, ttlMs: ETCD_TTL_MS, timeoutMs };
}
