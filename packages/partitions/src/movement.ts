import { heldBy } from './assign-owners.js';
import { PartitionCountMismatchError } from './errors.js';
import { type AllocateOptions, type PartitionMember, resolveInputs } from './inputs.js';
import type { PartitionTable } from './partition-table.js';
import { ownerQuotas } from './quotas.js';

/** Partitions whose owner differs between two tables (undefined `before`: all unassigned). */
export function movedPartitions(before: PartitionTable | undefined, after: PartitionTable): number[] {
  sameCount(before, after);
  const moved: number[] = [];
  after.owners.forEach((owner, p) => {
    if (owner !== (before?.owners[p] ?? '')) moved.push(p);
  });
  return moved;
}

/** New backup assignments: (partition, member) pairs in `after` that were not backups in `before`. */
export function movedBackups(before: PartitionTable | undefined, after: PartitionTable): number {
  sameCount(before, after);
  let moved = 0;
  after.backups.forEach((row, p) => {
    const was = new Set(before?.backups[p]);
    for (const key of row) if (!was.has(key)) moved++;
  });
  return moved;
}

/**
 * The fewest owner changes any balanced table for `afterMembers` needs, starting from `before`.
 * A member holding h partitions with quota q can keep min(h, q) of them; everything else (the
 * orphans of departed or ineligible members, unassigned partitions, surpluses) must change owner.
 * Kept partitions are maximised by handing the ⌈P/N⌉ quotas to the largest holders, so the
 * optimum is P − Σ min(h, q) under those quotas; with no eligible member it is the number of
 * partitions that had an owner. One join: the newcomer's quota. One leave: the leaver's count.
 */
export function optimalMoves(
  before: PartitionTable | undefined,
  afterMembers: readonly PartitionMember[],
  options: AllocateOptions,
): number {
  const { partitionCount, keys } = resolveInputs(before, afterMembers, options);
  if (keys.length === 0) return before?.owners.filter((owner) => owner !== '').length ?? 0;
  const held = heldBy(before, keys);
  const quotas = ownerQuotas(keys, held, partitionCount);
  let kept = 0;
  for (const key of keys) kept += Math.min(held.get(key)!, quotas.get(key)!);
  return partitionCount - kept;
}

function sameCount(before: PartitionTable | undefined, after: PartitionTable): void {
  if (before !== undefined && before.partitionCount !== after.partitionCount) {
    throw new PartitionCountMismatchError(before.partitionCount, after.partitionCount);
  }
}
