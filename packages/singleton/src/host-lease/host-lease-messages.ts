import { type MessageTypes, read, schema } from '@doyen/core';

/**
 * The host lease's wire messages. A would-be host asks every member for a grant; a member grants
 * one host per scope at a time and promises not to grant another for a lease and its clock
 * margin after its last grant (or until the host releases). Each message speaks only for the
 * member that sends it, so a grant cannot be forged for another voter.
 *
 * A node that bids for several scopes (singleton roles, its own owner scope) or fences other
 * members' owner scopes sends each voter ONE `host-lease.batch` per round and gets one
 * `host-lease.answers` back; a lone request for a singleton scope still travels as
 * `host-lease.request` (the form every release of doyen understands).
 */

/** Would-be or current host -> every member: grant me the lease of `scope` (round `round`). */
export interface LeaseRequest {
  readonly type: 'host-lease.request';
  readonly from: string;
  readonly scope: string;
  readonly round: number;
}

/** Voter -> host: the answer to one round. */
export interface LeaseReply {
  readonly type: 'host-lease.reply';
  readonly from: string;
  readonly scope: string;
  readonly round: number;
  readonly granted: boolean;
  /**
   * Granted, and no other host could still believe it holds the lease through this voter: the
   * voter was bound to nobody, to the asker, or to a host that released. Otherwise a grant that
   * expired may belong to a host that is paused, and the new host waits the pause bound.
   */
  readonly clean: boolean;
  /** Refused: in how many ms this voter's promise to its current host ends (if not renewed). */
  readonly freeInMs: number;
  /** Refused: the host this voter is bound to (the new host asks it to hand over). */
  readonly holder: string | null;
  /** Refused an owner scope because this voter fenced its owner: it never grants it again. */
  readonly fenced?: boolean;
}

/** Host -> every member: my instances of `scope` are stopped; the lease is free. */
export interface LeaseRelease {
  readonly type: 'host-lease.release';
  readonly from: string;
  readonly scope: string;
}

/** One scope's round in a batch. */
export interface ScopeRound {
  readonly scope: string;
  readonly round: number;
}

/** A member -> one voter, once per round: every scope it bids for or holds, every owner it fences. */
export interface LeaseBatch {
  readonly type: 'host-lease.batch';
  readonly from: string;
  readonly requests: readonly ScopeRound[];
  /** Member keys whose owner scope the sender asks this voter to fence. */
  readonly fences: readonly string[];
}

/** A voter's answer to a fence of `key`'s owner scope. */
export interface FenceAnswer {
  readonly key: string;
  /** This voter refuses `key` its owner scope from now on, and its promise to `key` ran out. */
  readonly fenced: boolean;
  /** Not fenced: in how many ms its promise to `key` ends (if not renewed); worth asking again then. */
  readonly freeInMs: number;
}

/** Voter -> the member that sent a batch: one answer per request and per fence. */
export interface LeaseAnswers {
  readonly type: 'host-lease.answers';
  readonly from: string;
  readonly replies: readonly Omit<LeaseReply, 'type' | 'from'>[];
  readonly fences: readonly FenceAnswer[];
}

export type HostLeaseMessage = LeaseRequest | LeaseReply | LeaseRelease | LeaseBatch | LeaseAnswers;

/** The owner scope of member `key`: held by `key` alone while it hosts entities (see owner-leases.ts). */
export const OWNER_SCOPE_PREFIX = 'owner:';
export const ownerScopeOf = (key: string): string => `${OWNER_SCOPE_PREFIX}${key}`;
/** The member an owner scope belongs to; undefined for a singleton scope. */
export const ownerOfScope = (scope: string): string | undefined =>
  scope.startsWith(OWNER_SCOPE_PREFIX) ? scope.slice(OWNER_SCOPE_PREFIX.length) : undefined;

/** The most scopes in one batch: the voter's cap on singleton scopes, plus one owner scope. */
export const MAX_BATCH_SCOPES = 65;
/** The most fences in one batch (one per member that went away at once). */
export const MAX_BATCH_FENCES = 1024;

/** A scope is a singleton role ('' for any member) or `owner:<member key>`. */
const roleScope = read.matching(/^[A-Za-z0-9_.:-]{0,64}$/, 'a lease scope (a role)');
const scope = ((v, path) => {
  if (typeof v === 'string' && v.startsWith(OWNER_SCOPE_PREFIX)) {
    read.memberKey(v.slice(OWNER_SCOPE_PREFIX.length), path);
    return v;
  }
  return roleScope(v, path);
}) as typeof roleScope;

const reply = {
  scope,
  round: read.count,
  granted: read.boolean,
  clean: read.boolean,
  freeInMs: read.time,
  holder: read.nullable(read.memberKey),
  fenced: read.optional(read.boolean),
};

export function registerHostLeaseMessages(types: MessageTypes): void {
  types.register(
    'host-lease.request',
    schema<LeaseRequest>({ from: read.memberKey, scope, round: read.count }, (m) => [m.from], 'member'),
  );
  types.register(
    'host-lease.reply',
    schema<LeaseReply>({ from: read.memberKey, ...reply }, (m) => [m.from], 'member'),
  );
  types.register(
    'host-lease.release',
    schema<LeaseRelease>({ from: read.memberKey, scope }, (m) => [m.from], 'member'),
  );
  types.register(
    'host-lease.batch',
    schema<LeaseBatch>(
      {
        from: read.memberKey,
        requests: read.list(read.object<ScopeRound>({ scope, round: read.count }), MAX_BATCH_SCOPES),
        fences: read.list(read.memberKey, MAX_BATCH_FENCES),
      },
      (m) => [m.from],
      'member',
    ),
  );
  types.register(
    'host-lease.answers',
    schema<LeaseAnswers>(
      {
        from: read.memberKey,
        replies: read.list(read.object<Omit<LeaseReply, 'type' | 'from'>>(reply), MAX_BATCH_SCOPES),
        fences: read.list(
          read.object<FenceAnswer>({ key: read.memberKey, fenced: read.boolean, freeInMs: read.time }),
          MAX_BATCH_FENCES,
        ),
      },
      (m) => [m.from],
      'member',
    ),
  );
}
