/** One change to the remembered ids: the entity became active (`remembered`) or was passivated. */
export interface RememberChange {
  readonly entityType: string;
  readonly partition: number;
  readonly entityId: string;
  readonly remembered: boolean;
}

/**
 * Where the ids of active entities are kept per entity type and partition, so that a partition's
 * next owner (after a move or a crash) restarts them. Calls may fail (a store that is down): the
 * runtime logs, counts and retries with backoff; a store never decides where an entity runs.
 */
export interface RememberStore {
  /** Applies the changes (in order: a later change of the same id wins). */
  write(changes: readonly RememberChange[]): Promise<void>;
  /** The ids remembered for `entityType` in `partition`. */
  list(entityType: string, partition: number): Promise<readonly string[]>;
  close(): Promise<void>;
}

/**
 * A store in this process's memory: for tests and single-process clusters (share one instance
 * between the nodes of the process). Nothing survives the process.
 */
export class MemoryRememberStore implements RememberStore {
  private readonly ids = new Map<string, Set<string>>();

  async write(changes: readonly RememberChange[]): Promise<void> {
    for (const c of changes) {
      const key = `${c.entityType}/${c.partition}`;
      let ids = this.ids.get(key);
      if (c.remembered) {
        if (!ids) this.ids.set(key, (ids = new Set()));
        ids.add(c.entityId);
      } else if (ids?.delete(c.entityId) && ids.size === 0) this.ids.delete(key);
    }
  }

  async list(entityType: string, partition: number): Promise<readonly string[]> {
    return [...(this.ids.get(`${entityType}/${partition}`) ?? [])];
  }

  /** Every remembered id of `entityType`, any partition (tests and tools). */
  all(entityType: string): string[] {
    return [...this.ids].flatMap(([key, ids]) => (key.startsWith(`${entityType}/`) ? [...ids] : []));
  }

  async close(): Promise<void> {}
}
