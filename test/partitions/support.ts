import type { Cluster } from '../../packages/cluster/src/index.js';
import type { ActorSystem } from '../../packages/core/src/index.js';
import {
  allocatorLogic,
  type PartitionMember,
  type PartitionService,
  type PartitionTable,
} from '../../packages/partitions/src/index.js';

export const P = 271; // Hazelcast's default partition count

/** Members `m00`, `m01`, ... (zero-padded so key order is numeric order). */
export function members(ids: readonly number[], roles: readonly string[] = []): PartitionMember[] {
  return ids.map((id) => ({ key: memberKey(id), roles }));
}

export function memberKey(id: number): string {
  return `m${String(id).padStart(2, '0')}`;
}

export const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Partitions owned per key, including eligible keys that own nothing. */
export function ownerCounts(table: PartitionTable, keys: readonly string[]): number[] {
  return keys.map((key) => table.owners.filter((owner) => owner === key).length);
}

export function backupCounts(table: PartitionTable, keys: readonly string[]): number[] {
  return keys.map((key) => table.backups.filter((row) => row.includes(key)).length);
}

export const spreadOf = (counts: readonly number[]) => Math.max(...counts) - Math.min(...counts);

/**
 * Fewest new backup assignments possible given the new owners and backup counts: member m can
 * keep at most the previous backups that are still valid (it is alive and not the new owner), so
 * it needs at least count(m) − valid(m) new ones.
 */
export function backupLowerBound(
  before: PartitionTable,
  after: PartitionTable,
  keys: readonly string[],
): number {
  let bound = 0;
  for (const key of keys) {
    const valid = before.backups.filter((row, p) => row.includes(key) && after.owners[p] !== key).length;
    const count = after.backups.filter((row) => row.includes(key)).length;
    bound += Math.max(0, count - valid);
  }
  return bound;
}

/** Every structural invariant a table from `allocate` must satisfy. */
export function expectWellFormed(
  table: PartitionTable,
  keys: readonly string[],
  backupCount: number,
): string[] {
  const problems: string[] = [];
  const eligible = new Set(keys);
  const b = Math.min(backupCount, Math.max(0, keys.length - 1));
  table.owners.forEach((owner, p) => {
    const row = table.backups[p]!;
    if (keys.length > 0 && !eligible.has(owner)) problems.push(`owner of ${p} not eligible: ${owner}`);
    if (keys.length === 0 && owner !== '') problems.push(`owner of ${p} without members`);
    if (row.length !== b) problems.push(`partition ${p} has ${row.length} backups, want ${b}`);
    if (new Set([owner, ...row]).size !== row.length + 1) problems.push(`partition ${p} repeats a member`);
    for (const key of row) if (!eligible.has(key)) problems.push(`backup of ${p} not eligible: ${key}`);
  });
  if (keys.length > 0 && spreadOf(ownerCounts(table, keys)) > 1) problems.push('owners unbalanced');
  if (keys.length > 0 && spreadOf(backupCounts(table, keys)) > 1) problems.push('backups unbalanced');
  return problems;
}

/**
 * The allocator's machine over stubs that record every I/O (a log, an adopt, a send) in `io`:
 * computing a transition must leave `io` empty; only the actions do I/O.
 */
export function ioRecordingAllocator(partitionCount: number) {
  const io: string[] = [];
  const system = {
    node: { host: '10.0.0.1', port: 2552, uid: 'u1' },
    logger: { info: () => io.push('log'), warn: () => io.push('log'), debug() {}, error() {} },
    remoteRef: () => ({ send: () => io.push('send') }),
  } as unknown as ActorSystem;
  const cluster = {
    self: { key: '10.0.0.1:2552#u1' },
    subscribeMembership: () => () => {},
  } as unknown as Cluster;
  const service = { table: () => undefined, adopt: () => io.push('adopt') } as unknown as PartitionService;
  const logic = allocatorLogic({ system, cluster, service, options: { partitionCount }, ackTimeoutMs: 100 });
  return { io, logic };
}
