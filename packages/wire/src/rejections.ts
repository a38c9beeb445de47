import type { ActorSystem, RateLimitedLog } from '@doyen/core';
import type { RejectReason } from './protocol.js';

/**
 * Counts and logs (rate limited) input refused at the boundary. A forged message, one that
 * claims to speak for a node other than its connection's, gets its own event and counter: it
 * means an authenticated peer lied, not that it was broken.
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
  log.warn(
    `reject:${reason}`,
    { event: 'wire.rejected', reason, detail, peer },
    `refused input from ${peer}: ${detail}`,
  );
}
