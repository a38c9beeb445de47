/** Why a message could not be delivered (each a series of `doyen_dead_letters_total`, at 0 from the start). */
export const DEAD_LETTER_REASONS = [
  'no-such-actor',
  'actor-stopped',
  'mailbox-full',
  'mailbox-overflow-dropped-oldest',
  'wrong-incarnation',
  'no-transport',
  'outbound-queue-full',
  'message-too-large',
  'unencodable',
  'ask-reply-after-timeout',
  'node-gone',
  /** Sent by path (no uid) while no member runs at that address. */
  'no-member-at-address',
  'system-terminated',
  /** Sharding: held for a partition not active anywhere known, and pushed out by newer ones. */
  'sharding-buffer-full',
  /** Sharding: refused (unknown entity type, bad id, message type not registered, hop limit). */
  'sharding-refused',
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];
