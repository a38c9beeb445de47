import type { ActorSystem, RateLimitedLog } from '@doyen/core';
import type { RejectReason } from './protocol.js';

/**
 * Counts and logs (rate limited) input refused at the boundary. A forged message, one that
 * claims to speak for a node other than its connection's, gets its own event and counter: it
 * means an authenticated peer lied, not that it was broken. So does an unauthorized one: a
 * message its sender may not send (a table not from the allocator's host, an order not from the
 * coordinator), whatever it claims.
 */
export function reportRejected(
  system: ActorSystem,
  log: RateLimitedLog,
  reason: RejectReason,
  detail: string,
  peer: string,
): void {
  system.metrics.inc('doyen_wire_rejected_total', 'Inbound input refused at the boundary', { reason });
  if (reason === 'forged') {
    system.metrics.inc('doyen_wire_forged_total', 'Messages dropped for claiming another identity');
    log.warn(
      'reject:forged',
      { event: 'wire.forged', detail, peer },
      `dropped a forged message from ${peer}: ${detail}`,
    );
    return;
  }
  if (reason === 'unauthorized') {
    system.metrics.inc(
      'doyen_wire_unauthorized_total',
      'Messages dropped because their sender lacks the authority their type declares',
    );
    log.warn(
      'reject:unauthorized',
      { event: 'wire.unauthorized', detail, peer },
      `dropped a message its sender may not send from ${peer}: ${detail}`,
    );
    return;
  }
  log.warn(
    `reject:${reason}`,
    { event: 'wire.rejected', reason, detail, peer },
    `refused input from ${peer}: ${detail}`,
  );
}
