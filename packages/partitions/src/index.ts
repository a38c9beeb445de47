export { allocate } from './allocate.js';
export {
  InvalidPartitionCountError,
  InvalidPartitionTableError,
  PartitionCountMismatchError,
  PartitionOutOfRangeError,
} from './errors.js';
export type { AllocateOptions, PartitionMember } from './inputs.js';
export { MAX_BACKUP_COUNT, MAX_MEMBER_KEY_LENGTH, MAX_PARTITION_COUNT } from './limits.js';
export { movedBackups, movedPartitions, optimalMoves } from './movement.js';
export { murmur3_32 } from './murmur3.js';
export { PARTITION_HASH_SEED, partitionOf } from './partition-of.js';
export {
  compareKeys,
  countsByOwner,
  ownerOf,
  ownerOfKey,
  type PartitionTable,
  partitionsOwnedBy,
  validateTable,
} from './partition-table.js';
export * from './service/allocator-machine.js';
export * from './service/partition-service.js';
export * from './service/retirement.js';
export * from './service/table-authority.js';
