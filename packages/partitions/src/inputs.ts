import { InvalidConfigError } from '@doyen/core';
import { InvalidPartitionTableError, PartitionCountMismatchError } from './errors.js';
import { assertPartitionCount, MAX_BACKUP_COUNT, MAX_MEMBER_KEY_LENGTH } from './limits.js';
import { compareKeys, type PartitionTable, validateTable } from './partition-table.js';

/** A cluster member as the allocator sees it: a stable key (e.g. address + uid) and its roles. */
export interface PartitionMember {
  readonly key: string;
  readonly roles: readonly string[];
}

export interface AllocateOptions {
  /** Fixed for the life of the cluster (Hazelcast's default is 271). */
  readonly partitionCount: number;
  /** Backup owners per partition, 0..6; default 0. Fewer when there are not enough members. */
  readonly backupCount?: number;
  /** When set, only members with this role own or back up partitions. */
  readonly role?: string;
}

/** Validated inputs: eligible member keys sorted, so input order never changes the result. */
export interface AllocationInputs {
  readonly partitionCount: number;
  readonly backupCount: number;
  readonly keys: readonly string[];
}

export function resolveInputs(
  previous: PartitionTable | undefined,
  members: readonly PartitionMember[],
  options: AllocateOptions,
): AllocationInputs {
  const { partitionCount, backupCount = 0, role } = options;
  assertPartitionCount(partitionCount);
  if (!Number.isInteger(backupCount) || backupCount < 0 || backupCount > MAX_BACKUP_COUNT) {
    throw new InvalidConfigError(
      `backupCount must be an integer from 0 to ${MAX_BACKUP_COUNT}, got ${backupCount}`,
    );
  }
  if (previous !== undefined) {
    const problem = validateTable(previous);
    if (problem !== undefined) throw new InvalidPartitionTableError(problem);
    if (previous.partitionCount !== partitionCount) {
      throw new PartitionCountMismatchError(partitionCount, previous.partitionCount);
    }
  }
  return { partitionCount, backupCount, keys: eligibleKeys(members, role) };
}

/** Keys of members with the role (all when none is set), deduplicated and in code-unit order. */
function eligibleKeys(members: readonly PartitionMember[], role: string | undefined): string[] {
  const keys = new Set<string>();
  for (const { key, roles } of members) {
    if (typeof key !== 'string' || key === '' || key.length > MAX_MEMBER_KEY_LENGTH) {
      throw new InvalidConfigError(
        `member key must be a non-empty string of at most ${MAX_MEMBER_KEY_LENGTH} characters`,
      );
    }
    if (role === undefined || roles.includes(role)) keys.add(key);
  }
  return [...keys].sort(compareKeys);
}
