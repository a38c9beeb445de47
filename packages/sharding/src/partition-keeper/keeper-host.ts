import type { ActorRef, Message } from '@doyen/core';

/**
 * The partition keeper's two neighbours, as interfaces: the RUNTIME (the region: entities,
 * routing, buffers), whose methods the keeper machine's `execute` calls, and the OWNER LEASE
 * (helper F's `OwnerLeases` in @doyen/singleton), which the keeper asks and listens to. The keeper
 * decides, per partition, when this node may run it (see keeper-decisions.ts); the runtime does
 * what it is told and reports back with the events at the bottom of this file.
 *
 * The activation rule the keeper enforces: partition p is ACTIVE here only while this node holds
 * its own owner lease, its newest table names it owner of p, and it holds p's token. Entities of
 * p run, and p's messages are delivered, only while p is active.
 */

/** One entity's persisted xstate snapshot, carried with its partition (shape of region's EntitySnapshot). */
export interface CargoSnapshot {
  readonly entityType: string;
  readonly entityId: string;
  readonly snapshot: unknown;
}

/** One message held by a draining owner, carried to the next (shape of region's RoutedMessage). */
export interface CargoMessage {
  readonly entityType: string;
  readonly entityId: string;
  readonly partition: number;
  readonly payload: Message;
  readonly sender: ActorRef | undefined;
  readonly hops: number;
}

/** What travels with a partition's token on a planned move. */
export interface HandOffCargo {
  readonly snapshots: readonly CargoSnapshot[];
  /** Messages the old owner took after its drain began, in arrival order: delivered first by the new owner. */
  readonly forwarded: readonly CargoMessage[];
}

export const EMPTY_CARGO: HandOffCargo = { snapshots: [], forwarded: [] };

/** Why the runtime must stop a partition's entities without handing them over. */
export type DeactivationReason = 'lease-lost' | 'token-void' | 'stopped';

/**
 * The runtime as the keeper drives it. Every call is synchronous and must not throw (log, count
 * and carry on); each is one effect of a keeper decision.
 *
 * What the keeper's guarantees (per-sender order, nothing lost across planned moves) need of the
 * region besides these calls, as the keeper's simulation (test/support/keeper-sim.ts) models it:
 * a p-message reaching the region is delivered if p is active; kept for the cargo if p drains;
 * HELD if this node owns p in its newest table, or already holds messages for p (later ones queue
 * behind them), or the message was routed by a NEWER table than the region's (held until the
 * region adopts it, then handled again); otherwise forwarded by the region's table (or into this
 * node's own buffer while p is buffered here).
 */
export interface KeeperHost {
  /**
   * p is active here from now: restore `cargo.snapshots`, deliver `cargo.forwarded` in order,
   * then the messages this node held for p while it owned p but had not activated it, in arrival
   * order, then everything that arrives later. (The region restores lazily: each entity starts
   * from its snapshot before its first message, or in a paced background pass, so activating is
   * O(1) in the entity count; a snapshot not started yet goes along with a later drain or lapse.)
   */
  activate(partition: number, version: number, cargo: HandOffCargo): void;

  /**
   * Begin a planned hand-off of p: the messages held for p (owner, not active) are kept first;
   * from this call on, every p-message that reaches the region is kept too (in arrival order)
   * for the cargo instead of delivered; entities finish the messages they
   * had accepted and are stopped (with `handOverSnapshot`: their persisted snapshots kept for the
   * cargo). When every entity of p has stopped, the runtime tells the keeper `regionDrained(p)`
   * (`KeeperInbox.regionDrained`). A drain is never cancelled: a drained partition is only ever
   * handed off (with `takeCargo`) or dropped (`deactivate`, on a lost lease).
   */
  drain(partition: number): void;

  /**
   * The drained partition leaves this node: returns its snapshots and every message kept since
   * the drain began (including ones that arrived after `regionDrained`), and forgets p. From now
   * on the region routes p-messages by its table like any other node.
   */
  takeCargo(partition: number): HandOffCargo;

  /**
   * This node owned p in an older table and no longer does, never got p's token back, and every
   * member marked its newest table: the messages it held for p (waiting for an activation that
   * will not come) go to the owner in its newest table, in order, as if it were their sender.
   */
  reroute(partition: number): void;

  /**
   * Stop p's entities at once, no hand-off, no snapshot (the owner lease is lost). The token
   * stays here: messages a drain kept, and p-messages arriving from now on, are HELD (in order)
   * as for an owner that is not active, until `activate` delivers them, `drain` keeps them for the
   * cargo or `reroute` sends them on. (If this node is fenced, they die with it.)
   */
  deactivate(partition: number, reason: DeactivationReason): void;

  /**
   * SENDER side: p moves (this node adopted a table that changed p's owner). Keep this node's own
   * p-messages (local sends and ones the region would forward) in per-sender order, bounded (over
   * the bound: drop the oldest as a dead letter `sharding-buffer-full`, counted), until `flush`.
   */
  startBuffering(partition: number): void;

  /** p is active at `owner` now: send everything buffered for p to it, in order, then route p normally. */
  flush(partition: number, owner: string): void;

  /**
   * The owner lease as the runtime reads it before an entity here acts on a message (absent: the
   * runtime trusts the keeper's activations alone). See DeliveryGuard.
   */
  guardDelivery?(guard: DeliveryGuard): void;

  /**
   * Send `marker` to member `to` BEHIND every entity message this node sent to `to` before: on
   * the same connection and into the same actor (the region), so that when `to`'s region hands
   * the marker to its keeper (`KeeperInbox.received`), every earlier message from this node has
   * been delivered or kept for the cargo. Sent to every other member on every table adoption.
   */
  sendMarker(to: string, marker: DrainMarkerPayload): void;
}

/**
 * What the runtime asks of the owner lease on its message path. After a pause past the lease
 * (SIGSTOP, a stalled loop), Node runs the I/O callbacks that carry messages BEFORE the timers
 * that report the lease lost, and which partitions are active is the keeper's view, not the
 * clock's: so the runtime reads the lease by the clock once per arrival it would deliver here
 * (a batch, an envelope, a local send). On a lapse it stops every partition at once as the
 * lease-lost path does (snapshots kept, unprocessed messages held in order), then calls `lapsed`
 * so the keeper decides the loss now rather than when the timer fires.
 */
export interface DeliveryGuard {
  /** This node holds its own owner lease NOW, by its clock (`OwnerLeasePort.holdsOwn`). */
  holdsOwn(): boolean;
  /** The runtime found the lease lapsed and stopped every partition: tell the keeper at once. */
  lapsed(): void;
}

/** The drain marker's content (the message is `sharding.drain-marker`, keeper-messages.ts). */
export interface DrainMarkerPayload {
  readonly from: string;
  /** "I adopted this table version: I route by it (or a newer one) from now on." */
  readonly version: number;
  /** The partitions active at the sender under that table (buffering senders flush to it). */
  readonly active: readonly number[];
}

/**
 * Helper F's owner lease (exported from @doyen/singleton as `OwnerLeases`), as the keeper uses it.
 * Until F lands, tests use test/support/fake-owner-leases.ts.
 */
export interface OwnerLeasePort {
  /** Bid for (true) or give up (false) this node's own owner scope. */
  want(active: boolean): void;
  /** Whether this node holds its own owner lease NOW (its clock): checked before every decision. */
  holdsOwn(): boolean;
  /** Ask the voters to fence member `key` (unreachable, downed or removed in this node's view). */
  fence(key: string): void;
  /** `key` is fenced: its owner lease ended everywhere, it has woken from any pause, it never regains it. */
  isFenced(key: string): boolean;
  /** Called on any change of `holdsOwn()` or of a fence this node asked for. Returns an unsubscribe. */
  subscribe(listener: () => void): () => void;
  /**
   * Re-read `holdsOwn()` by the clock now and tell the listeners if it changed (a lapse a reader
   * noticed before the lease-end timer fired): so a later renewal is told as a gain. Absent: the
   * keeper is told the loss directly.
   */
  refresh?(): void;
}

/**
 * How the runtime reports to the keeper (the keeper machine's actor ref wrapped in plain calls;
 * `startPartitionKeeper` in keeper-machine.ts returns it).
 */
export interface KeeperInbox {
  /** Every entity of p stopped after `drain(p)` (the cargo is ready to take). */
  regionDrained(partition: number): void;
  /**
   * A keeper message that reached the region on the entity path (the drain marker), passed on
   * in arrival order. `from` is the member the connection belongs to (the message's claims were
   * checked against it at the boundary).
   */
  received(message: Message): void;
  /** Whether p is active on this node (the region delivers p-messages only then). */
  isActive(partition: number): boolean;
  /** The partitions active here, ascending (for GET /cluster/shards). */
  activePartitions(): readonly number[];
  /**
   * Hand-offs sent from here whose receiver has not confirmed them yet (a lost one is probed and
   * taken back): a leaving node waits for none before it leaves (absent: none tracked).
   */
  unconfirmedHandOffs?(): number;
  /**
   * Partitions whose token this node holds, in any phase: one handed to a retiring node as it
   * lost its owner lease is held without being active, and must still be handed on (absent: none).
   */
  tokensHeld?(): number;
  stop(): void;
}
