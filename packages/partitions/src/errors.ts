import { DoyenError, InvalidConfigError } from '@doyen/core';

/** A partition count outside 1..MAX_PARTITION_COUNT, or not an integer. */
export class InvalidPartitionCountError extends InvalidConfigError {
  constructor(readonly partitionCount: number) {
    super(`partition count must be an integer from 1 to 65536, got ${partitionCount}`);
  }
}

/**
 * Two tables (or a table and the options) disagree on the partition count. The count is fixed for
 * the life of a cluster: changing it would remap every key, so it is refused rather than migrated.
 */
export class PartitionCountMismatchError extends InvalidConfigError {
  constructor(
    readonly expected: number,
    readonly actual: number,
  ) {
    super(`partition count is fixed: expected ${expected}, got ${actual}`);
  }
}

export class PartitionOutOfRangeError extends DoyenError {
  constructor(
    readonly partition: number,
    readonly partitionCount: number,
  ) {
    super(`partition ${partition} is outside 0..${partitionCount - 1}`, 'partition-out-of-range');
  }
}

/** A table handed to `allocate` that `validateTable` rejects. */
export class InvalidPartitionTableError extends DoyenError {
  constructor(readonly reason: string) {
    super(`invalid partition table: ${reason}`, 'invalid-partition-table');
  }
}
