import type { Logger, Metrics } from '@doyen/core';
import { EtcdLeasedKey, etcdEndpointsProblem } from './etcd-leased-key.js';
import { KeyLease } from './key-lease.js';
import { LeaseConfigError, type LeaseSettings, validateLeaseSettings } from './lease.js';

export interface EtcdLeaseOptions extends LeaseSettings {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']`. */
  endpoints: string[];
  /** Cluster name: the key is `/doyen/<cluster>/leases/<name>`. */
  cluster: string;
  name: string;
  logger?: Logger;
  metrics?: Metrics;
}

const CLUSTER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Validates the options and makes the key (kept alive by the key itself); throws LeaseConfigError. */
function leasedKeyFor(options: EtcdLeaseOptions): EtcdLeasedKey {
  validateLeaseSettings(options.name, options);
  const { endpoints, cluster, name } = options;
  const problem = etcdEndpointsProblem(endpoints);
  if (problem) throw new LeaseConfigError(name, problem);
  if (typeof cluster !== 'string' || !CLUSTER_NAME.test(cluster)) {
    throw new LeaseConfigError(name, 'cluster must be 1-64 letters, digits or . _ -');
  }
  return new EtcdLeasedKey({
    endpoints,
    key: `/doyen/${cluster}/leases/${name}`,
    name,
    ttlMs: options.ttlMs,
    timeoutMs: options.timeoutMs,
    keepAlive: true,
    logger: options.logger,
  });
}

/**
 * A {@link Lease} backed by etcd's own leases: the holder's name is stored in
 * `/doyen/<cluster>/leases/<name>` (an {@link EtcdLeasedKey}) with an etcd lease of
 * `ceil(ttlMs / 1000)` seconds attached, renewed every third of that while held; a watch on the key
 * reports deletion or takeover. Locally the lease counts as held only until `ttlMs` after the send
 * time of the last acknowledged renewal, so this process gives it up no later than etcd does.
 */
export class EtcdLease extends KeyLease {
  /** The etcd key that records the holder. */
  readonly key: string;

  constructor(options: EtcdLeaseOptions) {
    const leasedKey = leasedKeyFor(options);
    super(options.name, leasedKey, { logger: options.logger, metrics: options.metrics });
    this.key = leasedKey.key;
  }
}
