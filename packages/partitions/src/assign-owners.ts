import type { PartitionTable } from './partition-table.js';
import { promoteBackups } from './promote.js';
import { ownerQuotas } from './quotas.js';

/** Partitions held per eligible key in `previous` (0 for newcomers). */
export function heldBy(previous: PartitionTable | undefined, keys: readonly string[]): Map<string, number> {
  const held = new Map<string, number>(keys.map((key) => [key, 0]));
  for (const owner of previous?.owners ?? []) {
    const count = held.get(owner);
    if (count !== undefined) held.set(owner, count + 1);
  }
  return held;
}

/**
 * Owners with minimal movement. Each eligible member keeps its previous partitions up to its
 * quota (the lowest-numbered ones, to be deterministic). The rest (orphans of departed members,
 * surpluses of over-quota members) go to members under quota: to a previous backup of the
 * partition for as many as possible (`promoteBackups`), the others in key order. Each freed
 * partition changes owner exactly once, so the number moved is P − Σ min(held, quota), the
 * optimum (see `optimalMoves`).
 */
export function assignOwners(
  previous: PartitionTable | undefined,
  keys: readonly string[],
  partitionCount: number,
): string[] {
  const owners = new Array<string>(partitionCount).fill('');
  if (keys.length === 0) return owners;
  const deficit = ownerQuotas(keys, heldBy(previous, keys), partitionCount);
  const freed: number[] = [];
  for (let p = 0; p < partitionCount; p++) {
    const owner = previous?.owners[p] ?? '';
    const room = deficit.get(owner) ?? 0;
    if (room > 0) {
      owners[p] = owner;
      deficit.set(owner, room - 1);
    } else freed.push(p);
  }
  const promoted = promoteBackups(freed, (p) => previous?.backups[p] ?? [], deficit);
  const take = (p: number, key: string) => {
    owners[p] = key;
    deficit.set(key, deficit.get(key)! - 1);
  };
  for (const [p, key] of promoted) take(p, key);
  const rest = freed.filter((p) => !promoted.has(p));
  let next = 0;
  for (const p of rest) {
    while (deficit.get(keys[next]!) === 0) next++;
    take(p, keys[next]!);
  }
  return owners;
}
