import type { DecisionStep, LogEffect } from '@doyen/core';
import { type Assembly, joinPart } from './hand-off-parts.js';
import type { HandOffCargo } from './keeper-host.js';
import {
  type ActiveNotice,
  type DrainMarker,
  type Farewell,
  type HandOff,
  type HandOffPart,
  type HandOffProbe,
  type HandOffReceipt,
  type KeeperMessage,
  MAX_CARGO_ENTRIES,
  type PartitionAnswer,
  type Stamp,
  type TokenAnswer,
  type TokenQuery,
  type TokenWithdraw,
} from './keeper-messages.js';

/**
 * The partition keeper as pure functions of (policy, context, event, now): per partition, when
 * this node may run it, how its token moves, and when senders buffer and flush.
 *
 * THE INVARIANT: at most one node has partition p ACTIVE at any instant. p is active here only
 * while (1) this node holds its own owner lease, (2) its newest table names it owner of p and
 * (3) it holds p's TOKEN. There is at most one live token per partition:
 *
 * - TOKENS MOVE BY HAND-OFF, only from a node that holds its own owner lease, always to the owner
 *   in the sender's newest table. Each hop raises the token's `seq`; every node remembers, per
 *   partition, the highest stamp it received (`seen`) and its last hand-off (`handed`).
 * - A node that loses its own lease stops p's entities at once but KEEPS the token (it cannot use
 *   or move it without the lease; if it is fenced it never gets the lease back, so the token dies
 *   with it; if not, it resumes with it: a lease blip costs nothing).
 * - RECOVERY (also the first table, also every planned move: one path): the owner of p in its
 *   newest table v that lacks p's token asks every member `token-query {version v, round r}`.
 *   A member at a newer table answers `newer`; one at an older table answers once it adopted v;
 *   one that holds the token answers by handing it over; any other RENOUNCES: it answers its
 *   `seen`/`handed` record and promises that a token of epoch below (v, r) reaching it later is
 *   VOID there (kept DORMANT: never activated, never moved as live; its cargo is reported in its
 *   next answers). The owner creates p's token with epoch (v, r) only when every member of its
 *   view answered or is FENCED (owner lease ended everywhere, never regained), and the token's
 *   chain is closed: the highest stamp anyone reports handed went to a member that is fenced or
 *   reports having seen it (so it died there, or lies dormant there, its cargo reused by the
 *   creation). A hand-off still in flight is found by the chain check and waited for (the member
 *   it went to is asked again), so a planned move never loses its cargo to a recovery.
 * - WITHDRAW: a renounce only needs to bind if its querier CREATES at its epoch. A querier that
 *   ends a query without creating (the live token reached it, or it adopted a newer table) never
 *   creates at that (v, r) again (a query is only ever created from while open; every new query
 *   takes a fresh round; member keys name one incarnation), so it sends every member
 *   `token-withdraw {v, r, partitions}`, behind the query on the same FIFO connection. A member
 *   keeps per partition `voidBelow` (renounces that bind for good) and `withdrawable` (the latest
 *   renounce per querier) and voids a token below either. A withdraw removes only the exact
 *   (querier, v, r) entry; a querier's entry that its next query finds not withdrawn (so it may
 *   have created there: a withdraw would have come first) moves into `voidBelow`, as do the
 *   entries of a member gone from the view; a token kept dormant before the withdraw stays dormant
 *   (recovery takes it, as before). WHY SAFE: each creation at (v, r) is never withdrawn, so every
 *   member that renounced it still voids below (v, r), exactly as before; for a token arriving
 *   after a withdraw, the member behaves as if the querier's query had never reached it, which is
 *   what a connection reset already does to a query (so the order and cargo rules above, which
 *   hold under resets, are unchanged). Only `renounced` (the highest ever, which clears a dormant
 *   token once an owner is active at its version) ignores withdraws. A lost withdraw leaves the
 *   renounce binding: slower (the token waits dormant for the next recovery), never unsafe. (Issue
 *   29: without it, ~136 live hand-offs per rolling restart arrived void at a member that had
 *   renounced during the start-up's table churn, each costing ~370 ms of recovery.)
 * - DRAIN (planned move A -> B): every node that adopts a table sends every member ONE drain
 *   marker `{version, active}` behind the entity messages it sent it (and the partitions active
 *   at it under that table), and starts BUFFERING each partition whose owner the table changed,
 *   until that owner announces it active (in a marker or `active`) at that version or newer.
 *   A, whose newest table moves p away, drains p (the region keeps arriving p-messages for the
 *   cargo, stops the entities with their snapshots) and hands the token with the cargo to the
 *   owner in its newest table once the region drained AND every member of its view sent a marker
 *   at the drain's version or newer (or is fenced). B activates: restores snapshots, delivers the
 *   forwarded messages, then announces `active`; the senders flush their buffers to B in order.
 *   At most `maxConcurrentHandOffs` drains run at once; the rest queue, all in one round.
 * - FAREWELL: a node that stops closes its region (it routes nothing more) and then sends every
 *   member `farewell` on the same path as its markers, so behind all it sent them: it counts as
 *   marked at every version. Without it a drain waits for a departed incarnation's FENCE (its
 *   lease and the pause bound), which in a rolling restart came ~650 ms after the table that
 *   brought its next incarnation back (issue 29). A lost farewell leaves the fence, as before.
 * - BEFORE THE FIRST TABLE a node bids for its owner lease (with its first view): the lease round
 *   overlaps the table's arrival instead of following it (issue 29: a joining node's partitions
 *   activated only after its lease, ~130 ms after its table). The lease alone activates nothing.
 * - A former owner that never got the token back reroutes the messages it held for p only once
 *   every member marked its new table (a token handed to it under an older table, whose cargo
 *   they belong in ahead of later ones, has arrived by then).
 * - A node acts only on its newest table: older tables are ignored.
 *
 * NOTHING WAITS FOREVER ON A LOST MESSAGE. A connection that resets drops what it had in flight
 * (FIFO otherwise), so every wait has a bounded-rate repair:
 * - A HAND-OFF is confirmed by a receipt; its sender keeps the hand-off (the machine keeps the
 *   cargo) until then and, every retry period, PROBES the receiver on the connection the hand-off
 *   took. The probe comes after the hand-off, so a receipt saying "not seen" means it was lost;
 *   the receiver also promises never to take that stamp (`refused`: a late copy is dropped), and
 *   the sender TAKES THE TOKEN BACK, as if handed to itself: activated if it owns p, else drained
 *   (with the messages it held for p meanwhile, behind the cargo) and handed to the owner in its
 *   newest table. (Sending it again to the old receiver reordered: the messages the sender held as
 *   an owner meanwhile could reach the next owner after newer ones.) The receiver being fenced
 *   ends the wait (the token dies there). A token whose stamp a node saw already is dropped.
 * - The CHAIN CHECK waits for a lost hand-off to come back into view, also one to the querier
 *   itself: it re-asks its receiver and its sender (who reports the token, or it dormant, once taken
 *   back), and stops waiting when its sender is fenced (a late copy is void at every member that
 *   renounced this round; the cargo died with its sender).
 * - A DRAIN MARKER may be sent again at any time (a marker sent now is still behind everything its
 *   sender sent before): a node waiting for one (a drain, held messages to reroute) or for an
 *   owner's activation (a buffering sender: markers carry the active partitions) asks that member
 *   `marker-request` every retry period, and a member back in reach gets our marker unasked.
 * - Queries are asked again every retry period (as before).
 * - A cargo over one frame travels in PARTS (hand-off-parts.ts), joined here in order; a gap
 *   discards the partial cargo (the probe has it sent again), as does its sender leaving reach.
 * - Hand-offs that reach a node back to back are GATHERED by its machine (hand-off-gather.ts) and
 *   taken in one step, `keeper.hand-offs`: exactly their single steps in arrival order with no
 *   settle between (each checked, receipted, voided or dropped on its own), so every rule above
 *   holds item by item; the batch activates together and each member hears one `active` and one
 *   withdraw (issue 29: a newest node took an old owner's 13–14 hand-offs in as many steps).
 *   Nothing new travels: old and new builds exchange the same messages.
 */

export interface KeeperPolicy {
  readonly selfKey: string;
  readonly partitionCount: number;
  /** Drains running at once on this node (the rest queue). */
  readonly maxConcurrentHandOffs: number;
  /** How often unanswered queries are asked again. */
  readonly retryMs: number;
  /**
   * false: this node lacks the partitions' role, so no table should name it an owner, and it
   * does not bid for an owner lease ahead of one (default true). Every bidder renews with every
   * member four times a lease, so a proxy-only node that bid anyway cost the cluster two
   * messages per member per round for nothing.
   */
  readonly mayOwn?: boolean;
}

/** The table as the keeper needs it: its version and the owner of each partition ('' unassigned). */
export interface KeeperTable {
  readonly version: number;
  readonly owners: readonly string[];
}

/** held: not running here; active: running; draining/drained: a drain began / the region finished it. */
export type TokenPhase = 'held' | 'active' | 'draining' | 'drained';

export interface Token {
  readonly stamp: Stamp;
  /** What came with it and was not yet given to the region (emptied on activation). */
  readonly cargo: HandOffCargo;
  readonly phase: TokenPhase;
  /** Our newest table names another owner: drain (when a slot is free) and hand off. */
  readonly leaving: boolean;
  /** The table version the move away began at: markers at this version or newer release it. */
  readonly drainVersion: number;
}

/** One member's latest answer to this node's query for one partition. */
export interface Heard {
  readonly seen: Stamp | null;
  readonly handed: { readonly to: string; readonly stamp: Stamp } | null;
  readonly dormant: { readonly stamp: Stamp; readonly cargo: HandOffCargo } | null;
}

export interface Query {
  readonly version: number;
  readonly round: number;
  readonly heard: Readonly<Record<string, Heard>>;
  /** Someone answered `newer`: wait for that table (its adoption restarts the query). */
  readonly blocked: boolean;
}

/** A token's epoch: the (table version, round) of the query that created it. */
export interface Epoch {
  readonly version: number;
  readonly round: number;
}

/** A renounce given to querier `by` at its epoch, not withdrawn (yet). */
export interface OpenRenounce extends Epoch {
  readonly by: string;
}

export interface PartitionState {
  readonly token: Token | null;
  readonly seen: Stamp | null;
  readonly handed: { readonly to: string; readonly stamp: Stamp } | null;
  /** The highest (version, round) ever renounced here (a dormant token goes once an owner is active at it). */
  readonly renounced: Epoch | null;
  /**
   * The highest renounce that binds for good (its querier may have created at it, or left our
   * view): a token of a lower epoch reaching us is void.
   */
  readonly voidBelow: Epoch | null;
  /**
   * The latest renounce per querier that it may still withdraw (at most one each): a token below
   * one of them is void too, until its querier withdraws it.
   */
  readonly withdrawable: readonly OpenRenounce[];
  readonly dormant: { readonly stamp: Stamp; readonly cargo: HandOffCargo } | null;
  readonly query: Query | null;
  /** Sender side: buffering since this table version, until `active` at it or newer. */
  readonly buffering: number | null;
  /** The newest `active` heard for this partition. */
  readonly activeAt: { readonly owner: string; readonly version: number } | null;
  /**
   * We stopped owning p at this version without its token: the region's held messages are
   * rerouted once every member marked it (a hand-off sent to us under an older table has arrived
   * by then, and with it they would go into the cargo, ahead of later ones).
   */
  readonly rerouteAt: number | null;
  /** The highest hand-off stamp we told its sender we never got: never taken here, should it come late. */
  readonly refused: Stamp | null;
  /** Our last hand-off, until its receiver confirms it: probed every retry period, taken back if lost. */
  readonly awaiting: {
    readonly to: string;
    readonly stamp: Stamp;
    /** Which sending this is (always 0: a lost hand-off is taken back, never sent twice). */
    readonly attempt: number;
    readonly probedAt: number;
  } | null;
}

export interface KeeperContext {
  readonly table: KeeperTable | null;
  /** Members of this node's view it can reach (self excluded). */
  readonly reachable: readonly string[];
  /** Members unreachable, downed or recently removed in this node's view: asked to be fenced when they block. */
  readonly absent: readonly string[];
  readonly fenced: Readonly<Record<string, true>>;
  /** Fences already asked for (asked once; the owner lease retries). */
  readonly fenceAsked: Readonly<Record<string, true>>;
  readonly lease: boolean;
  /** Highest drain-marker version heard from each member. */
  readonly markers: Readonly<Record<string, number>>;
  readonly parts: Readonly<Record<number, PartitionState>>;
  /** Queries from members at a newer table than ours: answered once we adopt it. */
  readonly pending: Readonly<Record<string, TokenQuery>>;
  readonly nextRound: number;
  readonly lastRetryAt: number;
  /** Chunked hand-offs being joined, by `${from} ${partition}`. */
  readonly assembling: Readonly<Record<string, Assembly>>;
  /**
   * Hand-offs the machine gathered as they arrived, not decided yet (hand-off-gather.ts): kept in
   * the context so the machine stays a function of its events. `decide` never reads it.
   */
  readonly gathered: readonly HandOff[];
}

export const initialKeeperContext: KeeperContext = {
  table: null,
  reachable: [],
  absent: [],
  fenced: {},
  fenceAsked: {},
  lease: false,
  markers: {},
  parts: {},
  pending: {},
  nextRound: 1,
  lastRetryAt: 0,
  assembling: {},
  gathered: [],
};

export type KeeperEvent =
  | { readonly type: 'keeper.table'; readonly table: KeeperTable }
  | {
      readonly type: 'keeper.membership';
      readonly reachable: readonly string[];
      readonly absent: readonly string[];
    }
  | { readonly type: 'keeper.lease'; readonly held: boolean }
  | { readonly type: 'keeper.fenced'; readonly key: string }
  | { readonly type: 'keeper.region-drained'; readonly partition: number }
  | { readonly type: 'keeper.tick' }
  /** Our own hand-off of `handOff.partition`, lost on the way, back here (after a `take-back`). */
  | { readonly type: 'keeper.taken-back'; readonly handOff: HandOff }
  /**
   * Hand-offs that reached this node back to back (one inbound turn), in arrival order, gathered by
   * the machine (hand-off-gather.ts): nothing new on the wire, each is a `sharding.hand-off` as sent.
   */
  | { readonly type: 'keeper.hand-offs'; readonly handOffs: readonly HandOff[] }
  | KeeperMessage
  | HandOffPart;

export type KeeperEffect =
  | LogEffect
  | {
      readonly kind: 'activate';
      readonly partition: number;
      readonly version: number;
      readonly cargo: HandOffCargo;
      /** Reactivation of a drained partition: the region's own cargo comes first. */
      readonly takeRegionCargo: boolean;
    }
  | { readonly kind: 'deactivate'; readonly partition: number; readonly reason: 'lease-lost' }
  | { readonly kind: 'drain'; readonly partition: number }
  | { readonly kind: 'reroute'; readonly partition: number }
  | {
      readonly kind: 'hand-off';
      readonly to: string;
      readonly partition: number;
      readonly stamp: Stamp;
      readonly version: number;
      /** Cargo that came with the token and never reached the region: sent before the region's. */
      readonly cargo: HandOffCargo;
    }
  /** Send the kept hand-off of p again (same stamp), to `to`. */
  /**
   * The hand-off of p never reached its receiver (which promised never to take it): the machine
   * gives the kept hand-off back to this node's decisions at once (`keeper.taken-back`).
   */
  | { readonly kind: 'take-back'; readonly partition: number }
  /** The hand-off of p was received (or its receiver fenced): the kept cargo may go. */
  | { readonly kind: 'forget-hand-off'; readonly partition: number }
  | { readonly kind: 'start-buffering'; readonly partition: number }
  | { readonly kind: 'flush'; readonly partition: number; readonly owner: string }
  | { readonly kind: 'marker'; readonly to: string; readonly marker: Omit<DrainMarker, 'type'> }
  | { readonly kind: 'send'; readonly to: string; readonly message: KeeperMessage }
  | { readonly kind: 'fence'; readonly key: string }
  | { readonly kind: 'want-own-lease'; readonly active: boolean }
  /** How many partitions' tokens this node holds now, in any phase (after a step that changed it). */
  | { readonly kind: 'tokens-held'; readonly count: number }
  /** Counted in `doyen_sharding_keeper_events_total{event}`. */
  | { readonly kind: 'count'; readonly event: KeeperCounted };

export type KeeperCounted =
  | 'token-created'
  | 'token-void'
  | 'renounce-withdrawn'
  | 'token-duplicate'
  | 'handed-off'
  | 'activated'
  | 'lease-lost'
  | 'refused'
  | 'hand-off-taken-back'
  | 'token-late'
  | 'hand-off-abandoned'
  | 'hand-off-parts-discarded'
  | 'marker-requested'
  | 'cargo-entry-dropped';

export interface KeeperStep extends DecisionStep<KeeperContext, KeeperEffect> {
  /** When the machine's timer must fire next (ms from now); null: nothing to retry. */
  readonly wakeInMs: number | null;
}

// ---- stamps ------------------------------------------------------------------------------------

/** Epoch order (version, round), then hops. */
export function compareStamps(a: Stamp, b: Stamp): number {
  return a.version - b.version || a.round - b.round || a.seq - b.seq;
}

/** Whether a token of this stamp is void under a renounce of (version, round). */
export function voidUnder(stamp: Stamp, bound: Epoch | null): boolean {
  return bound !== null && epochBelow(stamp, bound);
}

function epochBelow(a: Epoch, b: Epoch): boolean {
  return a.version < b.version || (a.version === b.version && a.round < b.round);
}

const maxEpoch = (a: Epoch | null, b: Epoch | null): Epoch | null =>
  a === null ? b : b === null || !epochBelow(a, b) ? a : b;

/** The epoch below which a token reaching this member is void: its binding renounce or an open one. */
function voidBound(part: PartitionState): Epoch | null {
  let bound = part.voidBelow;
  for (const r of part.withdrawable) bound = maxEpoch(bound, { version: r.version, round: r.round });
  return bound;
}

const maxStamp = (a: Stamp | null, b: Stamp | null): Stamp | null =>
  a === null ? b : b === null ? a : compareStamps(a, b) >= 0 ? a : b;

// ---- the step builder --------------------------------------------------------------------------

const EMPTY_PART: PartitionState = {
  token: null,
  seen: null,
  handed: null,
  renounced: null,
  voidBelow: null,
  withdrawable: [],
  dormant: null,
  query: null,
  buffering: null,
  activeAt: null,
  rerouteAt: null,
  refused: null,
  awaiting: null,
};

const NO_CARGO: HandOffCargo = { snapshots: [], forwarded: [] };

/**
 * A mutable working copy of one decision: the context is rebuilt once, effects appended. The
 * partition states are copied on the first write only, and their keys listed once per step (and
 * again after a write adds one): every event runs `settle` over all ~271 partitions, and copying
 * and listing them several times per event cost ~0.2 ms, on every keeper of a move (issue 29).
 */
class Step {
  ctx: KeeperContext;
  readonly effects: KeeperEffect[] = [];
  private parts: Record<number, PartitionState>;
  /** Whether `parts` is this step's own copy (written) or still the context's (read only). */
  private copied = false;
  /** Partitions written in this step: only these can have become empty (dropped in `result`). */
  private readonly written = new Set<number>();
  /** `partitions()` until a write adds a key; never changed in place (callers iterate it). */
  private keys: number[] | null = null;
  /** A token came or went in this step: the count is reported (a retiring node waits for 0). */
  private tokensChanged = false;

  constructor(
    readonly policy: KeeperPolicy,
    ctx: KeeperContext,
    readonly now: number,
  ) {
    this.ctx = ctx;
    this.parts = ctx.parts;
  }

  part(p: number): PartitionState {
    return this.parts[p] ?? EMPTY_PART;
  }

  setPart(p: number, patch: Partial<PartitionState>): void {
    const before = this.parts[p];
    if (patch.token !== undefined && (patch.token === null) !== ((before ?? EMPTY_PART).token === null))
      this.tokensChanged = true;
    if (!this.copied) {
      this.parts = { ...this.parts };
      this.copied = true;
    }
    if (before === undefined) this.keys = null;
    this.written.add(p);
    this.parts[p] = { ...(before ?? EMPTY_PART), ...patch };
  }

  /** The partitions with any state here, ascending (a fresh array after a write added one). */
  partitions(): number[] {
    if (this.keys === null) this.keys = Object.keys(this.parts).map(Number);
    return this.keys;
  }

  set(patch: Partial<KeeperContext>): void {
    this.ctx = { ...this.ctx, ...patch };
  }

  log(level: 'debug' | 'info' | 'warn', event: string, fields: Record<string, unknown>, msg: string): void {
    this.effects.push({ kind: 'log', level, event, fields, msg });
  }

  count(event: KeeperCounted): void {
    this.effects.push({ kind: 'count', event });
  }

  message(to: string, message: KeeperMessage): void {
    this.effects.push({ kind: 'send', to, message });
  }

  ownerOf(p: number): string | undefined {
    return this.ctx.table?.owners[p] || undefined;
  }

  result(): KeeperStep {
    // the context's states hold no empty one (each came from a result): only written ones can be
    let parts = this.parts;
    if ([...this.written].some((p) => isEmptyPart(parts[p]!))) {
      const kept: Record<number, PartitionState> = {};
      for (const [k, v] of Object.entries(parts)) if (!isEmptyPart(v)) kept[Number(k)] = v;
      parts = kept;
    }
    if (this.tokensChanged) {
      let tokens = 0;
      for (const v of Object.values(parts)) if (v.token !== null) tokens++;
      this.effects.push({ kind: 'tokens-held', count: tokens });
    }
    const context = { ...this.ctx, parts };
    const open =
      Object.values(parts).some((s) => (s.query !== null && !s.query.blocked) || s.awaiting !== null) ||
      markerWants(this).size > 0;
    // a fixed due time (the last retry plus the period): a stream of other events cannot postpone it
    const due = Math.max(0, context.lastRetryAt + this.policy.retryMs - this.now);
    return { context, effects: this.effects, wakeInMs: open ? due : null };
  }
}

function isEmptyPart(s: PartitionState): boolean {
  return (
    s.token === null &&
    s.seen === null &&
    s.handed === null &&
    s.renounced === null &&
    s.voidBelow === null &&
    s.withdrawable.length === 0 &&
    s.dormant === null &&
    s.query === null &&
    s.buffering === null &&
    s.activeAt === null &&
    s.rerouteAt === null &&
    s.refused === null &&
    s.awaiting === null
  );
}

// ---- decide ------------------------------------------------------------------------------------

export function decide(
  policy: KeeperPolicy,
  ctx: KeeperContext,
  event: KeeperEvent,
  now: number,
): KeeperStep {
  const s = new Step(policy, ctx, now);
  switch (event.type) {
    case 'keeper.table':
      adoptTable(s, event.table);
      break;
    case 'keeper.membership':
      membershipChanged(s, event.reachable, event.absent);
      break;
    case 'keeper.lease':
      leaseChanged(s, event.held);
      break;
    case 'keeper.fenced':
      s.set({ fenced: { ...s.ctx.fenced, [event.key]: true } });
      break;
    case 'keeper.region-drained': {
      const t = s.part(event.partition).token;
      if (t?.phase === 'draining') s.setPart(event.partition, { token: { ...t, phase: 'drained' } });
      break;
    }
    case 'keeper.tick':
      retry(s);
      break;
    case 'keeper.taken-back':
      takenBack(s, event.handOff);
      break;
    case 'sharding.drain-marker':
      markerReceived(s, event);
      break;
    case 'sharding.farewell':
      farewellReceived(s, event);
      break;
    case 'sharding.token-query':
      queryReceived(s, event);
      break;
    case 'sharding.token-withdraw':
      withdrawReceived(s, event);
      break;
    case 'sharding.token-answer':
      answerReceived(s, event);
      break;
    case 'sharding.hand-off':
      tokenReceived(s, event);
      break;
    case 'keeper.hand-offs': {
      // each as its own step would take it, with no settle between: one activation, one notice
      const abandoned: { partition: number; query: Query }[] = [];
      for (const h of event.handOffs) tokenReceived(s, h, false, abandoned);
      if (abandoned.length > 0) withdraw(s, abandoned);
      break;
    }
    case 'sharding.active':
      activeReceived(s, event);
      break;
    case 'sharding.hand-off-part':
      partReceived(s, event);
      break;
    case 'sharding.hand-off-probe':
      probeReceived(s, event);
      break;
    case 'sharding.hand-off-receipt':
      receiptReceived(s, event);
      break;
    case 'sharding.marker-request':
      // a marker sent now is behind all we sent before: always correct to send again
      if (s.ctx.reachable.includes(event.from)) sendMarker(s, event.from);
      break;
  }
  settle(s);
  return s.result();
}

// ---- events ------------------------------------------------------------------------------------

function adoptTable(s: Step, table: KeeperTable): void {
  const old = s.ctx.table;
  if (old !== null && table.version <= old.version) return; // only the newest table counts
  if (table.owners.length !== s.policy.partitionCount) {
    s.log('warn', 'sharding.table-refused', { version: table.version }, 'table with a wrong partition count');
    s.count('refused');
    return;
  }
  s.set({ table });
  const self = s.policy.selfKey;
  if (s.policy.mayOwn !== false) {
    if (old === null) s.effects.push({ kind: 'want-own-lease', active: true });
  } else if (table.owners.includes(self) && !old?.owners.includes(self)) {
    // a table made by a member with another partitions.role: bid, or its partitions never run
    s.log(
      'warn',
      'sharding.owner-without-role',
      { version: table.version },
      'named an owner without the partitions role',
    );
    s.effects.push({ kind: 'want-own-lease', active: true });
  }
  const abandoned: { partition: number; query: Query }[] = [];
  for (let p = 0; p < table.owners.length; p++) {
    const owner = table.owners[p] || undefined;
    const before = old ? old.owners[p] || undefined : undefined;
    const part = s.part(p);
    // sender side: a changed owner (or a first table) means buffer until it announces itself
    if (old === null || before !== owner) {
      const announced =
        part.activeAt !== null && part.activeAt.owner === owner && part.activeAt.version >= table.version;
      if (part.buffering === null) s.effects.push({ kind: 'start-buffering', partition: p });
      if (announced) {
        s.effects.push({ kind: 'flush', partition: p, owner: owner! });
        s.setPart(p, { buffering: null });
      } else s.setPart(p, { buffering: table.version });
    }
    // messages we held as owner go on once no token can still come to us under an older table
    if (before === self && owner !== self && part.token === null) s.setPart(p, { rerouteAt: table.version });
    else if (owner === self && part.rerouteAt !== null) s.setPart(p, { rerouteAt: null });
    // a query for an older table is over (withdrawn below): ours again restarts it at this version
    if (part.query !== null) {
      abandoned.push({ partition: p, query: part.query });
      s.setPart(p, { query: null });
    }
    const t = s.part(p).token;
    if (t !== null && (t.phase === 'active' || t.phase === 'held')) {
      // not yet draining: leave, or stay after all (a drain once begun always finishes)
      const leaving = owner !== self;
      if (leaving !== t.leaving)
        s.setPart(p, { token: { ...t, leaving, drainVersion: leaving ? table.version : t.drainVersion } });
    }
  }
  // before this table's queries: on each connection the withdraw comes first
  withdraw(s, abandoned);
  // every member learns we route by this table now, behind what we sent it before
  for (const to of s.ctx.reachable) sendMarker(s, to);
  // and we are a sender too: what stays active here under this table is announced to ourselves
  const mine = activeHere(s);
  if (mine.length > 0)
    activeReceived(s, { type: 'sharding.active', from: self, version: table.version, partitions: mine });
  startQueries(s);
  // queries that waited for this table
  const pending = { ...s.ctx.pending };
  for (const [from, q] of Object.entries(pending)) {
    if (q.version <= table.version) {
      delete pending[from];
      s.set({ pending });
      answerQuery(s, q);
    }
  }
}

function membershipChanged(s: Step, reachable: readonly string[], absent: readonly string[]): void {
  const self = s.policy.selfKey;
  const before = new Set(s.ctx.reachable);
  s.set({ reachable: reachable.filter((k) => k !== self), absent: absent.filter((k) => k !== self) });
  // a member back in reach is no longer being fenced: ask again if it goes away again
  const asked = { ...s.ctx.fenceAsked };
  for (const k of s.ctx.reachable) delete asked[k];
  // what we keep per member, only for members still in our view (bounded by it)
  const inView = new Set([...s.ctx.reachable, ...s.ctx.absent]);
  const markers = Object.fromEntries(Object.entries(s.ctx.markers).filter(([k]) => inView.has(k)));
  const pending = Object.fromEntries(Object.entries(s.ctx.pending).filter(([k]) => inView.has(k)));
  // a partial cargo from a member out of reach is discarded (its sender's probe finds it lost)
  const assembling = Object.fromEntries(
    Object.entries(s.ctx.assembling).filter(([k]) => s.ctx.reachable.includes(k.split(' ')[0]!)),
  );
  if (Object.keys(assembling).length !== Object.keys(s.ctx.assembling).length) {
    s.log(
      'info',
      'sharding.hand-off-parts-discarded',
      { why: 'sender out of reach' },
      'partial cargo discarded',
    );
    s.count('hand-off-parts-discarded');
  }
  s.set({ fenceAsked: asked, markers, pending, assembling });
  // renounces given to a member gone from our view bind for good (it may have created): bounded by the view
  for (const p of s.partitions()) {
    const part = s.part(p);
    if (part.withdrawable.every((r) => inView.has(r.by))) continue;
    let voidBelow = part.voidBelow;
    for (const r of part.withdrawable)
      if (!inView.has(r.by)) voidBelow = maxEpoch(voidBelow, { version: r.version, round: r.round });
    s.setPart(p, { voidBelow, withdrawable: part.withdrawable.filter((r) => inView.has(r.by)) });
  }
  // a member new to us, or back in reach, may have missed our marker and announcements
  for (const to of s.ctx.reachable) if (!before.has(to)) sendMarker(s, to);
  if (s.ctx.table === null) bidBeforeFirstTable(s, before);
}

/**
 * A node without a table yet (it just started) bids for its owner lease with its first view, not
 * with its first table: the lease round (a majority of the voters, busy with the join's table)
 * then overlaps the table's arrival instead of following it. Issue 29, rolling restart: the
 * newest node's table came 22–120 ms after its view and its lease 65–230 ms after the table, and
 * it activates nothing before. The lease alone activates nothing (that needs a table naming this
 * node and the token).
 */
function bidBeforeFirstTable(s: Step, before: ReadonlySet<string>): void {
  if (before.size === 0 && s.ctx.reachable.length > 0 && s.policy.mayOwn !== false)
    s.effects.push({ kind: 'want-own-lease', active: true });
}

function leaseChanged(s: Step, held: boolean): void {
  if (held === s.ctx.lease) return;
  s.set({ lease: held });
  if (held) {
    s.log('info', 'sharding.lease-held', {}, 'own owner lease held: partitions may activate');
    return;
  }
  s.log('warn', 'sharding.lease-lost', {}, 'own owner lease lost: every entity stopped, tokens kept');
  s.count('lease-lost');
  for (const p of s.partitions()) {
    const t = s.part(p).token;
    if (t === null || t.phase === 'held') continue;
    // a drain's kept messages and snapshots go too: the entities stop NOW, no hand-off
    s.effects.push({ kind: 'deactivate', partition: p, reason: 'lease-lost' });
    s.setPart(p, { token: { ...t, phase: 'held', leaving: s.ownerOf(p) !== s.policy.selfKey } });
  }
}

function markerReceived(s: Step, m: DrainMarker): void {
  if ((s.ctx.markers[m.from] ?? -1) < m.version)
    s.set({ markers: { ...s.ctx.markers, [m.from]: m.version } });
  // the marker also says what is active at its sender under this table
  if (m.active.length > 0)
    activeReceived(s, { type: 'sharding.active', from: m.from, version: m.version, partitions: m.active });
}

/** The marker a farewell stands for: at every version a drain or a reroute can wait for. */
const FAREWELL_MARKER = Number.MAX_SAFE_INTEGER;

/**
 * A member of our view stopped and sends no entity message any more, and everything it sent came
 * before this on the same path: it counts as marked at every version, so our drains stop waiting
 * for it (they used to wait for its fence: lease plus pause bound, ~650 ms after the table that
 * brought its next incarnation back). A farewell from a key outside our view changes nothing.
 */
function farewellReceived(s: Step, m: Farewell): void {
  if (!s.ctx.reachable.includes(m.from) && !s.ctx.absent.includes(m.from)) return;
  s.set({ markers: { ...s.ctx.markers, [m.from]: FAREWELL_MARKER } });
  s.log('debug', 'sharding.farewell-received', { from: m.from }, 'a stopped member sends no more: marked');
}

/** Partitions active here that our newest table leaves with us (announced in our markers). */
function activeHere(s: Step): number[] {
  const self = s.policy.selfKey;
  return s.partitions().filter((p) => {
    const t = s.part(p).token;
    return t?.phase === 'active' && !t.leaving && s.ownerOf(p) === self;
  });
}

function sendMarker(s: Step, to: string): void {
  const table = s.ctx.table;
  if (table === null) return;
  s.effects.push({
    kind: 'marker',
    to,
    marker: { from: s.policy.selfKey, version: table.version, active: activeHere(s) },
  });
}

function queryReceived(s: Step, q: TokenQuery): void {
  const table = s.ctx.table;
  if (table === null || q.version > table.version) {
    s.set({ pending: { ...s.ctx.pending, [q.from]: q } });
    return;
  }
  answerQuery(s, q);
}

/** Our answer to a query at our table's version or older (see the file's comment). */
function answerQuery(s: Step, q: TokenQuery): void {
  const table = s.ctx.table!;
  if (q.version < table.version) {
    s.message(q.from, {
      type: 'sharding.token-answer',
      from: s.policy.selfKey,
      version: q.version,
      round: q.round,
      newer: table.version,
      answers: [],
    });
    return;
  }
  const answers: PartitionAnswer[] = [];
  for (const p of q.partitions) {
    if (p >= s.policy.partitionCount) {
      refuse(s, q.from, 'partition out of range', { partition: p });
      continue;
    }
    const part = s.part(p);
    if (part.token !== null) continue; // our answer is the hand-off (we are not owner at this version)
    // nor while our hand-off is unconfirmed: a renounce now would void the token if we must take it
    // back (its cargo then only reachable through an answer); the receipt comes within a round trip
    if (part.awaiting !== null) continue;
    renounce(s, p, q.from, { version: q.version, round: q.round });
    answers.push({ partition: p, seen: part.seen, handed: part.handed, dormant: part.dormant });
  }
  s.message(q.from, {
    type: 'sharding.token-answer',
    from: s.policy.selfKey,
    version: q.version,
    round: q.round,
    newer: null,
    answers,
  });
}

/**
 * Our promise to querier `by`: a token below `epoch` reaching us is void. Its previous renounce,
 * if it was not withdrawn before this later query (FIFO: a withdraw comes before the next query),
 * may be one it created at: that one binds for good.
 */
function renounce(s: Step, p: number, by: string, epoch: Epoch): void {
  const part = s.part(p);
  const renounced = maxEpoch(part.renounced, epoch);
  const before = part.withdrawable.find((r) => r.by === by);
  if (before !== undefined && before.version === epoch.version && before.round === epoch.round) {
    s.setPart(p, { renounced });
    return;
  }
  s.setPart(p, {
    renounced,
    voidBelow:
      before === undefined
        ? part.voidBelow
        : maxEpoch(part.voidBelow, { version: before.version, round: before.round }),
    withdrawable: [...part.withdrawable.filter((r) => r.by !== by), { by, ...epoch }],
  });
}

/**
 * Our queries ended without creating (the token came, or a newer table): we never create at
 * their epochs, so every member may drop the renounces it gave them (and queries it keeps for a
 * newer table). One message per epoch, to every member we reach.
 */
function withdraw(s: Step, abandoned: readonly { partition: number; query: Query }[]): void {
  const byEpoch = new Map<string, { version: number; round: number; partitions: number[] }>();
  for (const { partition, query } of abandoned) {
    const k = `${query.version}/${query.round}`;
    const e = byEpoch.get(k) ?? { version: query.version, round: query.round, partitions: [] };
    e.partitions.push(partition);
    byEpoch.set(k, e);
  }
  for (const e of byEpoch.values())
    for (const to of s.ctx.reachable)
      s.message(to, { type: 'sharding.token-withdraw', from: s.policy.selfKey, ...e });
}

/**
 * A querier withdrew (version, round): the renounce it holds here at exactly that epoch goes (a
 * token kept dormant meanwhile stays so: recovery takes it, as it would have). A withdraw of an
 * older epoch than its open renounce changes nothing: that one may have been superseded after a
 * creation, and binds.
 */
function withdrawReceived(s: Step, w: TokenWithdraw): void {
  let dropped = 0;
  for (const p of w.partitions) {
    if (p >= s.policy.partitionCount) {
      refuse(s, w.from, 'partition out of range', { partition: p });
      continue;
    }
    const part = s.part(p);
    const open = part.withdrawable.filter(
      (r) => !(r.by === w.from && r.version === w.version && r.round === w.round),
    );
    if (open.length === part.withdrawable.length) continue;
    s.setPart(p, { withdrawable: open });
    dropped++;
  }
  const q = s.ctx.pending[w.from];
  if (q !== undefined && q.version === w.version && q.round === w.round) {
    const pending = { ...s.ctx.pending };
    const rest = q.partitions.filter((p) => !w.partitions.includes(p));
    if (rest.length === 0) delete pending[w.from];
    else pending[w.from] = { ...q, partitions: rest };
    s.set({ pending });
  }
  if (dropped > 0) s.count('renounce-withdrawn');
}

function answerReceived(s: Step, a: TokenAnswer): void {
  const table = s.ctx.table;
  if (table === null) return;
  if (a.newer !== null && a.newer > table.version) {
    for (const p of s.partitions()) {
      const q = s.part(p).query;
      if (q !== null && q.version === a.version) s.setPart(p, { query: { ...q, blocked: true } });
    }
    return;
  }
  for (const ans of a.answers) {
    const q = s.part(ans.partition).query;
    if (q === null || q.version !== a.version || q.round !== a.round) continue;
    const heard: Heard = { seen: ans.seen, handed: ans.handed, dormant: ans.dormant };
    s.setPart(ans.partition, { query: { ...q, heard: { ...q.heard, [a.from]: heard } } });
  }
}

/** Input no honest member sends: dropped, logged, counted. */
function refuse(s: Step, from: string, why: string, fields: Record<string, unknown>): void {
  s.log('warn', 'sharding.refused', { from, why, ...fields }, `keeper message refused: ${why}`);
  s.count('refused');
}

/**
 * `local`: our own hand-off taken back (no receipt, no late-arrival check). `abandoned`: gathers
 * the queries the token ends, for a batch to withdraw once per member, instead of withdrawing here.
 */
function tokenReceived(
  s: Step,
  h: HandOff,
  local = false,
  abandoned?: { partition: number; query: Query }[],
): void {
  const p = h.partition;
  if (p >= s.policy.partitionCount) {
    refuse(s, h.from, 'partition out of range', { partition: p });
    return;
  }
  // a token is created at a table version and handed on under that one or newer
  if (h.stamp.version > h.version) {
    refuse(s, h.from, 'token newer than its hand-off', { partition: p, stamp: h.stamp, version: h.version });
    return;
  }
  const part = s.part(p);
  if (!local && part.refused !== null && compareStamps(h.stamp, part.refused) <= 0) {
    // we told its sender we never got it, and it took the token back: this copy is dead
    s.log(
      'warn',
      'sharding.token-late',
      { partition: p, from: h.from, stamp: h.stamp },
      'a hand-off arrived after we answered its probe that it was lost: dropped',
    );
    s.count('token-late');
    return;
  }
  // the sender keeps it until we confirm (it probes and takes it back if we never got it)
  if (!local)
    s.message(h.from, {
      type: 'sharding.hand-off-receipt',
      from: s.policy.selfKey,
      partition: p,
      stamp: h.stamp,
      attempt: 0,
      received: true,
    });
  const seen = maxStamp(part.seen, h.stamp);
  if (voidUnder(h.stamp, voidBound(part))) {
    // we promised a querier: this token may have been recreated; keep its cargo for the next creation
    const keep = part.dormant === null || compareStamps(h.stamp, part.dormant.stamp) > 0;
    s.setPart(p, { seen, dormant: keep ? { stamp: h.stamp, cargo: h.cargo } : part.dormant });
    s.log(
      'warn',
      'sharding.token-void',
      { partition: p, from: h.from, stamp: h.stamp },
      'a token older than a renounce arrived: kept dormant',
    );
    s.count('token-void');
    return;
  }
  if (part.seen !== null && compareStamps(h.stamp, part.seen) <= 0) {
    // a replay of a hop we took, or of one its chain has passed: never a second token
    s.log(
      'info',
      'sharding.token-stale',
      { partition: p, from: h.from, stamp: h.stamp, seen: part.seen },
      'a token we saw already (or an older one) arrived: dropped',
    );
    s.count('token-duplicate');
    return;
  }
  if (part.token !== null) {
    s.setPart(p, { seen });
    s.log(
      'warn',
      'sharding.token-duplicate',
      { partition: p, from: h.from, stamp: h.stamp },
      'a second token arrived: dropped',
    );
    s.count('token-duplicate');
    return;
  }
  const leaving = s.ownerOf(p) !== s.policy.selfKey;
  // our query for p is over without a creation: its renounces bind nobody
  if (part.query !== null) {
    if (abandoned) abandoned.push({ partition: p, query: part.query });
    else withdraw(s, [{ partition: p, query: part.query }]);
  }
  s.setPart(p, {
    seen,
    query: null,
    rerouteAt: null, // what we held goes with the token now
    token: {
      stamp: h.stamp,
      cargo: h.cargo,
      phase: 'held',
      leaving,
      drainVersion: s.ctx.table?.version ?? 0,
    },
  });
}

/** One part of a chunked hand-off: joined in order; the last one is the hand-off. */
function partReceived(s: Step, part: HandOffPart): void {
  if (part.partition >= s.policy.partitionCount) {
    refuse(s, part.from, 'partition out of range', { partition: part.partition });
    return;
  }
  const key = `${part.from} ${part.partition}`;
  const assembling = { ...s.ctx.assembling };
  const joined = joinPart(assembling[key], part, 2 * MAX_CARGO_ENTRIES);
  delete assembling[key];
  if (joined.kind === 'partial') assembling[key] = joined.assembly;
  s.set({ assembling });
  if (joined.kind === 'discarded') {
    s.log(
      'warn',
      'sharding.hand-off-parts-discarded',
      { partition: part.partition, from: part.from, why: joined.why, index: part.index, total: part.total },
      `partial hand-off discarded: ${joined.why} (its sender's probe finds it lost and takes it back)`,
    );
    s.count('hand-off-parts-discarded');
  } else if (joined.kind === 'complete') tokenReceived(s, joined.handOff);
}

function probeReceived(s: Step, probe: HandOffProbe): void {
  if (probe.partition >= s.policy.partitionCount) {
    refuse(s, probe.from, 'partition out of range', { partition: probe.partition });
    return;
  }
  const part = s.part(probe.partition);
  // the probe came after the hand-off on one connection: not seen by now means lost
  const received = part.seen !== null && compareStamps(part.seen, probe.stamp) >= 0;
  // and if it still came (another path, a transport that reorders), we will not take it: its sender takes it back
  if (!received) s.setPart(probe.partition, { refused: maxStamp(part.refused, probe.stamp) });
  s.message(probe.from, {
    type: 'sharding.hand-off-receipt',
    from: s.policy.selfKey,
    partition: probe.partition,
    stamp: probe.stamp,
    attempt: probe.attempt,
    received,
  });
}

function receiptReceived(s: Step, r: HandOffReceipt): void {
  if (r.partition >= s.policy.partitionCount) {
    refuse(s, r.from, 'partition out of range', { partition: r.partition });
    return;
  }
  const a = s.part(r.partition).awaiting;
  if (a === null || a.to !== r.from || compareStamps(a.stamp, r.stamp) !== 0) return;
  if (r.received) {
    s.setPart(r.partition, { awaiting: null });
    s.effects.push({ kind: 'forget-hand-off', partition: r.partition });
    return;
  }
  if (r.attempt !== a.attempt) return;
  // lost on the way, and its receiver will never take it: the token is ours again
  s.effects.push({ kind: 'take-back', partition: r.partition });
  s.setPart(r.partition, { awaiting: null });
}

/**
 * Our hand-off back here (its receiver never got it and promised never to take it): as if it had
 * been handed to us. Its cargo comes first, the messages our region held for p after it; then the
 * usual rules: activate if we own p, else drain and hand it (with what we held) to the owner in our
 * newest table. A renounce we gave since makes it void here (kept dormant, its cargo reported).
 * Our `handed` record goes: that hand-off never happened (queriers re-ask us, see `missingAnswers`).
 */
function takenBack(s: Step, h: HandOff): void {
  const p = h.partition;
  s.setPart(p, { handed: null });
  s.log(
    'warn',
    'sharding.hand-off-taken-back',
    { partition: p, stamp: h.stamp },
    'a hand-off was lost on the way (a reset connection): token taken back',
  );
  s.count('hand-off-taken-back');
  tokenReceived(s, h, true);
}

/**
 * The members whose drain marker we wait for, each with the version we need: drained partitions
 * waiting to hand off, held messages waiting to be rerouted, and (markers carry the partitions
 * active at their sender) buffers waiting for their owner's activation.
 */
function markerWants(s: Step): Map<string, number> {
  const wants = new Map<string, number>();
  const table = s.ctx.table;
  if (table === null) return wants;
  const self = s.policy.selfKey;
  const want = (key: string, version: number) => {
    if (key === self || s.ctx.fenced[key] || !s.ctx.reachable.includes(key)) return;
    wants.set(key, Math.max(wants.get(key) ?? -1, version));
  };
  const everyone = (version: number) => {
    for (const key of s.ctx.reachable) if ((s.ctx.markers[key] ?? -1) < version) want(key, version);
  };
  for (const p of s.partitions()) {
    const part = s.part(p);
    const t = part.token;
    if (t?.phase === 'drained' && table.owners[p] !== self) everyone(t.drainVersion);
    if (part.rerouteAt !== null && t === null) everyone(part.rerouteAt);
    const owner = table.owners[p];
    if (part.buffering !== null && owner && owner !== self) want(owner, part.buffering);
  }
  return wants;
}

function activeReceived(s: Step, a: ActiveNotice): void {
  for (const p of a.partitions) {
    if (p >= s.policy.partitionCount) {
      refuse(s, a.from, 'partition out of range', { partition: p });
      continue;
    }
    const part = s.part(p);
    if (part.activeAt !== null && part.activeAt.version > a.version) continue;
    const patch: { -readonly [K in keyof PartitionState]?: PartitionState[K] } = {
      activeAt: { owner: a.from, version: a.version },
    };
    if (part.dormant !== null && part.renounced !== null && a.version >= part.renounced.version)
      patch.dormant = null;
    if (part.buffering !== null && a.version >= part.buffering && s.ownerOf(p) === a.from) {
      s.effects.push({ kind: 'flush', partition: p, owner: a.from });
      patch.buffering = null;
    }
    s.setPart(p, patch);
  }
}

function retry(s: Step): void {
  if (s.now - s.ctx.lastRetryAt < s.policy.retryMs) return;
  s.set({ lastRetryAt: s.now });
  const byMember = new Map<string, { version: number; round: number; partitions: number[] }>();
  for (const p of s.partitions()) {
    const q = s.part(p).query;
    if (q === null || q.blocked) continue;
    for (const key of missingAnswers(s, p, q)) {
      const entry = byMember.get(key) ?? { version: q.version, round: q.round, partitions: [] };
      entry.partitions.push(p);
      byMember.set(key, entry);
    }
  }
  for (const [to, e] of byMember)
    s.message(to, { type: 'sharding.token-query', from: s.policy.selfKey, ...e });
  // unconfirmed hand-offs: probe their receivers (behind the hand-off, on its connection)
  for (const p of s.partitions()) {
    const a = s.part(p).awaiting;
    if (a === null || s.now - a.probedAt < s.policy.retryMs) continue;
    s.setPart(p, { awaiting: { ...a, probedAt: s.now } });
    s.message(a.to, {
      type: 'sharding.hand-off-probe',
      from: s.policy.selfKey,
      partition: p,
      stamp: a.stamp,
      attempt: a.attempt,
    });
  }
  // markers we wait for: asked again (a lost one would hold a drain or a buffer forever)
  for (const [to, version] of markerWants(s)) {
    s.message(to, { type: 'sharding.marker-request', from: s.policy.selfKey, version });
    s.count('marker-requested');
  }
}

// ---- what follows every event ------------------------------------------------------------------

/** Queries for every partition we own without a token (batched: one message per member). */
function startQueries(s: Step): void {
  const table = s.ctx.table;
  if (table === null) return;
  const self = s.policy.selfKey;
  const round = s.ctx.nextRound;
  const asked: number[] = [];
  for (let p = 0; p < table.owners.length; p++) {
    const part = s.part(p);
    if (table.owners[p] !== self || part.token !== null || part.query !== null) continue;
    s.setPart(p, { query: { version: table.version, round, heard: {}, blocked: false } });
    asked.push(p);
  }
  if (asked.length === 0) return;
  s.set({ nextRound: round + 1, lastRetryAt: s.now });
  const q = {
    type: 'sharding.token-query',
    from: self,
    version: table.version,
    round,
    partitions: asked,
  } as const;
  for (const to of s.ctx.reachable) s.message(to, q);
}

/** Members whose answer a query still needs (see `closed`): asked again on the next retry. */
function missingAnswers(s: Step, p: number, q: Query): string[] {
  const missing = new Set<string>();
  for (const key of s.ctx.reachable) if (!s.ctx.fenced[key] && !q.heard[key]) missing.add(key);
  const dangling = danglingReceiver(s, p, q);
  // its receiver (has it come?) and its sender (has it taken it back?)
  if (dangling !== null)
    for (const key of [dangling.to, dangling.by])
      if (key !== s.policy.selfKey && s.ctx.reachable.includes(key)) missing.add(key);
  return [...missing];
}

/**
 * The highest reported hand-off (`to`, sent `by`), when neither end is fenced and its receiver
 * does not report having seen it: the token is on its way there, or was lost on the way (a reset
 * connection) and its sender takes it back once its probe finds it missing.
 */
function danglingReceiver(s: Step, p: number, q: Query): { to: string; by: string } | null {
  const self = s.policy.selfKey;
  const mine = s.part(p);
  let top: { to: string; stamp: Stamp } | null = mine.handed;
  let by = self;
  for (const [key, h] of Object.entries(q.heard))
    if (h.handed !== null && (top === null || compareStamps(h.handed.stamp, top.stamp) > 0)) {
      top = h.handed;
      by = key;
    }
  if (top === null || s.ctx.fenced[top.to]) return null;
  // its sender fenced: a copy still on the way is void wherever this round was renounced, and
  // nobody will take it back (its cargo died with the sender, as a crash's does)
  if (s.ctx.fenced[by]) return null;
  const seen = top.to === self ? mine.seen : (q.heard[top.to]?.seen ?? null);
  return seen !== null && compareStamps(seen, top.stamp) >= 0 ? null : { to: top.to, by };
}

/** Whether the query may create: everyone answered or is fenced, and the chain is closed. */
function closed(s: Step, p: number, q: Query): boolean {
  if (q.blocked) return false;
  for (const key of [...s.ctx.reachable, ...s.ctx.absent])
    if (key !== s.policy.selfKey && !s.ctx.fenced[key] && !q.heard[key]) return false;
  return danglingReceiver(s, p, q) === null;
}

/** Applies every rule that may fire now; each step ends here. */
function settle(s: Step): void {
  const table = s.ctx.table;
  if (table === null) return;
  const self = s.policy.selfKey;
  const blockers = new Set<string>();
  // recoveries
  for (const p of s.partitions()) {
    const part = s.part(p);
    const q = part.query;
    if (q === null || part.token !== null || table.owners[p] !== self) continue;
    for (const key of s.ctx.absent) if (!s.ctx.fenced[key] && !q.heard[key]) blockers.add(key);
    const dangling = danglingReceiver(s, p, q);
    if (dangling !== null)
      for (const key of [dangling.to, dangling.by])
        if (key !== self && !s.ctx.reachable.includes(key)) blockers.add(key);
    if (!closed(s, p, q)) continue;
    let cargo: { stamp: Stamp; cargo: HandOffCargo } | null = part.dormant;
    for (const h of Object.values(q.heard))
      if (h.dormant !== null && (cargo === null || compareStamps(h.dormant.stamp, cargo.stamp) > 0))
        cargo = h.dormant;
    const stamp: Stamp = { version: q.version, round: q.round, seq: 0 };
    s.setPart(p, {
      query: null,
      dormant: null,
      seen: maxStamp(part.seen, stamp),
      renounced: maxEpoch(part.renounced, { version: q.version, round: q.round }),
      voidBelow: maxEpoch(part.voidBelow, { version: q.version, round: q.round }),
      token: {
        stamp,
        cargo: cargo?.cargo ?? NO_CARGO,
        phase: 'held',
        leaving: false,
        drainVersion: table.version,
      },
    });
    s.log(
      'info',
      'sharding.token-created',
      { partition: p, version: q.version, round: q.round, withCargo: cargo !== null },
      'partition token created behind renounces and fences',
    );
    s.count('token-created');
  }
  // unconfirmed hand-offs to a fenced member: the token died there (to an absent one: ask the fence)
  for (const p of s.partitions()) {
    const a = s.part(p).awaiting;
    if (a !== null && !s.ctx.fenced[a.to] && s.ctx.absent.includes(a.to)) blockers.add(a.to);
    if (a === null || !s.ctx.fenced[a.to]) continue;
    s.setPart(p, { awaiting: null });
    s.effects.push({ kind: 'forget-hand-off', partition: p });
    s.log(
      'info',
      'sharding.hand-off-abandoned',
      { partition: p, to: a.to, stamp: a.stamp },
      'hand-off to a fenced member',
    );
    s.count('hand-off-abandoned');
  }
  // held messages of partitions we no longer own
  for (const p of s.partitions()) {
    const part = s.part(p);
    if (part.rerouteAt === null || part.token !== null || !markersIn(s, part.rerouteAt, blockers)) continue;
    s.effects.push({ kind: 'reroute', partition: p });
    s.setPart(p, { rerouteAt: null });
  }
  for (const key of blockers) {
    if (s.ctx.fenceAsked[key]) continue;
    s.set({ fenceAsked: { ...s.ctx.fenceAsked, [key]: true } });
    s.effects.push({ kind: 'fence', key });
  }
  if (!s.ctx.lease) return;
  // activations
  const activated: number[] = [];
  for (const p of s.partitions()) {
    const t = s.part(p).token;
    if (t === null || t.phase !== 'held' || t.leaving || table.owners[p] !== self) continue;
    s.effects.push({
      kind: 'activate',
      partition: p,
      version: table.version,
      cargo: t.cargo,
      takeRegionCargo: false,
    });
    s.setPart(p, { token: { ...t, cargo: NO_CARGO, phase: 'active' } });
    activated.push(p);
  }
  // drains: start queued ones within the cap, hand off drained ones whose markers are in
  const handedOff: number[] = [];
  let running = s.partitions().filter((p) => {
    const ph = s.part(p).token?.phase;
    return ph === 'draining' || ph === 'drained';
  }).length;
  for (const p of s.partitions()) {
    const t = s.part(p).token;
    if (t === null) continue;
    if (t.phase !== 'drained') continue;
    const to = table.owners[p] || undefined;
    if (to === undefined) continue; // unassigned: keep it until a table names an owner
    // back to us: no marker needed, we never stopped being where senders send
    if (to === self || markersIn(s, t.drainVersion, blockers)) {
      if (to === self) {
        s.effects.push({
          kind: 'activate',
          partition: p,
          version: table.version,
          cargo: t.cargo,
          takeRegionCargo: true,
        });
        s.setPart(p, { token: { ...t, cargo: NO_CARGO, phase: 'active', leaving: false } });
        activated.push(p);
      } else {
        const stamp = { ...t.stamp, seq: t.stamp.seq + 1 };
        s.effects.push({ kind: 'hand-off', to, partition: p, stamp, version: table.version, cargo: t.cargo });
        // (an older unconfirmed hand-off of p is replaced: the machine keeps one per partition)
        s.setPart(p, {
          token: null,
          handed: { to, stamp },
          awaiting: { to, stamp, attempt: 0, probedAt: s.now },
        });
        s.log(
          'debug',
          'sharding.handed-off',
          { partition: p, to, version: table.version, stamp },
          'partition handed off',
        );
        s.count('handed-off');
        handedOff.push(p);
      }
      running--;
    }
  }
  for (const p of s.partitions()) {
    const t = s.part(p).token;
    if (t === null || !t.leaving || t.phase === 'draining' || t.phase === 'drained') continue;
    if (running >= s.policy.maxConcurrentHandOffs) break;
    s.effects.push({ kind: 'drain', partition: p });
    s.setPart(p, { token: { ...t, phase: 'draining' } });
    running++;
  }
  // one line per step at info (a move is up to 271 partitions); each partition's at debug
  if (handedOff.length > 0)
    s.log(
      'info',
      'sharding.partitions-handed-off',
      { partitions: handedOff, version: table.version },
      `${handedOff.length} partitions handed off`,
    );
  for (const key of blockers) {
    if (s.ctx.fenceAsked[key]) continue;
    s.set({ fenceAsked: { ...s.ctx.fenceAsked, [key]: true } });
    s.effects.push({ kind: 'fence', key });
  }
  if (activated.length === 0) return;
  for (const p of activated) {
    s.log(
      'debug',
      'sharding.partition-activated',
      { partition: p, version: table.version },
      'partition active here',
    );
    s.count('activated');
  }
  s.log(
    'info',
    'sharding.partitions-activated',
    { partitions: activated, version: table.version },
    `${activated.length} partitions active here`,
  );
  // we are a sender too: our own buffered messages go to us now; everyone else is told
  activeReceived(s, { type: 'sharding.active', from: self, version: table.version, partitions: activated });
  const notice = {
    type: 'sharding.active',
    from: self,
    version: table.version,
    partitions: activated,
  } as const;
  for (const to of s.ctx.reachable) s.message(to, notice);
}

/** Every member of our view sent a marker at `version` or newer, or is fenced (absent ones are asked to be). */
function markersIn(s: Step, version: number, blockers: Set<string>): boolean {
  let ok = true;
  for (const key of s.ctx.reachable)
    if (!s.ctx.fenced[key] && (s.ctx.markers[key] ?? -1) < version) ok = false;
  for (const key of s.ctx.absent) {
    if (s.ctx.fenced[key] || (s.ctx.markers[key] ?? -1) >= version) continue;
    blockers.add(key);
    ok = false;
  }
  return ok;
}

/** Whether p is active here (the region delivers its messages only then). */
export function isActive(ctx: KeeperContext, p: number): boolean {
  return ctx.parts[p]?.token?.phase === 'active';
}
