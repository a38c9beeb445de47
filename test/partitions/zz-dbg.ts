import {
  allocate,
  movedBackups,
  partitionsOwnedBy,
  countsByOwner,
} from '../../packages/partitions/src/index.js';
import { backupLowerBound, members, range, backupCounts } from './support.js';
import { optimalBackupMoves } from './min-cost-backups.js';
for (const b of [1, 2])
  for (const n of [4, 5, 8]) {
    const before = allocate(undefined, members(range(n)), { partitionCount: 271, backupCount: b });
    const ids = range(n - 1);
    const after = allocate(before, members(ids), { partitionCount: 271, backupCount: b });
    const keys = members(ids).map((m) => m.key);
    const orphans = partitionsOwnedBy(before, `m0${n - 1}`);
    const promoted = orphans.filter((p) => before.backups[p]!.includes(after.owners[p]!)).length;
    console.log(
      b,
      n,
      'moved',
      movedBackups(before, after),
      'lb',
      backupLowerBound(before, after, keys),
      'opt',
      optimalBackupMoves(before, after.owners, keys, b),
      'promoted',
      promoted,
      '/',
      orphans.length,
      'leaver backups by partner',
      JSON.stringify(keys.map((k) => orphans.filter((p) => before.backups[p]!.includes(k)).length)),
    );
  }
for (const [n, b] of [
  [4, 1],
  [8, 1],
  [8, 2],
  [20, 1],
  [20, 3],
]) {
  const t = allocate(undefined, members(range(n)), { partitionCount: 271, backupCount: b });
  const keys = members(range(n)).map((m) => m.key);
  let worst = 0;
  for (const o of keys) {
    const ps = partitionsOwnedBy(t, o);
    const c = keys.filter((k) => k !== o).map((k) => ps.filter((p) => t.backups[p]!.includes(k)).length);
    worst = Math.max(worst, Math.max(...c) - Math.min(...c));
  }
  const t2 = allocate(t, members(range(n + 1)), { partitionCount: 271, backupCount: b });
  const keys2 = members(range(n + 1)).map((m) => m.key);
  let worst2 = 0;
  for (const o of keys2) {
    const ps = partitionsOwnedBy(t2, o);
    const c = keys2.filter((k) => k !== o).map((k) => ps.filter((p) => t2.backups[p]!.includes(k)).length);
    worst2 = Math.max(worst2, Math.max(...c) - Math.min(...c));
  }
  console.log('spread', n, b, worst, 'after join', worst2);
}
