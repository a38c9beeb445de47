import type { MessageTypes } from '@doyen/core';
import { registerHeartbeatMessages } from './failure-detector/heartbeat-messages.js';
import { registerMembershipMessages } from './membership/membership-messages.js';
import { registerSplitBrainCheckerMessages } from './split-brain-checker/split-brain-checker-messages.js';

/**
 * Every cluster message, rebuilt from its fields; `speaksFor` names the identities a message
 * claims, which must be the node its connection authenticated as (a member speaks only for
 * itself). The last argument is who may send it, checked at the boundary against this node's
 * view: `anyone` where the sender is not yet (or not any more) one of ours (a join, heartbeats to
 * a joiner, probes between sides), `member` where the protocol itself picks among members (an
 * update is believed from the coordinator it believes, but one from any member that leaves us
 * out is its downed-notice, and a next-oldest may coordinate before we see the old one fail),
 * `coordinator` for a merge order. Which member a receiver believes is decided by the protocol
 * with these fields, once they are known to be true. Each protocol folder registers its own
 * messages (in this order, the order they always had).
 */
export function registerClusterMessages(types: MessageTypes): void {
  registerMembershipMessages(types);
  registerHeartbeatMessages(types);
  registerSplitBrainCheckerMessages(types);
}
