import type { Cluster, ClusterEvent, ListingListener, Receptionist, ServiceKey } from '@doyen/cluster';
import { type ActorRef, DoyenError, type Logger, type Message } from '@doyen/core';

export class NodeNotStartedError extends DoyenError {
  constructor(what: string) {
    super(
      `${what} starts with the node's first incarnation: use it in setup or once startNode resolved`,
      'node-not-started',
    );
  }
}

/**
 * Cluster-event listeners of the node, not of one incarnation: re-attached to each new
 * incarnation's cluster, so a subscription made once (outside `setup`) hears the node again
 * after it was downed and came back. What `node.cluster.subscribe` cannot do: that cluster ends
 * with its incarnation.
 */
export class NodeClusterEvents {
  private readonly listeners = new Set<(event: ClusterEvent) => void>();
  private detach: (() => void) | undefined;

  constructor(private readonly logger: Logger) {}

  attach(cluster: Cluster): void {
    this.detach?.();
    this.detach = cluster.subscribe((event) => {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (error) {
          this.logger.error(
            { event: 'node.subscriber-failed', err: error },
            'a cluster event subscriber threw',
          );
        }
      }
    });
  }

  subscribe(listener: (event: ClusterEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/**
 * The node's receptionist across incarnations: registrations and finds go to the current
 * incarnation's receptionist (register in `setup`, so they come back with each incarnation);
 * subscriptions are re-attached to each new one.
 */
export class NodeReceptionist {
  private current: Receptionist | undefined;
  private readonly subscriptions = new Set<{
    readonly key: ServiceKey;
    readonly listener: ListingListener<Message>;
    detach?: () => void;
  }>();

  attach(receptionist: Receptionist): void {
    this.current = receptionist;
    for (const s of this.subscriptions) s.detach = receptionist.subscribe(s.key, s.listener);
  }

  private get receptionist(): Receptionist {
    if (!this.current) throw new NodeNotStartedError('the receptionist');
    return this.current;
  }

  register<M extends Message>(key: ServiceKey<M>, ref: ActorRef<M>): void {
    this.receptionist.register(key, ref);
  }

  deregister<M extends Message>(key: ServiceKey<M>, ref: ActorRef<M>): void {
    this.receptionist.deregister(key, ref);
  }

  find<M extends Message>(key: ServiceKey<M>): Promise<readonly ActorRef<M>[]> {
    return this.receptionist.find(key);
  }

  /** The listing of `key` now and on every change, in this incarnation and the next ones. */
  subscribe<M extends Message>(key: ServiceKey<M>, listener: ListingListener<M>): () => void {
    const entry: { key: ServiceKey; listener: ListingListener<Message>; detach?: () => void } = {
      key: key as ServiceKey,
      listener: listener as ListingListener<Message>,
    };
    this.subscriptions.add(entry);
    if (this.current) entry.detach = this.current.subscribe(entry.key, entry.listener);
    return () => {
      this.subscriptions.delete(entry);
      entry.detach?.();
    };
  }
}
