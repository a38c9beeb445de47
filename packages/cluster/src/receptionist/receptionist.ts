import { type ActorRef, type ActorSystem, DoyenError, type Message, nodeKey } from '@doyen/core';
import type { Membership } from '../model/membership.js';
import { SYSTEM_ACTOR_NAMES } from '../model/system-actors.js';
import {
  MAX_KEYS_PER_NODE,
  MAX_REFS_PER_KEY,
  MAX_REFS_PER_NODE,
  registerReceptionistMessages,
} from './messages.js';
import type { ReceptionistEvent, ReceptionistPolicy } from './receptionist-decisions.js';
import { createReceptionistMachine } from './receptionist-machine.js';
import type { ServiceKey } from './service-key.js';

/** What the receptionist needs of its node's cluster (a `Cluster`): every new membership. */
export interface MembershipSource {
  subscribeMembership(listener: (membership: Membership) => void): () => void;
}

export class ReceptionistRefNotLocalError extends DoyenError {
  constructor(readonly ref: string) {
    super(
      `cannot register ${ref}: the receptionist registers actors of its own node (register it on the node that spawned it)`,
      'receptionist-ref-not-local',
    );
  }
}

export interface ReceptionistOptions {
  /** Service keys this node may register under, and accepts per member (at most 64). */
  readonly maxKeysPerNode?: number;
  /** Refs one node may register under one key, here and per member (at most 256). */
  readonly maxRefsPerKey?: number;
  /** Refs one node may register in all, here and per member (at most 1024). */
  readonly maxRefsPerNode?: number;
}

export type ListingListener<M extends Message> = (refs: readonly ActorRef<M>[]) => void;

/**
 * Finding actors by service key across the cluster (Akka's Receptionist): `register` a local
 * actor under a `ServiceKey`, `find` the refs registered under it on every member, or
 * `subscribe` to its listing. A node's entries leave with it (downed or removed) and an
 * actor's when it stops. One per node incarnation, at `/system/receptionist`.
 */
export class Receptionist {
  private readonly ref: ActorRef;
  private readonly listeners = new Map<string, Set<{ listener: ListingListener<Message>; last?: string }>>();
  private readonly unsubscribeMembership: () => void;
  /** The pending `receptionist.ask-due` (see DEFERRED_ASK_MS). */
  private askTimer: unknown;

  static start(
    system: ActorSystem,
    cluster: MembershipSource,
    options: ReceptionistOptions = {},
  ): Receptionist {
    return new Receptionist(system, cluster, options);
  }

  private constructor(
    private readonly system: ActorSystem,
    cluster: MembershipSource,
    options: ReceptionistOptions,
  ) {
    registerReceptionistMessages(system.messageTypes);
    const policy: ReceptionistPolicy = {
      selfKey: nodeKey(system.node),
      maxKeysPerNode: Math.min(options.maxKeysPerNode ?? MAX_KEYS_PER_NODE, MAX_KEYS_PER_NODE),
      maxRefsPerKey: Math.min(options.maxRefsPerKey ?? MAX_REFS_PER_KEY, MAX_REFS_PER_KEY),
      maxRefsPerNode: Math.min(options.maxRefsPerNode ?? MAX_REFS_PER_NODE, MAX_REFS_PER_NODE),
    };
    const machine = createReceptionistMachine(system, policy, {
      self: () => this.ref,
      listingChanged: (key, refs) => this.notify(key, refs),
      askLater: (afterMs) => {
        if (this.askTimer !== undefined) return;
        this.askTimer = system.clock.setTimeout(() => {
          this.askTimer = undefined;
          this.tell({ type: 'receptionist.ask-due' });
        }, afterMs);
      },
    });
    this.ref = system.spawn(machine, { name: SYSTEM_ACTOR_NAMES.receptionist, parent: 'system' });
    this.unsubscribeMembership = cluster.subscribeMembership((membership) =>
      this.tell({ type: 'receptionist.membership', membership }),
    );
  }

  /**
   * Registers a spawned actor of this node under `key`; it stays registered until it stops,
   * `deregister` is called, or this node leaves. Beyond the bounds the registration is refused
   * (`receptionist.refused`, counted in `doyen_receptionist_refused_total`).
   */
  register<M extends Message>(key: ServiceKey<M>, ref: ActorRef<M>): void {
    if (!ref.isLocal) throw new ReceptionistRefNotLocalError(ref.id);
    this.tell({ type: 'receptionist.register', key: key.id, ref });
  }

  deregister<M extends Message>(key: ServiceKey<M>, ref: ActorRef<M>): void {
    this.tell({ type: 'receptionist.deregister', key: key.id, ref });
  }

  /** The refs registered under `key` on every member, as this node knows them now. */
  find<M extends Message>(key: ServiceKey<M>): Promise<readonly ActorRef<M>[]> {
    return new Promise((resolve) =>
      this.tell({
        type: 'receptionist.find',
        key: key.id,
        reply: (refs) => resolve(refs as readonly ActorRef<M>[]),
      }),
    );
  }

  /**
   * Calls `listener` with the listing of `key` now and on every change (an actor registered or
   * stopped, a member's listing arrived or its member left). Returns the unsubscribe.
   */
  subscribe<M extends Message>(key: ServiceKey<M>, listener: ListingListener<M>): () => void {
    let set = this.listeners.get(key.id);
    if (!set) this.listeners.set(key.id, (set = new Set()));
    const entry: { listener: ListingListener<Message>; last?: string } = {
      listener: listener as ListingListener<Message>,
    };
    set.add(entry);
    // the current listing, after every registration queued before this subscription
    this.tell({
      type: 'receptionist.find',
      key: key.id,
      reply: (refs) => set.has(entry) && this.deliver(entry, refs),
    });
    return () => {
      set.delete(entry);
      if (set.size === 0 && this.listeners.get(key.id) === set) this.listeners.delete(key.id);
    };
  }

  /** Stops the receptionist with its incarnation (its entries leave with the node anyway). */
  stop(): void {
    this.unsubscribeMembership();
    if (this.askTimer !== undefined) this.system.clock.clearTimeout(this.askTimer);
    this.askTimer = undefined;
    this.listeners.clear();
    this.system.stop(this.ref);
  }

  private tell(event: ReceptionistEvent): void {
    this.ref.send(event as unknown as Message);
  }

  private notify(key: string, refs: readonly ActorRef[]): void {
    for (const entry of this.listeners.get(key) ?? []) this.deliver(entry, refs);
  }

  /** Each listener hears a listing once, even when its subscription's first answer repeats it. */
  private deliver(
    entry: { listener: ListingListener<Message>; last?: string },
    refs: readonly ActorRef[],
  ): void {
    const ids = refs.map((r) => r.id).join('\n');
    if (entry.last === ids) return;
    entry.last = ids;
    try {
      entry.listener(refs);
    } catch (error) {
      this.system.logger.error(
        { event: 'receptionist.listener-failed', err: error },
        'a receptionist subscriber threw',
      );
    }
  }
}
