import { type Membership, oldestOf, SINGLETON_HOLDING } from '@doyen/cluster';
import { type DecisionStep, type LogEffect, nodeKey } from '@doyen/core';
import {
  type FenceAnswer,
  type HostLeaseMessage,
  type LeaseAnswers,
  type LeaseBatch,
  type LeaseReply,
  type LeaseRequest,
  MAX_BATCH_FENCES,
  MAX_BATCH_SCOPES,
  ownerOfScope,
  ownerScopeOf,
  type ScopeRound,
} from './host-lease-messages.js';

/**
 * The host lease as pure functions of (context, event, now). Every member is a voter; the member
 * that should host a scope's singletons (the oldest up member with the role that nobody reports
 * unreachable) asks all members for a grant every `renewEveryMs`, and holds the lease until
 * `leaseMs` after the send time of the latest round a majority granted. A voter grants one host
 * per scope at a time, and a new one only `leaseMs · (1 + maxClockDrift)` (its clock) after its
 * last grant to the old one, or once the old one released. Majorities intersect, so at any
 * instant at most one member holds a scope's lease. A new host that could only get grants that
 * expired (not released) waits `pauseBoundMs` (counted on the fastest clock) before it runs
 * anything, so that a former host paused past its lease has woken and fenced itself first.
 *
 * The timing assumptions: no clock runs more than `maxClockDrift` faster or slower than another
 * over a lease, and no process stalls (GC, SIGSTOP, a busy event loop) longer than
 * `pauseBoundMs`.
 *
 * The base a majority is counted over is this node's membership: members joining, up, leaving or
 * exiting, plus members downed less than `downedCountsForMs` ago (the down-removal margin), so
 * that a side that downs the other cannot shrink its base below a majority the other side may
 * still count. The third assumption: a downed member stops voting and asking within that margin
 * (its own side's resolver downs it at the same stable-after, the margin's default, and its
 * first heartbeat to a member that downed it brings a downed-notice). Members downed at
 * different times that lived on past it could together make a majority of the oldest one's
 * stale view (test/singleton/host-lease-downed-margin.test.ts).
 *
 * OWNER SCOPES (the one fencing rule for singletons and partitions, see owner-leases.ts): the
 * scope `owner:<key>` is granted by every voter to member `key` alone, while that member is up
 * (or leaving, exiting) in the voter's view and the voter has not fenced it; the owner bids for
 * it and renews it like any host. A bid refused only because the voter does not see its owner up
 * yet is kept (one per owner, for a lease) and granted with the voter's first view that shows the
 * owner up: the same vote as a request arriving then, so as safe as a delayed message. A member may ask the voters to FENCE another member's owner
 * scope while that member is unreachable in its view, downed or removed: a voter answers `fenced`
 * once it sees the owner gone too and its promise to it ran out (`leaseMs · (1 + maxClockDrift)`
 * after its last grant, or after its first view if it never granted: a fresh voter may have a
 * former incarnation's promises), and from then on never grants that owner its scope again (a
 * tombstone, dropped when the owner leaves the membership). The asker counts the fence complete
 * once a majority of its base answered `fenced` and the pause bound passed since (the unclean
 * acquisition's wait): by then the owner's lease has ended at every node and an owner paused
 * past it has woken and fenced itself. The owner, refused as fenced, knows it lost its scope.
 *
 * BATCHING: every scope a node bids for or holds, and every fence it asks, goes to a voter in one
 * message per round (`batchEffects`); a round due for one scope takes along the others due
 * within half a renewal period, so their rounds stay in step.
 */

export interface HostLeasePolicy {
  readonly selfKey: string;
  readonly leaseMs: number;
  readonly pauseBoundMs: number;
  readonly maxClockDrift: number;
  /** How long a downed member still counts in the base (the down-removal margin). */
  readonly downedCountsForMs: number;
  /** The renewal period while holding, and the slowest retry while acquiring. */
  readonly renewEveryMs: number;
  /** The fastest retry while acquiring. */
  readonly minRetryMs: number;
}

/** A voter's promise for one scope. `at` is this node's clock. */
export interface Grant {
  readonly holder: string;
  readonly at: number;
  readonly released: boolean;
  /** The latest bid refused while bound: granted at once when the holder releases. */
  readonly waiting?: { readonly from: string; readonly round: number };
  /**
   * This voter moved the scope off a host whose grant expired (not released) until then plus the
   * pause bound: that host may be paused with its old mandate, so until this time no grant is
   * clean, not even after a release by the host that came next (it may have released before it
   * ever waited the pause bound out).
   */
  readonly taintedUntil?: number;
}

/** The taint a grant carries forward at `now` (see Grant.taintedUntil). */
const taintOf = (grant: Grant | undefined, now: number): { taintedUntil?: number } =>
  grant?.taintedUntil !== undefined && now < grant.taintedUntil ? { taintedUntil: grant.taintedUntil } : {};

/** What this node knows of its own bid for, or hold of, one scope. */
export interface Hold {
  readonly round: number;
  /** Send times of the rounds still young enough to count, by round. */
  readonly sent: Readonly<Record<number, number>>;
  /** Per voter: the send time of the latest round it granted. */
  readonly acks: Readonly<Record<string, number>>;
  /** A grant since the last acquisition came from a voter bound to another host whose grant expired. */
  readonly unclean: boolean;
  /** Until when the lease holds (our clock); null while not held. */
  readonly heldUntil: number | null;
  /** From when instances may run: the acquisition, plus the pause bound after an unclean one. */
  readonly readyAt: number | null;
  /** Refusals of the latest round: the soonest a refusing voter's promise ends. */
  readonly soonestFreeAt: number | null;
  /** While not held: the other host a refusing voter was last bound to. */
  readonly blockedBy: string | null;
}

export interface HostLeaseContext {
  readonly membership: Membership | undefined;
  /** The scopes singletons use on this node ('' for singletons without a role). */
  readonly scopes: readonly string[];
  /** Instances running here, per scope: a host keeps its lease while it runs one. */
  readonly hosting: Readonly<Record<string, number>>;
  readonly grants: Readonly<Record<string, Grant>>;
  readonly holds: Readonly<Record<string, Hold>>;
  /**
   * The first membership this voter saw, and when: until a lease after it, the voter counts as
   * bound to the host that membership names (it may have been granted by this address's former
   * incarnation, or be counted by the host that admitted it).
   */
  readonly firstView: { readonly membership: Membership; readonly at: number } | undefined;
  /** Downed members (key) and when this node first saw them downed. */
  readonly downedAt: Readonly<Record<string, number>>;
  /** What was last reported to the placement. */
  readonly reported: Placement;
  /** This node hosts entities: it bids for and renews its own owner scope. */
  readonly ownerWanted: boolean;
  /** A voter refused our owner scope as fenced: this incarnation never holds it again. */
  readonly ownerFenced: boolean;
  /** Fences this node asked for, by the fenced member's key (completed ones kept: monotonic). */
  readonly fences: Readonly<Record<string, Fence>>;
  /** The voter's tombstones: owners it fenced and never grants their scope again. */
  readonly tombstones: Readonly<Record<string, Tombstone>>;
  /**
   * The voter's owner bids refused only because the owner is not up here yet (a joiner whose
   * move up this voter has not seen), by owner key: granted as soon as a view shows it up.
   */
  readonly ownerWaiting: Readonly<Record<string, OwnerWaiting>>;
  /** What was last reported of our own owner lease. */
  readonly reportedOwn: OwnLease;
}

/** This node's own owner lease as its clock reads it: held while readyAt ≤ now < heldUntil. */
export interface OwnLease {
  readonly heldUntil: number | null;
  readonly readyAt: number | null;
}

/** This node's fence of one member's owner scope. */
export interface Fence {
  /** The voters that answered `fenced` (a voter's `fenced` is for good: it keeps a tombstone). */
  readonly answers: Readonly<Record<string, true>>;
  /** When it was last asked (our clock); null: not yet. */
  readonly askedAt: number | null;
  /** The soonest a voter that did not fence yet said its promise ends. */
  readonly soonestAt: number | null;
  /** When a majority of the base had answered `fenced`; null: not yet. */
  readonly majorityAt: number | null;
  /** From when the fence is complete: the majority plus the pause bound (on the fastest clock). */
  readonly readyAt: number | null;
  /** The fence completed (logged and counted once). */
  readonly done: boolean;
}

/** An owner's bid a voter refused only because it did not see the owner up yet. */
export interface OwnerWaiting {
  readonly round: number;
  /** When it was refused (this voter's clock): a round older than a lease counts for nothing. */
  readonly at: number;
}

export interface Tombstone {
  readonly at: number;
  /** The owner was in this voter's membership when fenced or since (else: the voter was behind). */
  readonly known: boolean;
}

/**
 * What the placement learns: the scopes this node may run now, whom this voter is bound to, and,
 * for a scope this node bids for in vain, the host that holds it (to be asked to hand over).
 */
export interface Placement {
  readonly mandates: Readonly<Record<string, boolean>>;
  readonly holders: Readonly<Record<string, string>>;
  readonly blockers: Readonly<Record<string, string>>;
  /** Members whose owner scope this node's fences completed (in the order they completed). */
  readonly fenced?: readonly string[];
  /** A voter refused this node its own owner scope as fenced. */
  readonly ownerFenced?: boolean;
}

export const initialHostLeaseContext: HostLeaseContext = {
  membership: undefined,
  scopes: [],
  hosting: {},
  grants: {},
  holds: {},
  firstView: undefined,
  downedAt: {},
  reported: { mandates: {}, holders: {}, blockers: {} },
  ownerWanted: false,
  ownerFenced: false,
  fences: {},
  tombstones: {},
  ownerWaiting: {},
  reportedOwn: { heldUntil: null, readyAt: null },
};

export type HostLeaseEvent =
  | { readonly type: 'host-lease.membership'; readonly membership: Membership }
  | { readonly type: 'host-lease.scope'; readonly scope: string }
  | { readonly type: 'host-lease.hosting'; readonly scope: string; readonly running: number }
  /** This node hosts entities (or no longer does: every one of them stopped). */
  | { readonly type: 'host-lease.want-own'; readonly active: boolean }
  /** Fence member `key`'s owner scope (allowed while it is unreachable here, downed or removed). */
  | { readonly type: 'host-lease.fence'; readonly key: string }
  /** The one timer: a round is due, a lease ends or a hold becomes ready. */
  | { readonly type: 'host-lease.wake' }
  | HostLeaseMessage;

export type HostLeaseEffect =
  | LogEffect
  | {
      readonly kind: 'request';
      readonly to: readonly string[];
      readonly scope: string;
      readonly round: number;
    }
  | { readonly kind: 'reply'; readonly to: string; readonly reply: Omit<LeaseReply, 'type' | 'from'> }
  | { readonly kind: 'release'; readonly to: readonly string[]; readonly scope: string }
  /** Ask these voters to fence the owner scopes of `keys`. */
  | { readonly kind: 'fence-request'; readonly to: readonly string[]; readonly keys: readonly string[] }
  | { readonly kind: 'fence-answer'; readonly to: string; readonly answer: FenceAnswer }
  /** Our own owner lease's bounds changed (each renewal): the owner leases check `holdsOwn()` by the clock. */
  | ({ readonly kind: 'own-lease' } & OwnLease)
  /** What the placement knows changed: tell it. */
  | ({ readonly kind: 'placement' } & Placement)
  /** Counted in `doyen_singleton_lease_changes_total{scope,change}`. */
  | {
      readonly kind: 'count';
      readonly scope: string;
      /**
       * `scope-refused`: a request for a new scope beyond MAX_VOTER_SCOPES (counted with scope '').
       * Owner scopes are counted with scope `owner` (one label, whatever the member): `fenced`, a
       * fence this node asked completed; `tombstone`, this voter fenced an owner; `owner-fenced`,
       * this node learned it was fenced; `fence-refused`, a fence asked while the member is
       * reachable here, or beyond MAX_FENCES.
       */
      readonly change:
        | 'acquired'
        | 'lost'
        | 'released'
        | 'scope-refused'
        | 'fenced'
        | 'tombstone'
        | 'owner-fenced'
        | 'fence-refused';
    };

export interface HostLeaseStep extends DecisionStep<HostLeaseContext, HostLeaseEffect> {
  /** When the machine's one timer must fire next (ms from now); null: nothing pending. */
  readonly wakeInMs: number | null;
}

export const roleOfScope = (scope: string): string | undefined => (scope === '' ? undefined : scope);
export const scopeOfRole = (role: string | undefined): string => role ?? '';

// ---- what the context says -------------------------------------------------------------------

/** The member that should host `scope`: the oldest up member with the role nobody reports unreachable. */
export function intendedHost(m: Membership, scope: string): string | undefined {
  const reachable = m.members.filter((x) => !m.unreachable.includes(nodeKey(x)));
  const host = oldestOf(reachable, { role: roleOfScope(scope) });
  return host && nodeKey(host);
}

const BASE_STATUSES: readonly string[] = ['joining', ...SINGLETON_HOLDING];

/** The members a majority is counted over (see the file's comment). */
export function baseOf(policy: HostLeasePolicy, ctx: HostLeaseContext, now: number): string[] {
  const m = ctx.membership;
  if (!m) return [];
  // joining members count: a side that missed their move up still counts them over there
  const base = m.members.filter((x) => BASE_STATUSES.includes(x.status)).map(nodeKey);
  for (const [key, at] of Object.entries(ctx.downedAt)) {
    if (now - at < policy.downedCountsForMs && !base.includes(key)) base.push(key);
  }
  return base;
}

/** Every live member (joining ones too): each is asked, so none is left bound to nobody. */
function votersOf(policy: HostLeasePolicy, m: Membership): string[] {
  return m.members.map(nodeKey).filter((k) => k !== policy.selfKey);
}

/** The lease's end from the acks: `leaseMs` after the send time a majority of the base granted. */
export function heldUntil(
  policy: HostLeasePolicy,
  ctx: HostLeaseContext,
  hold: Hold,
  now: number,
): number | null {
  const base = baseOf(policy, ctx, now);
  if (!base.includes(policy.selfKey)) return null;
  const need = Math.floor(base.length / 2) + 1;
  const acked = base
    .map((k) => hold.acks[k])
    .filter((t): t is number => t !== undefined)
    .sort((a, b) => b - a);
  return acked.length >= need ? acked[need - 1]! + policy.leaseMs : null;
}

function wants(policy: HostLeasePolicy, ctx: HostLeaseContext, scope: string): boolean {
  const m = ctx.membership;
  if (!m) return false;
  const self = m.members.find((x) => nodeKey(x) === policy.selfKey);
  if (!self || !SINGLETON_HOLDING.includes(self.status)) return false;
  const owner = ownerOfScope(scope);
  if (owner !== undefined) return owner === policy.selfKey && ctx.ownerWanted && !ctx.ownerFenced;
  return intendedHost(m, scope) === policy.selfKey || (ctx.hosting[scope] ?? 0) > 0;
}

/** Member `key` is gone in this view: unreachable, downed or not a member (removed, or not yet known). */
export function goneIn(m: Membership, key: string): boolean {
  return m.unreachable.includes(key) || !m.members.some((x) => nodeKey(x) === key);
}

/** Whether this node's fence of `key`'s owner scope is complete at `now` (monotonic). */
export function isFencedIn(ctx: HostLeaseContext, key: string, now: number): boolean {
  const fence = ctx.fences[key];
  return fence !== undefined && fence.readyAt !== null && now >= fence.readyAt;
}

/** Whether this node holds its own owner scope at `now` (the holder rule, same margins). */
export function holdsOwnIn(policy: HostLeasePolicy, ctx: HostLeaseContext, now: number): boolean {
  return mandateOf(ctx, ownerScopeOf(policy.selfKey), now);
}

/** Whether this node may run instances of `scope` now. */
export function mandateOf(ctx: HostLeaseContext, scope: string, now: number): boolean {
  const hold = ctx.holds[scope];
  return (
    hold !== undefined &&
    hold.heldUntil !== null &&
    now < hold.heldUntil &&
    hold.readyAt !== null &&
    now >= hold.readyAt
  );
}

// ---- the voter -------------------------------------------------------------------------------

/** A voter that never granted `scope`: bound to the host its first view names, from then. */
function bornBound(ctx: HostLeaseContext, scope: string): Grant | undefined {
  if (!ctx.firstView || ownerOfScope(scope) !== undefined) return undefined;
  const holder = intendedHost(ctx.firstView.membership, scope);
  return holder === undefined ? undefined : { holder, at: ctx.firstView.at, released: false };
}

/** The voter's answer to `from` for `scope`: its grant (kept or moved) and whether it is clean. */
export function vote(
  policy: HostLeasePolicy,
  ctx: HostLeaseContext,
  from: string,
  scope: string,
  round: number,
  now: number,
): {
  grants: HostLeaseContext['grants'];
  granted: boolean;
  clean: boolean;
  freeInMs: number;
  holder: string | null;
  fenced?: boolean;
} {
  const owner = ownerOfScope(scope);
  if (owner !== undefined && !mayGrantOwner(ctx, owner, from)) {
    // asked again at the ordinary pace: what blocks it is membership news, not a promise
    const fenced = ctx.tombstones[owner] !== undefined;
    return {
      grants: ctx.grants,
      granted: false,
      clean: false,
      freeInMs: policy.renewEveryMs,
      holder: null,
      fenced,
    };
  }
  const current = ctx.grants[scope] ?? bornBound(ctx, scope);
  const promiseEnds = current ? current.at + policy.leaseMs * (1 + policy.maxClockDrift) : 0;
  const free = !current || current.holder === from || current.released || now >= promiseEnds;
  const self = ctx.membership?.members.find((x) => nodeKey(x) === policy.selfKey);
  if (!free || !self || !SINGLETON_HOLDING.concat('joining').includes(self.status)) {
    const grants =
      current && !free ? { ...ctx.grants, [scope]: { ...current, waiting: { from, round } } } : ctx.grants;
    return {
      grants,
      granted: false,
      clean: false,
      freeInMs: Math.max(0, promiseEnds - now),
      holder: current && !free ? current.holder : null,
    };
  }
  const fresh = !current || current.holder === from || current.released;
  const taint = fresh
    ? taintOf(current, now)
    : { taintedUntil: now + policy.pauseBoundMs * (1 + policy.maxClockDrift) };
  const clean = fresh && taint.taintedUntil === undefined;
  return {
    grants: { ...ctx.grants, [scope]: { holder: from, at: now, released: false, ...taint } },
    granted: true,
    clean,
    freeInMs: 0,
    holder: null,
  };
}

/** The most owner bids a voter keeps waiting for their owner's move up (one per owner key). */
export const MAX_OWNER_WAITING = 64;

/**
 * Whether this voter refuses `from` its owner scope only because it does not see `from` up yet:
 * not a member here (nor downed), or joining (a restarted node whose move up is still on its way).
 */
function waitsForUp(ctx: HostLeaseContext, from: string, scope: string): boolean {
  if (ownerOfScope(scope) !== from || ctx.tombstones[from] !== undefined) return false;
  if (ctx.membership?.failed.some((x) => nodeKey(x) === from)) return false;
  const member = ctx.membership?.members.find((x) => nodeKey(x) === from);
  return member === undefined || member.status === 'joining';
}

/**
 * Keeps (or drops) the owner's bid this voter just answered: refused only for not being up here
 * yet, it is granted with the view that shows the owner up (`grantWaitingOwners`) instead of at
 * the owner's next round, a renewal period later.
 */
function noteOwnerWaiting(draft: Draft, request: LeaseRequest, granted: boolean, now: number): void {
  const owner = ownerOfScope(request.scope);
  if (owner === undefined || owner !== request.from) return;
  const { ownerWaiting } = draft.context;
  if (granted || !waitsForUp(draft.context, request.from, request.scope)) {
    if (ownerWaiting[owner] === undefined) return;
    const { [owner]: _, ...rest } = ownerWaiting;
    draft.context = { ...draft.context, ownerWaiting: rest };
    return;
  }
  const next: Record<string, OwnerWaiting> = { ...ownerWaiting, [owner]: { round: request.round, at: now } };
  const keys = Object.keys(next);
  // a member asking under ever new keys must not grow this without end: the oldest go first
  if (keys.length > MAX_OWNER_WAITING)
    for (const k of keys.sort((a, b) => next[a]!.at - next[b]!.at).slice(0, keys.length - MAX_OWNER_WAITING))
      delete next[k];
  draft.context = { ...draft.context, ownerWaiting: next };
}

/**
 * A new view: every waiting owner bid whose owner is up here now is answered as if its request
 * arrived now (the same vote, so the same promise from now on; the owner counts it from the
 * round's send time, earlier). A bid older than a lease is dropped: its round counts for nothing.
 */
function grantWaitingOwners(policy: HostLeasePolicy, draft: Draft, now: number): void {
  const { ownerWaiting } = draft.context;
  if (Object.keys(ownerWaiting).length === 0) return;
  for (const [owner, waiting] of Object.entries(ownerWaiting)) {
    const scope = ownerScopeOf(owner);
    if (now - waiting.at < policy.leaseMs && waitsForUp(draft.context, owner, scope)) continue;
    const { [owner]: _, ...rest } = draft.context.ownerWaiting;
    draft.context = { ...draft.context, ownerWaiting: rest };
    if (now - waiting.at >= policy.leaseMs || !mayGrantOwner(draft.context, owner, owner)) continue;
    const v = vote(policy, draft.context, owner, scope, waiting.round, now);
    if (!v.granted) continue;
    draft.context = { ...draft.context, grants: v.grants };
    draft.effects.push(
      debug(
        'host-lease.owner-granted-on-up',
        { scope, round: waiting.round, waitedMs: now - waiting.at },
        `owner scope ${scope} granted once its owner is up here`,
      ),
      {
        kind: 'reply',
        to: owner,
        reply: { scope, round: waiting.round, granted: true, clean: v.clean, freeInMs: 0, holder: null },
      },
    );
  }
}

/** Why this voter refuses `from` an owner scope (the debug line `host-lease.owner-refused`). */
function ownerRefusal(policy: HostLeasePolicy, ctx: HostLeaseContext, from: string, scope: string): string {
  const owner = ownerOfScope(scope)!;
  if (from !== owner) return 'not its owner';
  if (ctx.tombstones[owner] !== undefined) return 'fenced';
  const member = ctx.membership?.members.find((x) => nodeKey(x) === owner);
  if (member === undefined) return 'not a member here';
  if (!SINGLETON_HOLDING.includes(member.status)) return `${member.status} here`;
  const self = ctx.membership?.members.find((x) => nodeKey(x) === policy.selfKey);
  return self ? `bound (voter ${self.status})` : 'voter not a member';
}

/** An owner scope goes to its owner alone, while up (leaving, exiting) here and not fenced here. */
function mayGrantOwner(ctx: HostLeaseContext, owner: string, from: string): boolean {
  if (from !== owner || ctx.tombstones[owner] !== undefined) return false;
  const m = ctx.membership;
  const member = m?.members.find((x) => nodeKey(x) === owner);
  return member !== undefined && SINGLETON_HOLDING.includes(member.status);
}

/**
 * The voter's answer to a fence of `key`'s owner scope: fenced once `key` is gone in its view and
 * its promise to `key` ran out (from its first view if it never granted it). Fencing writes the
 * tombstone: from then on it never grants `key` its scope.
 */
export function fenceVote(
  policy: HostLeasePolicy,
  ctx: HostLeaseContext,
  key: string,
  now: number,
): { tombstones: HostLeaseContext['tombstones']; answer: FenceAnswer; newTombstone: boolean } {
  const { tombstones } = ctx;
  const no = (freeInMs: number) => ({
    tombstones,
    answer: { key, fenced: false, freeInMs },
    newTombstone: false,
  });
  if (tombstones[key] !== undefined)
    return { tombstones, answer: { key, fenced: true, freeInMs: 0 }, newTombstone: false };
  const m = ctx.membership;
  const self = m?.members.find((x) => nodeKey(x) === policy.selfKey);
  if (!m || !self || !SINGLETON_HOLDING.concat('joining').includes(self.status) || key === policy.selfKey)
    return no(policy.renewEveryMs);
  if (!goneIn(m, key)) return no(policy.renewEveryMs);
  const grant = ctx.grants[ownerScopeOf(key)];
  const lastGrant = grant && !grant.released ? grant.at : -Infinity;
  const since = Math.max(lastGrant, ctx.firstView?.at ?? now);
  const promiseEnds = since + policy.leaseMs * (1 + policy.maxClockDrift);
  if (now < promiseEnds) return no(promiseEnds - now);
  const known = m.members.some((x) => nodeKey(x) === key) || m.failed.some((x) => nodeKey(x) === key);
  return {
    tombstones: { ...tombstones, [key]: { at: now, known } },
    answer: { key, fenced: true, freeInMs: 0 },
    newTombstone: true,
  };
}

// ---- steps -----------------------------------------------------------------------------------

type Draft = { context: HostLeaseContext; effects: HostLeaseEffect[] };

const logAt =
  (level: 'info' | 'debug') =>
  (event: string, fields: Record<string, unknown>, msg: string): HostLeaseEffect => ({
    kind: 'log',
    level,
    event,
    fields,
    msg,
  });
const log = logAt('info');
/** Off at info: an owner scope's bid, rounds and answers until it holds (what a slow acquisition waited on). */
const debug = logAt('debug');

/** Records a granted round of `scope` from `voter` (ourselves included). */
function recordGrant(draft: Draft, scope: string, voter: string, round: number, clean: boolean): void {
  const hold = draft.context.holds[scope];
  const sentAt = hold?.sent[round];
  if (!hold || sentAt === undefined) return;
  const acks = { ...hold.acks, [voter]: Math.max(hold.acks[voter] ?? -Infinity, sentAt) };
  const unclean = hold.unclean || (!clean && hold.heldUntil === null);
  draft.context = {
    ...draft.context,
    holds: { ...draft.context.holds, [scope]: { ...hold, acks, unclean } },
  };
}

/** Sends a new round for `scope` and grants it with our own vote. */
function sendRound(policy: HostLeasePolicy, draft: Draft, scope: string, now: number): void {
  const ctx = draft.context;
  const hold = ctx.holds[scope]!;
  const round = hold.round + 1;
  // rounds older than a lease can no longer make one
  const sent: Record<number, number> = { [round]: now };
  for (const [r, t] of Object.entries(hold.sent)) if (now - t < policy.leaseMs) sent[Number(r)] = t;
  draft.context = {
    ...ctx,
    holds: { ...ctx.holds, [scope]: { ...hold, round, sent, soonestFreeAt: null } },
  };
  const own = vote(policy, draft.context, policy.selfKey, scope, round, now);
  draft.context = { ...draft.context, grants: own.grants };
  if (own.granted) recordGrant(draft, scope, policy.selfKey, round, own.clean);
  else noteRefusal(policy, draft, scope, now + own.freeInMs, own.holder);
  const to = votersOf(policy, ctx.membership!);
  if (to.length > 0) draft.effects.push({ kind: 'request', to, scope, round });
  if (hold.heldUntil === null && ownerOfScope(scope) !== undefined)
    draft.effects.push(
      debug(
        'host-lease.round',
        { scope, round, voters: to.length, base: baseOf(policy, draft.context, now).length },
        `round ${round} for ${scope}`,
      ),
    );
}

function noteRefusal(
  policy: HostLeasePolicy,
  draft: Draft,
  scope: string,
  freeAt: number,
  holder: string | null,
): void {
  const hold = draft.context.holds[scope];
  if (!hold) return;
  const soonestFreeAt = hold.soonestFreeAt === null ? freeAt : Math.min(hold.soonestFreeAt, freeAt);
  const blockedBy = holder !== null && holder !== policy.selfKey ? holder : hold.blockedBy;
  draft.context = {
    ...draft.context,
    holds: { ...draft.context.holds, [scope]: { ...hold, soonestFreeAt, blockedBy } },
  };
}

/** When the next round of a hold is due. */
function nextRoundAt(policy: HostLeasePolicy, hold: Hold, now: number): number {
  const last = hold.sent[hold.round] ?? -Infinity;
  if (hold.heldUntil !== null && now < hold.heldUntil) return last + policy.renewEveryMs;
  const retry =
    hold.soonestFreeAt === null
      ? policy.renewEveryMs
      : Math.min(policy.renewEveryMs, Math.max(policy.minRetryMs, hold.soonestFreeAt - last));
  return last + retry;
}

/**
 * Brings every scope up to date at `now`: bids begin or end, rounds go out when due (with the
 * fences this node asks), leases are (re)computed, acquisitions and losses are logged, fences
 * complete, changed mandates reported, and the next wake computed.
 */
function settle(policy: HostLeasePolicy, draft: Draft, now: number): HostLeaseStep {
  const scopes = new Set([...draft.context.scopes, ...Object.keys(draft.context.holds)]);
  if (draft.context.ownerWanted) scopes.add(ownerScopeOf(policy.selfKey));
  const wanted: string[] = [];
  for (const scope of scopes) {
    const hold = draft.context.holds[scope];
    if (!wants(policy, draft.context, scope)) {
      if (hold) release(policy, draft, scope);
      continue;
    }
    if (!hold) {
      draft.context = {
        ...draft.context,
        holds: {
          ...draft.context.holds,
          [scope]: {
            round: 0,
            sent: {},
            acks: {},
            unclean: false,
            heldUntil: null,
            readyAt: null,
            soonestFreeAt: null,
            blockedBy: null,
          },
        },
      };
      if (ownerOfScope(scope) !== undefined)
        draft.effects.push(debug('host-lease.bid', { scope }, `bidding for ${scope}`));
    }
    wanted.push(scope);
  }
  dropVoidFences(draft);
  dispatch(policy, draft, wanted, now);
  for (const scope of wanted) refreshHold(policy, draft, scope, now);
  completeFences(policy, draft, now);
  reportOwn(policy, draft);
  reportPlacement(draft, now);
  return { ...draft, wakeInMs: nextWake(policy, draft.context, now) };
}

/**
 * A round is due for some scope or fence: every scope due within half a renewal period goes
 * along, and every fence not yet answered by a majority, so that one message per voter carries
 * them all (`batchEffects`) and the scopes' rounds stay in step.
 */
function dispatch(policy: HostLeasePolicy, draft: Draft, wanted: readonly string[], now: number): void {
  const { holds, fences } = draft.context;
  const pending = Object.keys(fences).filter((k) => fences[k]!.majorityAt === null);
  const due =
    wanted.some((s) => now >= nextRoundAt(policy, holds[s]!, now)) ||
    pending.some((k) => now >= nextFenceAt(policy, fences[k]!, now));
  if (!due) return;
  const soon = now + policy.renewEveryMs / 2;
  for (const scope of wanted)
    if (nextRoundAt(policy, draft.context.holds[scope]!, now) <= soon) sendRound(policy, draft, scope, now);
  if (pending.length > 0) askFences(policy, draft, pending, now);
}

function nextFenceAt(policy: HostLeasePolicy, fence: Fence, now: number): number {
  if (fence.askedAt === null) return now;
  const retry =
    fence.soonestAt === null
      ? policy.renewEveryMs
      : Math.min(policy.renewEveryMs, Math.max(policy.minRetryMs, fence.soonestAt - fence.askedAt));
  return fence.askedAt + retry;
}

/** Asks every voter (ourselves first) to fence the owner scopes of `keys`. */
function askFences(policy: HostLeasePolicy, draft: Draft, keys: readonly string[], now: number): void {
  for (const key of keys) {
    draft.context = {
      ...draft.context,
      fences: {
        ...draft.context.fences,
        [key]: { ...draft.context.fences[key]!, askedAt: now, soonestAt: null },
      },
    };
    const own = fenceVote(policy, draft.context, key, now);
    noteTombstone(draft, own);
    recordFenceAnswer(draft, policy.selfKey, own.answer, now);
  }
  const to = votersOf(policy, draft.context.membership!);
  if (to.length > 0) draft.effects.push({ kind: 'fence-request', to, keys });
}

function noteTombstone(draft: Draft, vote: ReturnType<typeof fenceVote>): void {
  draft.context = { ...draft.context, tombstones: vote.tombstones };
  if (!vote.newTombstone) return;
  draft.effects.push(
    { kind: 'count', scope: 'owner', change: 'tombstone' },
    log(
      'host-lease.owner-tombstoned',
      { owner: vote.answer.key },
      `owner scope of ${vote.answer.key} fenced by this voter: it is never granted it again`,
    ),
  );
}

function recordFenceAnswer(draft: Draft, voter: string, answer: FenceAnswer, now: number): void {
  const fence = draft.context.fences[answer.key];
  if (!fence || fence.majorityAt !== null) return;
  const next: Fence = answer.fenced
    ? { ...fence, answers: { ...fence.answers, [voter]: true } }
    : {
        ...fence,
        soonestAt: Math.min(fence.soonestAt ?? Number.POSITIVE_INFINITY, now + answer.freeInMs),
      };
  draft.context = { ...draft.context, fences: { ...draft.context.fences, [answer.key]: next } };
}

/** A pending fence whose member is back (reachable and a member here) is dropped: asked only while it is gone. */
function dropVoidFences(draft: Draft): void {
  const m = draft.context.membership;
  if (!m) return;
  let fences = draft.context.fences;
  for (const [key, fence] of Object.entries(fences)) {
    if (fence.majorityAt !== null || goneIn(m, key)) continue;
    const { [key]: _, ...rest } = fences;
    fences = rest;
    draft.effects.push(
      log('host-lease.fence-dropped', { owner: key }, `fence of ${key} dropped: it is reachable again`),
    );
  }
  if (fences !== draft.context.fences) draft.context = { ...draft.context, fences };
}

function reportOwn(policy: HostLeasePolicy, draft: Draft): void {
  const hold = draft.context.holds[ownerScopeOf(policy.selfKey)];
  const own: OwnLease = { heldUntil: hold?.heldUntil ?? null, readyAt: hold?.readyAt ?? null };
  const { reportedOwn } = draft.context;
  if (own.heldUntil === reportedOwn.heldUntil && own.readyAt === reportedOwn.readyAt) return;
  draft.context = { ...draft.context, reportedOwn: own };
  draft.effects.push({ kind: 'own-lease', ...own });
}

/** A majority of the base answered `fenced`: complete after the pause bound (real time). */
function completeFences(policy: HostLeasePolicy, draft: Draft, now: number): void {
  if (Object.keys(draft.context.fences).length === 0) return;
  const base = baseOf(policy, draft.context, now);
  const need = Math.floor(base.length / 2) + 1;
  for (const [key, fence] of Object.entries(draft.context.fences)) {
    let next = fence;
    if (fence.majorityAt === null && base.filter((k) => fence.answers[k]).length >= need) {
      next = { ...fence, majorityAt: now, readyAt: now + policy.pauseBoundMs * (1 + policy.maxClockDrift) };
    }
    if (!next.done && next.readyAt !== null && now >= next.readyAt) {
      next = { ...next, done: true };
      draft.effects.push(
        { kind: 'count', scope: 'owner', change: 'fenced' },
        log('host-lease.fenced', { owner: key }, `owner scope of ${key} fenced: its lease ended everywhere`),
      );
    }
    if (next !== fence)
      draft.context = { ...draft.context, fences: { ...draft.context.fences, [key]: next } };
  }
}

function refreshHold(policy: HostLeasePolicy, draft: Draft, scope: string, now: number): void {
  const hold = draft.context.holds[scope]!;
  // A lease a majority granted stays until it ends when members joined since: a joiner's voter
  // starts bound to the host it first sees (`vote`), so it cannot help a rival to a majority
  // that misses the one that granted the lease.
  const computed = heldUntil(policy, draft.context, hold, now);
  const until = computed === null ? hold.heldUntil : Math.max(computed, hold.heldUntil ?? computed);
  const held = until !== null && now < until;
  const wasHeld = hold.heldUntil !== null && now < hold.heldUntil;
  let next: Hold = hold;
  if (held && !wasHeld && hold.readyAt === null) {
    // the pause bound is real time: measured on a clock that may run fast, it is waited longer
    const waitMs = hold.unclean ? policy.pauseBoundMs * (1 + policy.maxClockDrift) : 0;
    next = { ...hold, heldUntil: until, readyAt: now + waitMs, blockedBy: null };
    draft.effects.push(
      { kind: 'count', scope: countedScope(scope), change: 'acquired' },
      log(
        'host-lease.acquired',
        { scope, clean: !hold.unclean, readyInMs: waitMs },
        hold.unclean
          ? `lease of scope '${scope}' acquired; waiting the pause bound (${waitMs} ms) before running`
          : `lease of scope '${scope}' acquired`,
      ),
    );
  } else if (held) {
    if (hold.heldUntil !== until) next = { ...hold, heldUntil: until };
  } else if (hold.readyAt !== null) {
    next = { ...hold, heldUntil: null, readyAt: null, unclean: false, acks: {} };
    draft.effects.push(
      { kind: 'count', scope: countedScope(scope), change: 'lost' },
      log('host-lease.lost', { scope }, `lease of scope '${scope}' lost: no majority renewed it in time`),
    );
  } else if (hold.heldUntil !== until) {
    next = { ...hold, heldUntil: null };
  }
  if (next !== hold) draft.context = { ...draft.context, holds: { ...draft.context.holds, [scope]: next } };
}

/** The metric's scope label: owner scopes share one (a label per member incarnation would grow without end). */
const countedScope = (scope: string): string => (ownerOfScope(scope) === undefined ? scope : 'owner');

/**
 * No longer wanted: give the lease back (our instances of it are stopped) so the next host need
 * not wait. Our own owner scope refused as fenced is not given back: the voters refuse it anyway.
 */
function release(policy: HostLeasePolicy, draft: Draft, scope: string): void {
  const { [scope]: hold, ...holds } = draft.context.holds;
  if (ownerOfScope(scope) !== undefined && draft.context.ownerFenced) {
    draft.context = { ...draft.context, holds };
    if (hold?.readyAt !== null && hold?.readyAt !== undefined)
      draft.effects.push({ kind: 'count', scope: countedScope(scope), change: 'lost' });
    return;
  }
  const own = draft.context.grants[scope];
  const grants =
    own && own.holder === policy.selfKey
      ? { ...draft.context.grants, [scope]: { ...own, released: true } }
      : draft.context.grants;
  draft.context = { ...draft.context, holds, grants };
  const to = draft.context.membership ? votersOf(policy, draft.context.membership) : [];
  if (to.length > 0) draft.effects.push({ kind: 'release', to, scope });
  if (hold?.readyAt !== null && hold?.readyAt !== undefined) {
    draft.effects.push(
      { kind: 'count', scope: countedScope(scope), change: 'released' },
      log('host-lease.released', { scope }, `lease of scope '${scope}' released`),
    );
  }
}

function reportPlacement(draft: Draft, now: number): void {
  const { reported, ownerFenced } = draft.context;
  const scopes = new Set([
    ...draft.context.scopes,
    ...Object.keys(draft.context.holds),
    ...Object.keys(reported.mandates),
  ]);
  const mandates: Record<string, boolean> = {};
  let changed = false;
  for (const scope of scopes) {
    mandates[scope] = mandateOf(draft.context, scope, now);
    if (mandates[scope] !== (reported.mandates[scope] ?? false)) changed = true;
  }
  const holders: Record<string, string> = {};
  for (const [scope, grant] of Object.entries(draft.context.grants)) {
    // owner scopes are granted to their owners alone: nothing for the placement to route by
    if (grant.released || ownerOfScope(scope) !== undefined) continue;
    holders[scope] = grant.holder;
    if (reported.holders[scope] !== grant.holder) changed = true;
  }
  if (Object.keys(reported.holders).some((scope) => holders[scope] === undefined)) changed = true;
  const blockers: Record<string, string> = {};
  for (const [scope, hold] of Object.entries(draft.context.holds)) {
    if (hold.blockedBy === null || mandates[scope]) continue;
    blockers[scope] = hold.blockedBy;
    if (reported.blockers[scope] !== hold.blockedBy) changed = true;
  }
  if (Object.keys(reported.blockers).some((scope) => blockers[scope] === undefined)) changed = true;
  const fenced = Object.keys(draft.context.fences).filter((k) => draft.context.fences[k]!.done);
  if (fenced.length !== (reported.fenced?.length ?? 0)) changed = true;
  if (ownerFenced !== (reported.ownerFenced ?? false)) changed = true;
  if (!changed) return;
  // singleton-only nodes report what they always did
  const owner = fenced.length > 0 || ownerFenced ? { fenced, ownerFenced } : {};
  draft.context = { ...draft.context, reported: { mandates, holders, blockers, ...owner } };
  draft.effects.push({ kind: 'placement', mandates, holders, blockers, ...owner });
}

function nextWake(policy: HostLeasePolicy, ctx: HostLeaseContext, now: number): number | null {
  let soonest = Infinity;
  for (const hold of Object.values(ctx.holds)) {
    soonest = Math.min(soonest, nextRoundAt(policy, hold, now));
    if (hold.heldUntil !== null && hold.heldUntil > now) soonest = Math.min(soonest, hold.heldUntil);
    if (hold.readyAt !== null && hold.readyAt > now) soonest = Math.min(soonest, hold.readyAt);
  }
  for (const fence of Object.values(ctx.fences)) {
    if (fence.majorityAt === null) soonest = Math.min(soonest, nextFenceAt(policy, fence, now));
    else if (!fence.done && fence.readyAt !== null) soonest = Math.min(soonest, fence.readyAt);
  }
  return soonest === Infinity ? null : Math.max(0, soonest - now);
}

/**
 * Acks of members and downed members only: a long-lived host would otherwise keep one for every
 * incarnation that ever granted it (only those in the base count anyway).
 */
function acksOfMembersOnly(ctx: HostLeaseContext): HostLeaseContext['holds'] {
  const known = new Set([...(ctx.membership?.members ?? []).map(nodeKey), ...Object.keys(ctx.downedAt)]);
  let holds = ctx.holds;
  for (const [scope, hold] of Object.entries(ctx.holds)) {
    const stale = Object.keys(hold.acks).filter((k) => !known.has(k));
    if (stale.length === 0) continue;
    const acks = Object.fromEntries(Object.entries(hold.acks).filter(([k]) => known.has(k)));
    holds = { ...holds, [scope]: { ...hold, acks } };
  }
  return holds;
}

/** The machine's one decision: every event goes through here. */
export function decide(
  policy: HostLeasePolicy,
  ctx: HostLeaseContext,
  event: HostLeaseEvent,
  now: number,
): HostLeaseStep {
  const draft: Draft = { context: ctx, effects: [] };
  switch (event.type) {
    case 'host-lease.membership': {
      const downedAt: Record<string, number> = {};
      for (const f of event.membership.failed) {
        const key = nodeKey(f);
        downedAt[key] = ctx.downedAt[key] ?? now;
      }
      const firstView = ctx.firstView ?? { membership: event.membership, at: now };
      draft.context = { ...ctx, membership: event.membership, downedAt, firstView };
      draft.context = { ...draft.context, holds: acksOfMembersOnly(draft.context) };
      pruneOwnerState(policy, draft, now);
      grantWaitingOwners(policy, draft, now);
      break;
    }
    case 'host-lease.want-own':
      if (ctx.ownerWanted !== event.active) draft.context = { ...ctx, ownerWanted: event.active };
      break;
    case 'host-lease.fence':
      startFence(policy, draft, event.key);
      break;
    case 'host-lease.batch':
      for (const r of event.requests)
        answer(
          policy,
          draft,
          { type: 'host-lease.request', from: event.from, scope: r.scope, round: r.round },
          now,
        );
      for (const key of event.fences) {
        const v = fenceVote(policy, draft.context, key, now);
        noteTombstone(draft, v);
        draft.effects.push({ kind: 'fence-answer', to: event.from, answer: v.answer });
      }
      // a member asking fences of ever new keys must not grow the tombstones without end
      if (
        Object.keys(draft.context.tombstones).length >
        MAX_UNKNOWN_TOMBSTONES + (ctx.membership?.members.length ?? 0)
      )
        pruneOwnerState(policy, draft, now);
      break;
    case 'host-lease.answers':
      for (const r of event.replies)
        takeReply(policy, draft, { type: 'host-lease.reply', from: event.from, ...r }, now);
      for (const a of event.fences) recordFenceAnswer(draft, event.from, a, now);
      break;
    case 'host-lease.scope':
      if (!ctx.scopes.includes(event.scope)) draft.context = { ...ctx, scopes: [...ctx.scopes, event.scope] };
      break;
    case 'host-lease.hosting':
      draft.context = { ...ctx, hosting: { ...ctx.hosting, [event.scope]: event.running } };
      break;
    case 'host-lease.wake':
      break;
    case 'host-lease.request':
      answer(policy, draft, event, now);
      break;
    case 'host-lease.reply':
      takeReply(policy, draft, event, now);
      break;
    case 'host-lease.release':
      takeRelease(policy, draft, event.from, event.scope, now);
      break;
  }
  return settle(policy, draft, now);
}

function takeReply(policy: HostLeasePolicy, draft: Draft, reply: LeaseReply, now: number): void {
  const bidding = draft.context.holds[reply.scope];
  if (bidding !== undefined && bidding.heldUntil === null && ownerOfScope(reply.scope) !== undefined)
    draft.effects.push(
      debug(
        'host-lease.answer',
        {
          scope: reply.scope,
          voter: reply.from,
          round: reply.round,
          current: bidding.round,
          granted: reply.granted,
          freeInMs: reply.freeInMs,
          sentMsAgo: bidding.sent[reply.round] === undefined ? null : now - bidding.sent[reply.round]!,
        },
        `${reply.granted ? 'grant' : 'refusal'} of ${reply.scope} from ${reply.from}`,
      ),
    );
  if (reply.granted) recordGrant(draft, reply.scope, reply.from, reply.round, reply.clean);
  else if (draft.context.holds[reply.scope]?.round === reply.round)
    noteRefusal(policy, draft, reply.scope, now + reply.freeInMs, reply.holder);
  if (reply.fenced === true && reply.scope === ownerScopeOf(policy.selfKey) && !draft.context.ownerFenced) {
    // fenced by one voter means fenced for good: that voter never grants it again
    draft.context = { ...draft.context, ownerFenced: true };
    draft.effects.push(
      { kind: 'count', scope: 'owner', change: 'owner-fenced' },
      {
        kind: 'log',
        level: 'warn',
        event: 'host-lease.owner-fenced',
        fields: { voter: reply.from },
        msg: `this node's owner scope was fenced (voter ${reply.from}): it hosts no entity again in this incarnation`,
      },
    );
  }
}

/** The most fences a node keeps (completed ones of members that left are dropped first). */
export const MAX_FENCES = 1024;
/** The most tombstones a voter keeps of owners it never saw as members (it was behind). */
export const MAX_UNKNOWN_TOMBSTONES = 1024;

/** Starts fencing `key`'s owner scope, if it is gone in this node's view (and not already fenced). */
function startFence(policy: HostLeasePolicy, draft: Draft, key: string): void {
  const ctx = draft.context;
  if (ctx.fences[key] !== undefined) return;
  const m = ctx.membership;
  const refuse = (why: string) =>
    draft.effects.push(
      { kind: 'count', scope: 'owner', change: 'fence-refused' },
      {
        kind: 'log',
        level: 'warn',
        event: 'host-lease.fence-refused',
        fields: { owner: key, reason: why },
        msg: `fence of ${key} refused: ${why}`,
      },
    );
  if (!m || key === policy.selfKey || !goneIn(m, key)) return void refuse('it is reachable here');
  let fences = ctx.fences;
  if (Object.keys(fences).length >= MAX_FENCES) {
    const known = new Set([...m.members, ...m.failed].map(nodeKey));
    const evict = Object.keys(fences).find((k) => fences[k]!.done && !known.has(k));
    if (evict === undefined) return void refuse(`${MAX_FENCES} fences kept already`);
    const { [evict]: _, ...rest } = fences;
    fences = rest;
  }
  const fence: Fence = {
    answers: {},
    askedAt: null,
    soonestAt: null,
    majorityAt: null,
    readyAt: null,
    done: false,
  };
  draft.context = { ...ctx, fences: { ...fences, [key]: fence } };
}

/**
 * Keeps the voter's owner state bounded by the membership: a tombstone goes once its owner left
 * the membership (it is never granted again anyway; a key is one incarnation), a grant of an
 * owner scope once its owner left and the promise ran out. A tombstone of an owner this voter
 * never saw (it was behind) stays until the owner appears and leaves, the oldest dropped beyond
 * MAX_UNKNOWN_TOMBSTONES.
 */
function pruneOwnerState(policy: HostLeasePolicy, draft: Draft, now: number): void {
  const m = draft.context.membership!;
  const members = new Set(m.members.map(nodeKey));
  const known = new Set([...members, ...m.failed.map(nodeKey)]);
  const tombstones: Record<string, Tombstone> = {};
  const unknown: string[] = [];
  for (const [key, t] of Object.entries(draft.context.tombstones)) {
    const seen = t.known || known.has(key);
    if (seen && !members.has(key)) continue;
    tombstones[key] = seen === t.known ? t : { ...t, known: seen };
    if (!seen) unknown.push(key);
  }
  unknown.sort((a, b) => tombstones[a]!.at - tombstones[b]!.at);
  for (const key of unknown.slice(0, Math.max(0, unknown.length - MAX_UNKNOWN_TOMBSTONES)))
    delete tombstones[key];
  const promise = policy.leaseMs * (1 + policy.maxClockDrift);
  let grants = draft.context.grants;
  for (const [scope, grant] of Object.entries(grants)) {
    const owner = ownerOfScope(scope);
    if (owner === undefined || members.has(owner) || (!grant.released && now < grant.at + promise)) continue;
    const { [scope]: _, ...rest } = grants;
    grants = rest;
  }
  draft.context = { ...draft.context, tombstones, grants };
}

/** The holder gave the lease back: free at once, and the bid it kept waiting granted now. */
function takeRelease(policy: HostLeasePolicy, draft: Draft, from: string, scope: string, now: number): void {
  const grant = draft.context.grants[scope];
  if (!grant || grant.holder !== from || grant.released) return;
  const waiting = grant.waiting;
  const taint = taintOf(grant, now);
  if (!waiting || waiting.from === from) {
    draft.context = {
      ...draft.context,
      grants: { ...draft.context.grants, [scope]: { holder: from, at: grant.at, released: true, ...taint } },
    };
    return;
  }
  draft.context = {
    ...draft.context,
    grants: {
      ...draft.context.grants,
      [scope]: { holder: waiting.from, at: now, released: false, ...taint },
    },
  };
  const clean = taint.taintedUntil === undefined;
  if (waiting.from === policy.selfKey) {
    recordGrant(draft, scope, waiting.from, waiting.round, clean);
    return;
  }
  draft.effects.push({
    kind: 'reply',
    to: waiting.from,
    reply: { scope, round: waiting.round, granted: true, clean, freeInMs: 0, holder: null },
  });
}

/**
 * The most scopes a voter keeps promises for: singletons' roles are few, and a member asking for
 * ever new scopes must not grow a voter's memory without end.
 */
export const MAX_VOTER_SCOPES = 64;

function answer(policy: HostLeasePolicy, draft: Draft, request: LeaseRequest, now: number): void {
  const { grants } = draft.context;
  // owner scopes are bounded by the membership (granted to members only, pruned when they leave)
  const overCap =
    grants[request.scope] === undefined &&
    ownerOfScope(request.scope) === undefined &&
    Object.keys(grants).filter((s) => ownerOfScope(s) === undefined).length >= MAX_VOTER_SCOPES;
  const v = overCap
    ? { grants, granted: false, clean: false, freeInMs: policy.leaseMs, holder: null, fenced: false }
    : vote(policy, draft.context, request.from, request.scope, request.round, now);
  if (overCap) draft.effects.push({ kind: 'count', scope: '', change: 'scope-refused' });
  if (!v.granted && ownerOfScope(request.scope) !== undefined)
    draft.effects.push(
      debug(
        'host-lease.owner-refused',
        {
          scope: request.scope,
          from: request.from,
          round: request.round,
          reason: ownerRefusal(policy, draft.context, request.from, request.scope),
          freeInMs: v.freeInMs,
        },
        `owner scope ${request.scope} refused to ${request.from}`,
      ),
    );
  draft.context = { ...draft.context, grants: v.grants };
  noteOwnerWaiting(draft, request, v.granted, now);
  draft.effects.push({
    kind: 'reply',
    to: request.from,
    reply: {
      scope: request.scope,
      round: request.round,
      granted: v.granted,
      clean: v.clean,
      freeInMs: v.freeInMs,
      holder: v.holder,
      ...(v.fenced ? { fenced: true } : {}),
    },
  });
}

// ---- one message per voter and round -----------------------------------------------------------

/** A wire message to one member, as the machine sends it (`batchEffects`). */
export interface HostLeaseSend {
  readonly kind: 'send';
  readonly to: string;
  readonly message: HostLeaseMessage;
}

type MessageEffect = Extract<
  HostLeaseEffect,
  { kind: 'request' | 'reply' | 'release' | 'fence-request' | 'fence-answer' }
>;
export type HostLeaseOutput = Exclude<HostLeaseEffect, MessageEffect> | HostLeaseSend;

const chunks = <T>(items: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};

/**
 * A step's effects with its messages grouped per member: every request and fence to one voter
 * in one `host-lease.batch`, every answer to one member in one `host-lease.answers`. A lone
 * request or reply of a singleton scope keeps its single form (what every release understands);
 * releases stay single (rare). Other effects pass through in order, the messages after them.
 */
export function batchEffects(selfKey: string, effects: readonly HostLeaseEffect[]): HostLeaseOutput[] {
  const out: HostLeaseOutput[] = [];
  const asks = new Map<string, { requests: ScopeRound[]; fences: string[] }>();
  const answers = new Map<string, { replies: Omit<LeaseReply, 'type' | 'from'>[]; fences: FenceAnswer[] }>();
  const ask = (to: string) => asks.get(to) ?? asks.set(to, { requests: [], fences: [] }).get(to)!;
  const answer = (to: string) => answers.get(to) ?? answers.set(to, { replies: [], fences: [] }).get(to)!;
  const releases: HostLeaseSend[] = [];
  for (const e of effects) {
    switch (e.kind) {
      case 'request':
        for (const to of e.to) ask(to).requests.push({ scope: e.scope, round: e.round });
        break;
      case 'fence-request':
        for (const to of e.to) ask(to).fences.push(...e.keys);
        break;
      case 'reply':
        answer(e.to).replies.push(e.reply);
        break;
      case 'fence-answer':
        answer(e.to).fences.push(e.answer);
        break;
      case 'release':
        for (const to of e.to)
          releases.push({
            kind: 'send',
            to,
            message: { type: 'host-lease.release', from: selfKey, scope: e.scope },
          });
        break;
      default:
        out.push(e);
    }
  }
  for (const [to, { requests, fences }] of asks) {
    const [only] = requests;
    if (fences.length === 0 && requests.length === 1 && ownerOfScope(only!.scope) === undefined) {
      out.push({ kind: 'send', to, message: { type: 'host-lease.request', from: selfKey, ...only! } });
      continue;
    }
    const rs = chunks(requests, MAX_BATCH_SCOPES);
    const fs = chunks(fences, MAX_BATCH_FENCES);
    for (let i = 0; i < Math.max(rs.length, fs.length); i++) {
      const message: LeaseBatch = {
        type: 'host-lease.batch',
        from: selfKey,
        requests: rs[i] ?? [],
        fences: fs[i] ?? [],
      };
      out.push({ kind: 'send', to, message });
    }
  }
  for (const [to, { replies, fences }] of answers) {
    const [only] = replies;
    if (
      fences.length === 0 &&
      replies.length === 1 &&
      ownerOfScope(only!.scope) === undefined &&
      !only!.fenced
    ) {
      out.push({ kind: 'send', to, message: { type: 'host-lease.reply', from: selfKey, ...only! } });
      continue;
    }
    const rs = chunks(replies, MAX_BATCH_SCOPES);
    const fs = chunks(fences, MAX_BATCH_FENCES);
    for (let i = 0; i < Math.max(rs.length, fs.length); i++) {
      const message: LeaseAnswers = {
        type: 'host-lease.answers',
        from: selfKey,
        replies: rs[i] ?? [],
        fences: fs[i] ?? [],
      };
      out.push({ kind: 'send', to, message });
    }
  }
  out.push(...releases);
  return out;
}
