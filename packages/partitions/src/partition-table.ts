import { PartitionOutOfRangeError } from './errors.js';
import { isPartitionCount, MAX_BACKUP_COUNT, MAX_MEMBER_KEY_LENGTH } from './limits.js';
import { partitionOf } from './partition-of.js';

/**
 * Who owns which partition. Immutable by contract: `allocate` always returns a fresh table.
 * Member keys are opaque strings chosen by the caller (e.g. address + uid, so a restarted node is
 * a new owner).
 */
export interface PartitionTable {
  /** Bumped by every `allocate`; the newest table wins when several are in flight. */
  readonly version: number;
  readonly partitionCount: number;
  /** Owner's member key per partition; '' while unassigned (no eligible member). */
  readonly owners: readonly string[];
  /** Per partition, distinct backup owners, none equal to the owner; [] when unassigned. */
  readonly backups: readonly (readonly string[])[];
}

/** The owner of a partition, or undefined while it is unassigned. */
export function ownerOf(table: PartitionTable, partition: number): string | undefined {
  if (!Number.isInteger(partition) || partition < 0 || partition >= table.partitionCount) {
    throw new PartitionOutOfRangeError(partition, table.partitionCount);
  }
  return table.owners[partition] || undefined;
}

/** key -> partition -> owner, the lookup a router does per message. */
export function ownerOfKey(table: PartitionTable, key: string | Uint8Array): string | undefined {
  return ownerOf(table, partitionOf(key, table.partitionCount));
}

/** The partitions a member owns, ascending. */
export function partitionsOwnedBy(table: PartitionTable, key: string): number[] {
  const owned: number[] = [];
  table.owners.forEach((owner, partition) => {
    if (key !== '' && owner === key) owned.push(partition);
  });
  return owned;
}

/** Partitions owned per member, keys in ascending order; unassigned partitions are not counted. */
export function countsByOwner(table: PartitionTable): Map<string, number> {
  const counts = new Map<string, number>();
  for (const owner of table.owners) if (owner !== '') counts.set(owner, (counts.get(owner) ?? 0) + 1);
  return new Map([...counts].sort(([a], [b]) => compareKeys(a, b)));
}

/** Code-unit order: unlike localeCompare it is the same on every node whatever its locale. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Checks a table that arrived from the network before anyone trusts it: shape, bounds, sizes.
 * Returns the first problem found, or undefined when the value is a well-formed PartitionTable.
 */
export function validateTable(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const { version, partitionCount, owners, backups } = value as Record<string, unknown>;
  if (!Number.isSafeInteger(version) || (version as number) < 0)
    return 'version must be a non-negative integer';
  if (!isPartitionCount(partitionCount)) return 'partitionCount must be an integer from 1 to 65536';
  if (!Array.isArray(owners) || owners.length !== partitionCount)
    return 'owners must have partitionCount entries';
  if (!Array.isArray(backups) || backups.length !== partitionCount) {
    return 'backups must have partitionCount entries';
  }
  for (let p = 0; p < partitionCount; p++) {
    const owner: unknown = owners[p];
    if (typeof owner !== 'string' || owner.length > MAX_MEMBER_KEY_LENGTH)
      return `owner of ${p} is not a key`;
    const problem = backupsProblem(backups[p], owner);
    if (problem !== undefined) return `backups of ${p}: ${problem}`;
  }
  return undefined;
}

function backupsProblem(backups: unknown, owner: string): string | undefined {
  if (!Array.isArray(backups)) return 'not an array';
  if (backups.length > MAX_BACKUP_COUNT) return `more than ${MAX_BACKUP_COUNT}`;
  if (owner === '' && backups.length > 0) return 'backups without an owner';
  const seen = new Set<string>([owner]);
  for (const backup of backups as unknown[]) {
    if (typeof backup !== 'string' || backup === '' || backup.length > MAX_MEMBER_KEY_LENGTH) {
      return 'not a member key';
    }
    if (seen.has(backup)) return `${JSON.stringify(backup)} repeats the owner or another backup`;
    seen.add(backup);
  }
  return undefined;
}
