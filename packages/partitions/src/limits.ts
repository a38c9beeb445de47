import { InvalidPartitionCountError } from './errors.js';

/** Upper bound on partitions: keeps tables from the network small enough to validate and ship. */
export const MAX_PARTITION_COUNT = 65_536;

/** Hazelcast's cap too: more synchronous copies than this buys nothing but write latency. */
export const MAX_BACKUP_COUNT = 6;

/** Member keys are addresses plus a uid; anything longer is garbage or an attack. */
export const MAX_MEMBER_KEY_LENGTH = 1024;

export function isPartitionCount(count: unknown): count is number {
  return Number.isInteger(count) && (count as number) >= 1 && (count as number) <= MAX_PARTITION_COUNT;
}

export function assertPartitionCount(count: number): void {
  if (!isPartitionCount(count)) throw new InvalidPartitionCountError(count);
}
