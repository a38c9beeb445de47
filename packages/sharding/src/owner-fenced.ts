import type { Logger } from '@doyen/core';
import type { Region } from './region/region.js';

/** What of the owner lease says this incarnation was fenced (`OwnerLeases` has it). */
export interface OwnerFencedPort {
  ownerFenced(): boolean;
  subscribe(listener: () => void): () => void;
}

/**
 * A node whose owner lease was fenced (a majority of voters refused it for good: the others
 * treat it as gone and may have restarted its partitions) never runs an entity again in this
 * incarnation: every entity stops at once, no hand-off, and `onFenced` runs once (a doyen node
 * then does what it does when downed: restart as a new incarnation, or exit). Returns the
 * unsubscribe.
 */
export function stopWhenOwnerFenced(
  leases: OwnerFencedPort,
  region: Region,
  logger: Logger,
  onFenced: () => void,
): () => void {
  let done = false;
  const check = () => {
    if (done || !leases.ownerFenced()) return;
    done = true;
    const partitions = region.activePartitions();
    region.deactivateAll('lease-lost');
    // fenced is for good: the snapshots a lapse keeps for the lease's return are of no use
    region.forgetLapsed();
    logger.warn(
      { event: 'sharding.owner-fenced', partitions: partitions.length },
      `this node's owner lease was fenced: ${partitions.length} partitions stopped here; the node leaves this incarnation`,
    );
    onFenced();
  };
  const unsubscribe = leases.subscribe(check);
  check();
  return unsubscribe;
}
