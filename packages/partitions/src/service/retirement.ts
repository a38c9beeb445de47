import { type Cluster, nodeOfKey } from '@doyen/cluster';
import type { ActorSystem } from '@doyen/core';
import type { PartitionTable } from '../partition-table.js';
import { ALLOCATOR_SINGLETON } from './allocator-machine.js';
import type { RetireRequest } from './allocator-messages.js';
import type { PartitionService } from './partition-service.js';

const ALLOCATOR_PATH = `/user/singleton-${ALLOCATOR_SINGLETON}`;

/** How often the request goes again while the table still names this node. */
export const DEFAULT_RETIRE_RETRY_MS = 500;

/** Whether `table` gives `key` nothing: no partition owned, none backed up. */
export function retiredIn(table: PartitionTable | undefined, key: string): boolean {
  if (!table) return true;
  return !table.owners.includes(key) && !table.backups.some((b) => b.includes(key));
}

/**
 * A node about to leave asks the allocator for a table in which it owns nothing, while it is
 * still up (Akka's shard regions hand off in coordinated shutdown before cluster-leave): its
 * partitions then move away in planned hand-offs instead of being recreated empty once its
 * membership, and with it its owner lease, ends. The request goes to the allocator's host as
 * this node sees it, again whenever that host changes and every `retryMs` while the newest
 * table still names this node (a request or the table may be lost, and an allocator that moved
 * to another node does not know who was retiring), until `stop()`.
 */
export class Retirement {
  private timer: unknown;
  private lastHost: string | undefined;
  private readonly unsubscribe: () => void;
  private stopped = false;
  private readonly selfKey: string;

  constructor(
    private readonly system: ActorSystem,
    private readonly cluster: Cluster,
    private readonly service: PartitionService,
    private readonly retryMs = DEFAULT_RETIRE_RETRY_MS,
  ) {
    this.selfKey = cluster.self.key;
    system.logger.info(
      { event: 'partitions.retire-requested', member: this.selfKey },
      'asking the allocator for a table without this node before it leaves',
    );
    this.unsubscribe = cluster.subscribeMembership(() => this.ask(false));
    this.ask(true);
    this.schedule();
  }

  /** The newest table this node holds gives it nothing. */
  retired(): boolean {
    return retiredIn(this.service.table(), this.selfKey);
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer !== undefined) this.system.clock.clearTimeout(this.timer);
  }

  /** Sends the request to the allocator's host when it is due: forced, or the host changed. */
  private ask(force: boolean): void {
    if (this.stopped || this.retired()) return;
    const view = this.cluster.state().membership;
    const host = view && this.service.allocatorHostIn(view);
    if (host === undefined || (!force && host === this.lastHost)) return;
    this.lastHost = host;
    const request: RetireRequest = { type: 'partitions.retire', from: this.selfKey };
    this.system.remoteRef(nodeOfKey(host), ALLOCATOR_PATH).send(request);
  }

  private schedule(): void {
    this.timer = this.system.clock.setTimeout(() => {
      if (this.stopped) return;
      this.ask(true);
      this.schedule();
    }, this.retryMs);
  }
}
