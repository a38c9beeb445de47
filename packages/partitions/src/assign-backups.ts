import { solveBackups } from './backup-flow.js';
import type { PartitionTable } from './partition-table.js';

/**
 * Backups with minimal movement: min(backupCount, N - 1) distinct backups per partition, never
 * its owner, each member backing up ⌊P·b/N⌋ or one more partitions, and as few new (partition,
 * member) backup pairs as any such layout allows, counting previous backups that are still
 * eligible and not the new owner as free. Solved exactly as a min-cost flow (`solveBackups`).
 */
export function assignBackups(
  previous: PartitionTable | undefined,
  owners: readonly string[],
  keys: readonly string[],
  backupCount: number,
): string[][] {
  const b = Math.min(backupCount, keys.length - 1);
  if (b <= 0) return owners.map(() => []);
  const index = new Map(keys.map((key, i) => [key, i]));
  const ownerIndex = owners.map((owner) => index.get(owner)!);
  const rows = solveBackups({
    owners: ownerIndex,
    memberCount: keys.length,
    b,
    previous: ownerIndex.map((owner, p) => [
      ...new Set(
        (previous?.backups[p] ?? []).flatMap((key) => {
          const m = index.get(key);
          return m === undefined || m === owner ? [] : [m];
        }),
      ),
    ]),
  });
  return rows.map((row) => row.map((m) => keys[m]!));
}
