import { type Membership, memberKey } from '@doyen/cluster';
import type { DecisionStep, LogEffect } from '@doyen/core';
import { allocate } from '../allocate.js';
import type { AllocateOptions, PartitionMember } from '../inputs.js';
import { movedPartitions } from '../movement.js';
import type { PartitionTable } from '../partition-table.js';
import type { RetireRequest, TableAck } from './allocator-messages.js';

/**
 * The partition allocator's decisions as pure functions of (context, event): when to allocate,
 * the next table with its effects as data (adopt it here, log, publish it), the acks collected,
 * and the resend to whoever has not acknowledged in time. The machine (allocator-machine.ts)
 * wires them to its states and delay; its one action `run` executes the effects.
 *
 * RETIRING members (a node about to leave asked for it, while still up) are left out of every
 * table this allocator computes, so their partitions move off them in a planned hand-off before
 * they leave; a member drops out of the set once it is no longer up. Unless every eligible up
 * member retires: the last one keeps its partitions (there is no one to hand them to).
 */

/** The membership as the allocator needs it, sent by the machine's membership feed. */
export interface MembersEvent {
  readonly type: 'allocator.members';
  /** Up members: those may own partitions. */
  readonly members: readonly PartitionMember[];
  /** Every live member (not down or removed): each must learn the table. */
  readonly all: readonly string[];
  /** The membership's version: receivers judge the table against their view at it. */
  readonly version: number;
  /** The latest table this node's partition service knows, as the feed saw it. */
  readonly known: PartitionTable | undefined;
}

export type AllocatorEvent = MembersEvent | TableAck | RetireRequest;

export interface AllocatorContext {
  /** The last table this allocator computed (at first: the one this node knew when it started). */
  readonly table: PartitionTable | undefined;
  /** The membership version `table` was computed from (sent with it). */
  readonly membershipVersion: number;
  /** Keys of the up members `table` was computed for, sorted. */
  readonly memberKeys: readonly string[];
  /** Members that have not acknowledged `table` yet. */
  readonly waiting: readonly string[];
  /** The up members (with roles) and every live member, as of the last membership event. */
  readonly members: readonly PartitionMember[];
  readonly all: readonly string[];
  /** Up members that asked to own nothing (they are about to leave), sorted. */
  readonly retiring: readonly string[];
}

export function initialAllocatorContext(known: PartitionTable | undefined): AllocatorContext {
  return {
    table: known,
    membershipVersion: 0,
    memberKeys: [],
    waiting: [],
    members: [],
    all: [],
    retiring: [],
  };
}

/** What a decision depends on besides the context. */
export interface AllocatorPolicy {
  /** This node's member key: it adopts the table itself instead of being sent it. */
  readonly selfKey: string;
  readonly options: AllocateOptions;
}

/** What the machine's action `run` carries out. */
export type AllocatorEffect =
  /** The partition service on this node adopts the table (it runs the allocator). */
  | { readonly kind: 'adopt'; readonly table: PartitionTable }
  | LogEffect
  /** The table, computed at `membershipVersion`, to the partition service of each of `to`. */
  | {
      readonly kind: 'publish';
      readonly to: readonly string[];
      readonly table: PartitionTable;
      readonly membershipVersion: number;
    };

export type AllocatorStep = DecisionStep<AllocatorContext, AllocatorEffect>;

const same = (context: AllocatorContext): AllocatorStep => ({ context, effects: [] });

/** Up members may own partitions; everyone live must learn the table. */
export function membersEventOf(m: Membership, known: PartitionTable | undefined): MembersEvent {
  const members = m.members
    .filter((x) => x.status === 'up')
    .map((x) => ({ key: memberKey(x), roles: x.roles }));
  const all = m.members.filter((x) => x.status !== 'down' && x.status !== 'removed').map(memberKey);
  return { type: 'allocator.members', members, all, version: m.version, known };
}

const sortedKeys = (members: readonly PartitionMember[]): string[] => members.map((m) => m.key).sort();

// ---- what the context says -------------------------------------------------------------------

/** The up members differ from those the current table was computed for. */
export function membersChanged(ctx: AllocatorContext, event: AllocatorEvent): boolean {
  if (event.type !== 'allocator.members') return false;
  const keys = sortedKeys(event.members);
  return keys.length !== ctx.memberKeys.length || keys.some((k, i) => k !== ctx.memberKeys[i]);
}

export function allAcked(ctx: AllocatorContext): boolean {
  return ctx.waiting.length === 0;
}

/** A retire request this allocator has not yet acted on (self only: the wire checked `from`). */
export function retireNew(ctx: AllocatorContext, event: AllocatorEvent): boolean {
  return (
    event.type === 'partitions.retire' &&
    !ctx.retiring.includes(event.from) &&
    ctx.members.some((m) => m.key === event.from)
  );
}

/**
 * The members a table is computed over: the up members minus the retiring ones, unless that
 * leaves no member eligible for the role (then the retiring keep theirs: someone must own them).
 */
export function ownersPool(
  members: readonly PartitionMember[],
  retiring: readonly string[],
  role: string | undefined,
): readonly PartitionMember[] {
  if (retiring.length === 0) return members;
  const staying = members.filter((m) => !retiring.includes(m.key));
  const eligible = (m: PartitionMember) => role === undefined || m.roles.includes(role);
  return staying.some(eligible) ? staying : members;
}

// ---- steps -----------------------------------------------------------------------------------

/**
 * New up members: the balanced table with minimal movement from the last one known, adopted
 * here and published to every other live member, whose acks are then awaited.
 */
export function allocateFor(
  policy: AllocatorPolicy,
  ctx: AllocatorContext,
  event: AllocatorEvent,
): AllocatorStep {
  if (event.type !== 'allocator.members') return same(ctx);
  // a retiring member that is no longer up (leaving, down, removed) needs no exclusion any more
  const retiring = ctx.retiring.filter((k) => event.members.some((m) => m.key === k));
  return tableFor(policy, { ...ctx, retiring }, event.members, event.all, event.version, event.known);
}

/**
 * A member asks to own nothing before it leaves: the table without it (its partitions drain to
 * the others), adopted and published like any other; logged `partitions.retiring`.
 */
export function retire(policy: AllocatorPolicy, ctx: AllocatorContext, event: AllocatorEvent): AllocatorStep {
  if (event.type !== 'partitions.retire' || !retireNew(ctx, event)) return same(ctx);
  const retiring = [...ctx.retiring, event.from].sort();
  const step = tableFor(policy, { ...ctx, retiring }, ctx.members, ctx.all, ctx.membershipVersion, undefined);
  const kept = ownersPool(ctx.members, retiring, policy.options.role) === ctx.members;
  const log: AllocatorEffect = {
    kind: 'log',
    level: 'info',
    event: 'partitions.retiring',
    fields: { member: event.from, kept },
    msg: kept
      ? `${event.from} retires, but no other member may own partitions: it keeps them`
      : `${event.from} retires: its partitions move to the other members`,
  };
  return { context: step.context, effects: [log, ...step.effects] };
}

/** The balanced table over the owners pool, with minimal movement from the last one known. */
function tableFor(
  policy: AllocatorPolicy,
  ctx: AllocatorContext,
  members: readonly PartitionMember[],
  all: readonly string[],
  membershipVersion: number,
  known: PartitionTable | undefined,
): AllocatorStep {
  const before = ctx.table ?? known;
  const pool = ownersPool(members, ctx.retiring, policy.options.role);
  const next = allocate(before, pool, policy.options);
  const moved = before ? movedPartitions(before, next).length : next.owners.filter(Boolean).length;
  const others = all.filter((k) => k !== policy.selfKey);
  return {
    context: {
      table: next,
      membershipVersion,
      memberKeys: sortedKeys(members),
      waiting: others,
      members,
      all,
      retiring: ctx.retiring,
    },
    effects: [
      { kind: 'adopt', table: next },
      {
        kind: 'log',
        level: 'info',
        event: 'partitions.allocated',
        fields: { version: next.version, members: pool.length, moved },
        msg: `allocated ${policy.options.partitionCount} partitions over ${pool.length} members (${moved} moved)`,
      },
      { kind: 'publish', to: others, table: next, membershipVersion },
    ],
  };
}

/**
 * A member acknowledged holding a NEWER table than this allocator's: the allocator's lineage
 * restarted behind the cluster. When every member that may host the allocator is a new
 * incarnation (all downed at once, or restarted), the new allocator starts from no table, at
 * version 1, while a member that stayed (a proxy-only node) holds the old lineage's higher
 * version and, fencing by version, refuses every table below it for good. Only a current member
 * counts, and only a version that can still be counted past.
 */
export function ackAhead(ctx: AllocatorContext, event: AllocatorEvent): boolean {
  return (
    event.type === 'partitions.ack' &&
    ctx.table !== undefined &&
    event.version > ctx.table.version &&
    // a lineage restarts a few dozen versions behind; a member claiming far more would push the
    // versions towards the end of the safe integers, where no table could follow
    event.version - ctx.table.version <= MAX_VERSION_RAISE &&
    ctx.all.includes(event.from)
  );
}

/** How far past its own table an allocator numbers on one member's word (see `ackAhead`). */
export const MAX_VERSION_RAISE = 1_000_000;

/**
 * The same table again, numbered past the member's (nothing moves): adopted here and published to
 * every other live member, whose acks are awaited, so every member, the one ahead included,
 * follows one lineage again. Logged `partitions.version-raised`.
 */
export function raiseVersion(
  policy: AllocatorPolicy,
  ctx: AllocatorContext,
  event: AllocatorEvent,
): AllocatorStep {
  if (event.type !== 'partitions.ack' || !ackAhead(ctx, event)) return same(ctx);
  const before = ctx.table!;
  const table: PartitionTable = { ...before, version: event.version + 1 };
  const others = ctx.all.filter((k) => k !== policy.selfKey);
  return {
    context: { ...ctx, table, waiting: others },
    effects: [
      { kind: 'adopt', table },
      {
        kind: 'log',
        level: 'warn',
        event: 'partitions.version-raised',
        fields: { member: event.from, theirs: event.version, ours: before.version, version: table.version },
        msg: `${event.from} holds partition table v${event.version}, past this allocator's v${before.version}: the same table republished as v${table.version}`,
      },
      { kind: 'publish', to: others, table, membershipVersion: ctx.membershipVersion },
    ],
  };
}

/** A member acknowledged: no longer waited for. */
export function takeAck(ctx: AllocatorContext, event: AllocatorEvent): AllocatorStep {
  if (event.type !== 'partitions.ack') return same(ctx);
  return same({ ...ctx, waiting: ctx.waiting.filter((k) => k !== event.from) });
}

/**
 * Not every member acknowledged in time: warn, and send the table once more to those missing
 * (a receiver refuses a table from a sender it does not know as a member yet, its view lagging,
 * and judges the same table again now).
 */
export function resendToMissing(ctx: AllocatorContext): AllocatorStep {
  const warn: AllocatorEffect = {
    kind: 'log',
    level: 'warn',
    event: 'partitions.ack-timeout',
    fields: { missing: ctx.waiting },
    msg: 'partition table not acknowledged by every member in time',
  };
  if (!ctx.table) return { context: ctx, effects: [warn] };
  return {
    context: ctx,
    effects: [
      warn,
      { kind: 'publish', to: ctx.waiting, table: ctx.table, membershipVersion: ctx.membershipVersion },
    ],
  };
}
