import { type MessageTypes, read, schema } from '@doyen/core';

/**
 * The host lease's wire messages. A would-be host asks every member for a grant; a member grants
 * one host per scope at a time and promises not to grant another for a lease and its clock
 * margin after its last grant (or until the host releases). Each message speaks only for the
 * member that sends it, so a grant cannot be forged for another voter.
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
}

/** Host -> every member: my instances of `scope` are stopped; the lease is free. */
export interface LeaseRelease {
  readonly type: 'host-lease.release';
  readonly from: string;
  readonly scope: string;
}

export type HostLeaseMessage = LeaseRequest | LeaseReply | LeaseRelease;

/** A scope is a singleton role ('' for any member). */
const scope = read.matching(/^[A-Za-z0-9_.:-]{0,64}$/, 'a lease scope (a role)');

export function registerHostLeaseMessages(types: MessageTypes): void {
  types.register(
    'host-lease.request',
    schema<LeaseRequest>({ from: read.memberKey, scope, round: read.count }, (m) => [m.from], 'member'),
  );
  types.register(
    'host-lease.reply',
    schema<LeaseReply>(
      {
        from: read.memberKey,
        scope,
        round: read.count,
        granted: read.boolean,
        clean: read.boolean,
        freeInMs: read.time,
        holder: read.nullable(read.memberKey),
      },
      (m) => [m.from],
      'member',
    ),
  );
  types.register(
    'host-lease.release',
    schema<LeaseRelease>({ from: read.memberKey, scope }, (m) => [m.from], 'member'),
  );
}
