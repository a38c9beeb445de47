import { type ActorRef, type MessageTypes, read, schema } from '@doyen/core';
import { SERVICE_KEY_ID } from './service-key.js';

/**
 * Caps on one node's registrations. The wire refuses a listing over the first two; the decisions
 * also hold a node to `MAX_REFS_PER_NODE` in all, so a whole listing stays far below the system
 * lane's frame limit (~100 KB at most) and a member cannot make the others hold much for it.
 */
export const MAX_KEYS_PER_NODE = 64;
export const MAX_REFS_PER_KEY = 256;
export const MAX_REFS_PER_NODE = 1024;

/**
 * A node -> every member: all its local registrations, versioned. Sent whole on every change and
 * to each member that comes up; the receiver keeps the highest version per member key.
 */
export interface ReceptionistListing {
  readonly type: 'receptionist.listing';
  /** The sender's member key: a listing speaks only for its own node. */
  readonly from: string;
  readonly version: number;
  readonly entries: readonly ListingEntry[];
  /**
   * Sent by a node with registrations to a member first seen up: answer with your listing, even
   * an empty one. Until the answer comes the sender sends again (a listing from a node not yet in
   * the receiver's view is refused at the wire), a bounded number of times.
   */
  readonly reply: boolean;
}

export interface ListingEntry {
  readonly key: string;
  readonly refs: readonly ActorRef[];
}

const serviceKeyId = read.matching(SERVICE_KEY_ID, 'a service key id (1 to 128 letters, digits, _ . : -)');

/**
 * Rebuilt from its fields; it speaks for its sender and for every ref in it (a member registers
 * only actors of its own), and only members send it (`member`): a node that is not in the view
 * has nothing to register here.
 */
export function registerReceptionistMessages(types: MessageTypes): void {
  types.register(
    'receptionist.listing',
    schema<ReceptionistListing>(
      {
        from: read.memberKey,
        version: read.count,
        reply: read.boolean,
        entries: read.list(
          read.object<ListingEntry>({ key: serviceKeyId, refs: read.list(read.ref, MAX_REFS_PER_KEY) }),
          MAX_KEYS_PER_NODE,
        ),
      },
      (m) => [m.from, ...m.entries.flatMap((e) => e.refs)],
      'member',
    ),
  );
}
