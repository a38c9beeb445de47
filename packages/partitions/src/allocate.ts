import { assignBackups } from './assign-backups.js';
import { assignOwners } from './assign-owners.js';
import { type AllocateOptions, type PartitionMember, resolveInputs } from './inputs.js';
import type { PartitionTable } from './partition-table.js';

/**
 * The next partition table. Deterministic: the same previous table, member set and options give
 * the same table on every node, whatever the order of `members` (they are sorted by key).
 *
 * - Balanced: each eligible member (with `options.role`, when set) owns ⌊P/N⌋ or ⌈P/N⌉
 *   partitions; the ⌈P/N⌉ quotas go to the members already holding the most (ties: smaller key).
 *   With no eligible member every owner is ''.
 * - Minimal movement: a member keeps its previous partitions up to its quota; only orphans and
 *   surpluses move, so the number of owner changes equals `optimalMoves`. Freed partitions go
 *   to one of their previous backups (it already has the data) for as many as quotas allow.
 * - Backups: min(backupCount, N - 1) distinct backups per partition, never the owner, member
 *   backup counts within 1 of each other, and the fewest new backup assignments any such layout
 *   needs (still-valid previous backups are free); one owner's backups spread over the others.
 *
 * `version` is previous.version + 1 (1 for the first table), even when nothing moved. Throws
 * InvalidConfigError (or a subclass) for bad options or keys, PartitionCountMismatchError when
 * `previous` has another partition count, InvalidPartitionTableError for a malformed `previous`.
 * Never mutates its inputs.
 */
export function allocate(
  previous: PartitionTable | undefined,
  members: readonly PartitionMember[],
  options: AllocateOptions,
): PartitionTable {
  const { partitionCount, backupCount, keys } = resolveInputs(previous, members, options);
  const owners = assignOwners(previous, keys, partitionCount);
  return {
    version: (previous?.version ?? 0) + 1,
    partitionCount,
    owners,
    backups: assignBackups(previous, owners, keys, backupCount),
  };
}
