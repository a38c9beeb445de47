import { type ActorRef, nodeKey, type Terminated } from '@doyen/core';
import type { Membership } from '../model/membership.js';
import type { ReceptionistListing } from './messages.js';

/**
 * The receptionist's decisions as pure functions of (context, event): each node owns its local
 * registrations and sends them whole (versioned) to every member on a change and to each member
 * that comes up (a node that never registered sends nothing); it keeps the others' sets by
 * member key and drops a set when its member leaves
 * the membership. The machine (receptionist-machine.ts) runs the effects.
 */

/** One node's registrations: service key id -> refs, in registration order. */
export interface NodeRegistrations {
  readonly version: number;
  readonly entries: ReadonlyMap<string, readonly ActorRef[]>;
}

export interface ReceptionistContext {
  readonly membership: Membership | undefined;
  /** This node's registrations (version 0: never registered anything). */
  readonly local: NodeRegistrations;
  /** The other members' registrations, by member key `host:port#uid`. */
  readonly remote: ReadonlyMap<string, NodeRegistrations>;
  /** Members that have our current listing (sent on change, or when they came up). */
  readonly announcedTo: ReadonlySet<string>;
  /**
   * Members we sent our listing to when they came up, asking for theirs, whose answer has not
   * come (it is refused while we are not in their view yet, or lost), with the sends so far:
   * each `receptionist.ask-due` sends it again, up to MAX_LISTING_SENDS in all.
   */
  readonly deferred: ReadonlyMap<string, number>;
}

/**
 * How long a node with registrations waits for the answer of a member it sent its listing to
 * before sending it again. Only nodes with registrations send anything when a member comes up
 * (every asked member answers, even with nothing, so that an answer that has not come means a
 * listing that did not arrive): an empty listing is the same as none, so a pair of nodes with nothing registered never
 * talks. Each such pair used to talk once (the younger asked the older): a connection and a
 * handshake for each of the n(n-1)/2 pairs (a 40-node rolling start: 1,254 handshakes, now 682).
 */
export const DEFERRED_ASK_MS = 2_000;

/** Sends of our listing to a member that does not answer (its node runs no receptionist, say). */
export const MAX_LISTING_SENDS = 5;

export const initialReceptionistContext: ReceptionistContext = {
  membership: undefined,
  local: { version: 0, entries: new Map() },
  remote: new Map(),
  announcedTo: new Set(),
  deferred: new Map(),
};

export interface ReceptionistPolicy {
  readonly selfKey: string;
  /** Service keys one node may register under (local registrations and remote listings). */
  readonly maxKeysPerNode: number;
  /** Refs one node may register under one key. */
  readonly maxRefsPerKey: number;
  /** Refs one node may register in all. */
  readonly maxRefsPerNode: number;
}

export type ReceptionistEvent =
  | { readonly type: 'receptionist.register'; readonly key: string; readonly ref: ActorRef }
  | { readonly type: 'receptionist.deregister'; readonly key: string; readonly ref: ActorRef }
  /** One-off listing: answered through `reply`, after every event queued before it. */
  | {
      readonly type: 'receptionist.find';
      readonly key: string;
      readonly reply: (refs: readonly ActorRef[]) => void;
    }
  | { readonly type: 'receptionist.membership'; readonly membership: Membership }
  /** DEFERRED_ASK_MS after a deferral: ask the deferred members whose listing has not come. */
  | { readonly type: 'receptionist.ask-due' }
  | ReceptionistListing
  | Terminated;

export type RefusalReason = 'keys-per-node' | 'refs-per-key' | 'refs-per-node' | 'not-local' | 'foreign-ref';

export type ReceptionistEffect =
  /** Death-watch a local ref: its entries leave when it stops. */
  | { readonly kind: 'watch'; readonly ref: ActorRef }
  | { readonly kind: 'unwatch'; readonly ref: ActorRef }
  /** Our listing to the receptionists of the members `to` (member keys). */
  | { readonly kind: 'send-listing'; readonly to: readonly string[]; readonly listing: ReceptionistListing }
  /** Raise `receptionist.ask-due` after `afterMs`. */
  | { readonly kind: 'ask-later'; readonly afterMs: number }
  /** The cluster-wide listing of `key` changed: tell its subscribers. */
  | { readonly kind: 'listing-changed'; readonly key: string; readonly refs: readonly ActorRef[] }
  | {
      readonly kind: 'answer';
      readonly reply: (refs: readonly ActorRef[]) => void;
      readonly refs: readonly ActorRef[];
    }
  /** A registration or a listing over the bounds or not its own: dropped, warned and counted. */
  | {
      readonly kind: 'refused';
      readonly reason: RefusalReason;
      readonly fields: Readonly<Record<string, unknown>>;
      readonly msg: string;
    }
  | {
      readonly kind: 'log';
      readonly event: string;
      readonly fields: Readonly<Record<string, unknown>>;
      readonly msg: string;
    };

export interface ReceptionistStep {
  readonly context: ReceptionistContext;
  readonly effects: readonly ReceptionistEffect[];
}

const same = (context: ReceptionistContext): ReceptionistStep => ({ context, effects: [] });

// ---- what the context says -------------------------------------------------------------------

/** Every ref registered under `key` across the cluster: ours first, then each member's. */
export function listingOf(ctx: ReceptionistContext, key: string): readonly ActorRef[] {
  const refs = [...(ctx.local.entries.get(key) ?? [])];
  for (const node of ctx.remote.values()) refs.push(...(node.entries.get(key) ?? []));
  return refs;
}

/** Members our listing goes to: the others that serve (up, or on their way out). */
function peersOf(policy: ReceptionistPolicy, membership: Membership | undefined): string[] {
  if (!membership) return [];
  return membership.members
    .filter((m) => m.status === 'up' || m.status === 'leaving' || m.status === 'exiting')
    .map(nodeKey)
    .filter((key) => key !== policy.selfKey);
}

function listingFor(
  policy: ReceptionistPolicy,
  local: NodeRegistrations,
  reply = false,
): ReceptionistListing {
  return {
    type: 'receptionist.listing',
    from: policy.selfKey,
    version: local.version,
    entries: [...local.entries].map(([key, refs]) => ({ key, refs })),
    reply,
  };
}

const idsOf = (refs: readonly ActorRef[]) => refs.map((r) => r.id).join('\n');

/** `listing-changed` for each of `keys` whose listing differs between the two contexts. */
function changes(
  before: ReceptionistContext,
  after: ReceptionistContext,
  keys: Iterable<string>,
): ReceptionistEffect[] {
  const effects: ReceptionistEffect[] = [];
  for (const key of new Set(keys)) {
    const refs = listingOf(after, key);
    if (idsOf(refs) !== idsOf(listingOf(before, key))) effects.push({ kind: 'listing-changed', key, refs });
  }
  return effects;
}

function refCount(entries: ReadonlyMap<string, readonly ActorRef[]>): number {
  let count = 0;
  for (const refs of entries.values()) count += refs.length;
  return count;
}

function isOurs(policy: ReceptionistPolicy, ref: ActorRef): boolean {
  return nodeKey(ref.address.node) === policy.selfKey;
}

function registeredAnywhere(entries: ReadonlyMap<string, readonly ActorRef[]>, ref: ActorRef): boolean {
  for (const refs of entries.values()) if (refs.some((r) => r.id === ref.id)) return true;
  return false;
}

/** Our registrations changed: a new version, sent whole to every member. */
function publishLocal(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  entries: ReadonlyMap<string, readonly ActorRef[]>,
  keys: readonly string[],
  extra: readonly ReceptionistEffect[] = [],
): ReceptionistStep {
  const local = { version: ctx.local.version + 1, entries };
  const to = peersOf(policy, ctx.membership);
  const next: ReceptionistContext = { ...ctx, local, announcedTo: new Set(to) };
  const send: ReceptionistEffect[] =
    to.length > 0 ? [{ kind: 'send-listing', to, listing: listingFor(policy, local) }] : [];
  return { context: next, effects: [...extra, ...changes(ctx, next, keys), ...send] };
}

// ---- steps -----------------------------------------------------------------------------------

/** Registers a ref of this node under a key (bounded per node and per key). */
export function register(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  key: string,
  ref: ActorRef,
): ReceptionistStep {
  if (!isOurs(policy, ref))
    return refuse(
      ctx,
      'not-local',
      { key, ref: ref.id },
      `cannot register ${ref.id}: not an actor of this node`,
    );
  const existing = ctx.local.entries.get(key) ?? [];
  if (existing.some((r) => r.id === ref.id)) return same(ctx);
  if (existing.length === 0 && ctx.local.entries.size >= policy.maxKeysPerNode)
    return refuse(
      ctx,
      'keys-per-node',
      { key, ref: ref.id, cap: policy.maxKeysPerNode },
      `cannot register ${ref.id} under ${key}: this node registers under ${policy.maxKeysPerNode} keys already`,
    );
  if (existing.length >= policy.maxRefsPerKey)
    return refuse(
      ctx,
      'refs-per-key',
      { key, ref: ref.id, cap: policy.maxRefsPerKey },
      `cannot register ${ref.id} under ${key}: ${policy.maxRefsPerKey} refs of this node are registered there already`,
    );
  if (refCount(ctx.local.entries) >= policy.maxRefsPerNode)
    return refuse(
      ctx,
      'refs-per-node',
      { key, ref: ref.id, cap: policy.maxRefsPerNode },
      `cannot register ${ref.id} under ${key}: this node has ${policy.maxRefsPerNode} registrations already`,
    );
  const watch: ReceptionistEffect[] = registeredAnywhere(ctx.local.entries, ref)
    ? []
    : [{ kind: 'watch', ref }];
  const entries = new Map(ctx.local.entries).set(key, [...existing, ref]);
  return publishLocal(policy, ctx, entries, [key], watch);
}

export function deregister(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  key: string,
  ref: ActorRef,
): ReceptionistStep {
  const existing = ctx.local.entries.get(key);
  if (!existing?.some((r) => r.id === ref.id)) return same(ctx);
  const entries = new Map(ctx.local.entries);
  const rest = existing.filter((r) => r.id !== ref.id);
  if (rest.length === 0) entries.delete(key);
  else entries.set(key, rest);
  const unwatch: ReceptionistEffect[] = registeredAnywhere(entries, ref) ? [] : [{ kind: 'unwatch', ref }];
  return publishLocal(policy, ctx, entries, [key], unwatch);
}

/** A registered actor of ours stopped: its entries leave with it. */
export function actorStopped(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  ref: ActorRef,
): ReceptionistStep {
  if (!isOurs(policy, ref)) return same(ctx);
  const entries = new Map<string, readonly ActorRef[]>();
  const keys: string[] = [];
  for (const [key, refs] of ctx.local.entries) {
    const rest = refs.filter((r) => r.id !== ref.id);
    if (rest.length !== refs.length) keys.push(key);
    if (rest.length > 0) entries.set(key, rest);
  }
  if (keys.length === 0) return same(ctx);
  return publishLocal(policy, ctx, entries, keys);
}

export function find(
  ctx: ReceptionistContext,
  key: string,
  reply: (refs: readonly ActorRef[]) => void,
): ReceptionistStep {
  return { context: ctx, effects: [{ kind: 'answer', reply, refs: listingOf(ctx, key) }] };
}

/**
 * A new membership: the sets of members no longer in it leave (downed, removed), and members
 * that serve and have not heard our listing get it, asked to answer with theirs (a member that
 * just came up, a new incarnation at a known address).
 */
export function takeMembership(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  membership: Membership,
): ReceptionistStep {
  const present = new Set(membership.members.map(nodeKey));
  const gone = [...ctx.remote.keys()].filter((key) => !present.has(key));
  let remote = ctx.remote;
  if (gone.length > 0) {
    const kept = new Map(ctx.remote);
    for (const key of gone) kept.delete(key);
    remote = kept;
  }
  const fresh = peersOf(policy, membership).filter((key) => !ctx.announcedTo.has(key));
  const announcedTo = new Set([...ctx.announcedTo].filter((key) => present.has(key)));
  for (const key of fresh) announcedTo.add(key);
  // Nothing to tell (never registered): nothing to send, since a member with registrations sends
  // us its listing when it sees us up, and again until we answer.
  const asked = ctx.local.version === 0 ? [] : fresh;
  let deferred = ctx.deferred;
  const waiting = asked.filter((key) => !remote.has(key));
  if (waiting.length > 0) {
    const more = new Map(ctx.deferred);
    for (const key of waiting) more.set(key, 1);
    deferred = more;
  }
  const next: ReceptionistContext = { ...ctx, membership, remote, announcedTo, deferred };
  const droppedKeys = gone.flatMap((key) => [...ctx.remote.get(key)!.entries.keys()]);
  const effects: ReceptionistEffect[] = gone.map((member) => ({
    kind: 'log',
    event: 'receptionist.member-dropped',
    fields: { member, keys: [...ctx.remote.get(member)!.entries.keys()] },
    msg: `registrations of ${member} dropped: it left the membership`,
  }));
  effects.push(...changes(ctx, next, droppedKeys));
  // to a member first seen up, asking for its listing back (see ReceptionistListing.reply)
  if (asked.length > 0)
    effects.push({ kind: 'send-listing', to: asked, listing: listingFor(policy, ctx.local, true) });
  if (ctx.deferred.size === 0 && deferred.size > 0)
    effects.push({ kind: 'ask-later', afterMs: DEFERRED_ASK_MS });
  return { context: next, effects };
}

/**
 * The deferred asks are due: the members still present whose answer has not come get our listing
 * again, and stay deferred until they answer or have had MAX_LISTING_SENDS.
 */
function askDeferred(policy: ReceptionistPolicy, ctx: ReceptionistContext): ReceptionistStep {
  if (ctx.deferred.size === 0) return same(ctx);
  const present = new Set(ctx.membership?.members.map(nodeKey) ?? []);
  const deferred = new Map<string, number>();
  for (const [key, sends] of ctx.deferred)
    if (present.has(key) && !ctx.remote.has(key)) deferred.set(key, sends + 1);
  const to = [...deferred.keys()];
  for (const [key, sends] of deferred) if (sends >= MAX_LISTING_SENDS) deferred.delete(key);
  const effects: ReceptionistEffect[] =
    to.length > 0 ? [{ kind: 'send-listing', to, listing: listingFor(policy, ctx.local, true) }] : [];
  if (deferred.size > 0) effects.push({ kind: 'ask-later', afterMs: DEFERRED_ASK_MS });
  return { context: { ...ctx, deferred }, effects };
}

/**
 * Another member's listing: kept when it is newer than the one held, comes from a member of our
 * view (none yet: kept until the first membership says otherwise), stays within the bounds and
 * names only the sender's own actors.
 */
export function takeListing(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  listing: ReceptionistListing,
): ReceptionistStep {
  const from = listing.from;
  if (from === policy.selfKey) return same(ctx);
  if (ctx.membership && !ctx.membership.members.some((m) => nodeKey(m) === from))
    return {
      context: ctx,
      effects: [
        {
          kind: 'log',
          event: 'receptionist.listing-ignored',
          fields: { from, version: listing.version },
          msg: `listing from ${from} ignored: not a member of this view`,
        },
      ],
    };
  // answered even when we have nothing: the answer is what stops the sender's repeats
  const answer: ReceptionistEffect[] = listing.reply
    ? [{ kind: 'send-listing', to: [from], listing: listingFor(policy, ctx.local) }]
    : [];
  const held = ctx.remote.get(from);
  if (held && held.version >= listing.version) return { context: ctx, effects: answer };
  const foreign = listing.entries.flatMap((e) => e.refs).find((r) => nodeKey(r.address.node) !== from);
  if (foreign)
    return refuse(
      ctx,
      'foreign-ref',
      { from, ref: foreign.id },
      `listing from ${from} refused: it names ${foreign.id}`,
    );
  const entries = new Map<string, readonly ActorRef[]>();
  for (const { key, refs } of listing.entries) if (refs.length > 0) entries.set(key, refs);
  if (entries.size > policy.maxKeysPerNode)
    return refuse(
      ctx,
      'keys-per-node',
      { from, keys: entries.size, cap: policy.maxKeysPerNode },
      `listing from ${from} refused: ${entries.size} keys (cap ${policy.maxKeysPerNode})`,
    );
  const crowded = [...entries].find(([, refs]) => refs.length > policy.maxRefsPerKey);
  if (crowded)
    return refuse(
      ctx,
      'refs-per-key',
      { from, key: crowded[0], refs: crowded[1].length, cap: policy.maxRefsPerKey },
      `listing from ${from} refused: ${crowded[1].length} refs under ${crowded[0]} (cap ${policy.maxRefsPerKey})`,
    );
  const total = refCount(entries);
  if (total > policy.maxRefsPerNode)
    return refuse(
      ctx,
      'refs-per-node',
      { from, refs: total, cap: policy.maxRefsPerNode },
      `listing from ${from} refused: ${total} refs (cap ${policy.maxRefsPerNode})`,
    );
  const next: ReceptionistContext = {
    ...ctx,
    remote: new Map(ctx.remote).set(from, { version: listing.version, entries }),
  };
  return {
    context: next,
    effects: [...changes(ctx, next, [...(held?.entries.keys() ?? []), ...entries.keys()]), ...answer],
  };
}

function refuse(
  ctx: ReceptionistContext,
  reason: RefusalReason,
  fields: Record<string, unknown>,
  msg: string,
): ReceptionistStep {
  return { context: ctx, effects: [{ kind: 'refused', reason, fields, msg }] };
}

/** The one step for each event (the machine has a single state). */
export function decide(
  policy: ReceptionistPolicy,
  ctx: ReceptionistContext,
  event: ReceptionistEvent,
): ReceptionistStep {
  switch (event.type) {
    case 'receptionist.register':
      return register(policy, ctx, event.key, event.ref);
    case 'receptionist.deregister':
      return deregister(policy, ctx, event.key, event.ref);
    case 'receptionist.find':
      return find(ctx, event.key, event.reply);
    case 'receptionist.membership':
      return takeMembership(policy, ctx, event.membership);
    case 'receptionist.ask-due':
      return askDeferred(policy, ctx);
    case 'receptionist.listing':
      return takeListing(policy, ctx, event);
    case 'doyen.terminated':
      return actorStopped(policy, ctx, event.ref);
  }
}
