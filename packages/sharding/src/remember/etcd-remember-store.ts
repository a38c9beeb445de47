import { InvalidConfigError } from '@doyen/core';
import { etcdClient, etcdEndpointsProblem } from '@doyen/lease';
import type { RememberChange, RememberStore } from './remember-store.js';

export interface EtcdRememberStoreOptions {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']` (the etcd the leases already use). */
  readonly endpoints: readonly string[];
  /** The cluster's name: keys live under `/doyen/<cluster>/sharding/remember/`. */
  readonly cluster: string;
  /** Deadline of each etcd call (default 2000 ms). */
  readonly timeoutMs?: number;
}

/** etcd refuses a transaction of more than 128 operations by default (`--max-txn-ops`). */
const OPS_PER_TXN = 100;

type Etcd3 = Awaited<ReturnType<typeof etcdClient>>;

/**
 * {@link RememberStore} on etcd: one key per remembered entity,
 * `/doyen/<cluster>/sharding/remember/<type>/<partition>/<id>` (empty value), written in
 * transactions of at most 100 puts and deletes; a partition's ids are one prefix read. The etcd
 * client is @doyen/lease's (`etcdClient`), created on first use.
 */
export class EtcdRememberStore implements RememberStore {
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private connecting: Promise<Etcd3> | undefined;

  constructor(private readonly options: EtcdRememberStoreOptions) {
    const problem = etcdEndpointsProblem(options.endpoints);
    if (problem) throw new InvalidConfigError(`remember-entities store: ${problem}`);
    if (!options.cluster) throw new InvalidConfigError('remember-entities store: cluster must be non-empty');
    this.prefix = `/doyen/${options.cluster}/sharding/remember/`;
    this.timeoutMs = options.timeoutMs ?? 2000;
  }

  private client(): Promise<Etcd3> {
    this.connecting ??= etcdClient(this.options.endpoints, this.timeoutMs);
    return this.connecting;
  }

  private keyOf(entityType: string, partition: number, entityId = ''): string {
    return `${this.prefix}${entityType}/${partition}/${entityId}`;
  }

  async write(changes: readonly RememberChange[]): Promise<void> {
    const client = await this.client();
    for (let i = 0; i < changes.length; i += OPS_PER_TXN) {
      const txn = client.if(this.prefix, 'Version', '>', -1);
      // a key's later change wins: one operation per key and transaction (etcd refuses duplicates)
      const last = new Map<string, boolean>();
      for (const c of changes.slice(i, i + OPS_PER_TXN))
        last.set(this.keyOf(c.entityType, c.partition, c.entityId), c.remembered);
      const ops = [...last].map(([key, remembered]) =>
        remembered ? client.put(key).value('') : client.delete().key(key),
      );
      await txn.then(...ops).commit();
    }
  }

  async list(entityType: string, partition: number): Promise<readonly string[]> {
    const client = await this.client();
    const prefix = this.keyOf(entityType, partition);
    const keys = await client.getAll().prefix(prefix).keys();
    return keys.map((k) => k.slice(prefix.length));
  }

  async close(): Promise<void> {
    const connecting = this.connecting;
    this.connecting = undefined;
    if (connecting) (await connecting).close();
  }
}
