import { type Membership, oldestOf, SINGLETON_HOLDING } from '@doyen/cluster';
import { type DecisionStep, type LogEffect, nodeKey } from '@doyen/core';
import type { HostLeaseMessage, LeaseReply, LeaseRequest } from './host-lease-messages.js';

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
 * still count.
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
}

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
}

/**
 * What the placement learns: the scopes this node may run now, whom this voter is bound to, and,
 * for a scope this node bids for in vain, the host that holds it (to be asked to hand over).
 */
export interface Placement {
  readonly mandates: Readonly<Record<string, boolean>>;
  readonly holders: Readonly<Record<string, string>>;
  readonly blockers: Readonly<Record<string, string>>;
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
};

export type HostLeaseEvent =
  | { readonly type: 'host-lease.membership'; readonly membership: Membership }
  | { readonly type: 'host-lease.scope'; readonly scope: string }
  | { readonly type: 'host-lease.hosting'; readonly scope: string; readonly running: number }
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
  /** What the placement knows changed: tell it. */
  | ({ readonly kind: 'placement' } & Placement)
  /** Counted in `doyen_singleton_lease_changes_total{scope,change}`. */
  | {
      readonly kind: 'count';
      readonly scope: string;
      /** `scope-refused`: a request for a new scope beyond MAX_VOTER_SCOPES (counted with scope ''). */
      readonly change: 'acquired' | 'lost' | 'released' | 'scope-refused';
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
  return intendedHost(m, scope) === policy.selfKey || (ctx.hosting[scope] ?? 0) > 0;
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
  if (!ctx.firstView) return undefined;
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
} {
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
  const clean = !current || current.holder === from || current.released;
  return {
    grants: { ...ctx.grants, [scope]: { holder: from, at: now, released: false } },
    granted: true,
    clean,
    freeInMs: 0,
    holder: null,
  };
}

// ---- steps -----------------------------------------------------------------------------------

type Draft = { context: HostLeaseContext; effects: HostLeaseEffect[] };

const log = (event: string, fields: Record<string, unknown>, msg: string): HostLeaseEffect => ({
  kind: 'log',
  level: 'info',
  event,
  fields,
  msg,
});

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
 * Brings every scope up to date at `now`: bids begin or end, rounds go out when due, leases are
 * (re)computed, acquisitions and losses are logged, changed mandates reported, and the next wake
 * computed.
 */
function settle(policy: HostLeasePolicy, draft: Draft, now: number): HostLeaseStep {
  const scopes = new Set([...draft.context.scopes, ...Object.keys(draft.context.holds)]);
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
    }
    if (now >= nextRoundAt(policy, draft.context.holds[scope]!, now)) sendRound(policy, draft, scope, now);
    refreshHold(policy, draft, scope, now);
  }
  reportPlacement(draft, now);
  return { ...draft, wakeInMs: nextWake(policy, draft.context, now) };
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
      { kind: 'count', scope, change: 'acquired' },
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
      { kind: 'count', scope, change: 'lost' },
      log('host-lease.lost', { scope }, `lease of scope '${scope}' lost: no majority renewed it in time`),
    );
  } else if (hold.heldUntil !== until) {
    next = { ...hold, heldUntil: null };
  }
  if (next !== hold) draft.context = { ...draft.context, holds: { ...draft.context.holds, [scope]: next } };
}

/** No longer wanted: give the lease back (our instances of it are stopped) so the next host need not wait. */
function release(policy: HostLeasePolicy, draft: Draft, scope: string): void {
  const { [scope]: hold, ...holds } = draft.context.holds;
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
      { kind: 'count', scope, change: 'released' },
      log('host-lease.released', { scope }, `lease of scope '${scope}' released`),
    );
  }
}

function reportPlacement(draft: Draft, now: number): void {
  const { reported } = draft.context;
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
    if (grant.released) continue;
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
  if (!changed) return;
  draft.context = { ...draft.context, reported: { mandates, holders, blockers } };
  draft.effects.push({ kind: 'placement', mandates, holders, blockers });
}

function nextWake(policy: HostLeasePolicy, ctx: HostLeaseContext, now: number): number | null {
  let soonest = Infinity;
  for (const hold of Object.values(ctx.holds)) {
    soonest = Math.min(soonest, nextRoundAt(policy, hold, now));
    if (hold.heldUntil !== null && hold.heldUntil > now) soonest = Math.min(soonest, hold.heldUntil);
    if (hold.readyAt !== null && hold.readyAt > now) soonest = Math.min(soonest, hold.readyAt);
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
      break;
    }
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
      if (event.granted) recordGrant(draft, event.scope, event.from, event.round, event.clean);
      else if (ctx.holds[event.scope]?.round === event.round)
        noteRefusal(policy, draft, event.scope, now + event.freeInMs, event.holder);
      break;
    case 'host-lease.release':
      takeRelease(policy, draft, event.from, event.scope, now);
      break;
  }
  return settle(policy, draft, now);
}

/** The holder gave the lease back: free at once, and the bid it kept waiting granted now. */
function takeRelease(policy: HostLeasePolicy, draft: Draft, from: string, scope: string, now: number): void {
  const grant = draft.context.grants[scope];
  if (!grant || grant.holder !== from || grant.released) return;
  const waiting = grant.waiting;
  if (!waiting || waiting.from === from) {
    draft.context = {
      ...draft.context,
      grants: { ...draft.context.grants, [scope]: { holder: from, at: grant.at, released: true } },
    };
    return;
  }
  draft.context = {
    ...draft.context,
    grants: { ...draft.context.grants, [scope]: { holder: waiting.from, at: now, released: false } },
  };
  if (waiting.from === policy.selfKey) {
    recordGrant(draft, scope, waiting.from, waiting.round, true);
    return;
  }
  draft.effects.push({
    kind: 'reply',
    to: waiting.from,
    reply: { scope, round: waiting.round, granted: true, clean: true, freeInMs: 0, holder: null },
  });
}

/**
 * The most scopes a voter keeps promises for: singletons' roles are few, and a member asking for
 * ever new scopes must not grow a voter's memory without end.
 */
export const MAX_VOTER_SCOPES = 64;

function answer(policy: HostLeasePolicy, draft: Draft, request: LeaseRequest, now: number): void {
  const { grants } = draft.context;
  const overCap = grants[request.scope] === undefined && Object.keys(grants).length >= MAX_VOTER_SCOPES;
  const v = overCap
    ? { grants, granted: false, clean: false, freeInMs: policy.leaseMs, holder: null }
    : vote(policy, draft.context, request.from, request.scope, request.round, now);
  if (overCap) draft.effects.push({ kind: 'count', scope: '', change: 'scope-refused' });
  draft.context = { ...draft.context, grants: v.grants };
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
    },
  });
}
