/**
 * The lines an entity type with `activationLog` writes for its entities' lives. An activation
 * and a lone stop (idle, cap, finished) are one line each; the entities of a partition stopped
 * together (a hand-off, a lost owner lease) are ONE line: in the bench's rolling restart a
 * leaving node wrote ~2,000 stop lines while its drains held its event loop, and they cost
 * the restart's asks ~110 ms of added p99 (with the lines off: 145–161 ms; on: 264–292).
 * Readers that want one fact per entity (the overlap checkers) read every line through
 * `perEntityLines`.
 */

export const ACTIVATED_EVENT = 'sharding.activated';
export const PASSIVATED_EVENT = 'sharding.passivated';
/** The entities of one partition stopped in one task: `entityIds[i]` was activation `activations[i]`. */
export const PARTITION_PASSIVATED_EVENT = 'sharding.partition-passivated';

/**
 * A log line as one line per entity fact: a `sharding.partition-passivated` line becomes the
 * `sharding.passivated` line each of its entities would have written alone (same time, reason,
 * partition, incarnation), in its order; any other line is returned as it is. A partition line
 * whose lists are malformed is returned as it is, so a reader sees it and no invented stop.
 */
export function perEntityLines(json: Record<string, unknown>): Record<string, unknown>[] {
  if (json.event !== PARTITION_PASSIVATED_EVENT) return [json];
  const { entityIds, activations, msg: _msg, ...rest } = json;
  if (
    !Array.isArray(entityIds) ||
    !Array.isArray(activations) ||
    entityIds.length !== activations.length ||
    !entityIds.every((id) => typeof id === 'string')
  )
    return [json];
  return entityIds.map((entityId, i) => ({
    ...rest,
    event: PASSIVATED_EVENT,
    entityId,
    activation: activations[i],
  }));
}
