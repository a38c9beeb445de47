import { describe, expect, it } from 'vitest';
import {
  allocate,
  movedBackups,
  type PartitionTable,
  partitionsOwnedBy,
} from '../../packages/partitions/src/index.js';
import { optimalBackupMoves } from './min-cost-backups.js';
import {
  backupCounts,
  backupLowerBound,
  expectWellFormed,
  memberKey,
  members,
  P,
  range,
  spreadOf,
} from './support.js';

const keysOf = (ids: readonly number[]) => members(ids).map((m) => m.key);

describe('backups', () => {
  it.each(range(12, 1))('are distinct, never the owner and balanced with %i members', (n) => {
    for (const backupCount of [0, 1, 2, 3, 6]) {
      const table = allocate(undefined, members(range(n)), { partitionCount: P, backupCount });
      expect(expectWellFormed(table, keysOf(range(n)), backupCount)).toEqual([]);
    }
  });

  it('are as many as the members allow when there are few members', () => {
    const two = allocate(undefined, members([0, 1]), { partitionCount: P, backupCount: 3 });
    expect(two.backups.every((row, p) => row.length === 1 && row[0] !== two.owners[p])).toBe(true);
    const one = allocate(undefined, members([0]), { partitionCount: P, backupCount: 3 });
    expect(one.backups.every((row) => row.length === 0)).toBe(true);
  });

  it('fill every member when each must hold every partition (b = N - 1)', () => {
    // Members owning ⌈P/N⌉ must get the ⌊⌋ backup quota: owned + backups = P for everyone.
    const table = allocate(undefined, members(range(4)), { partitionCount: P, backupCount: 3 });
    expect(expectWellFormed(table, keysOf(range(4)), 3)).toEqual([]);
    for (const key of keysOf(range(4))) {
      const held =
        table.owners.filter((o) => o === key).length + table.backups.filter((r) => r.includes(key)).length;
      expect(held).toBe(P);
    }
  });

  it.each([1, 2, 3])('move only the newcomer’s share on a join (%i backups)', (backupCount) => {
    for (let n = backupCount + 1; n <= 16; n++) {
      const before = allocate(undefined, members(range(n)), { partitionCount: P, backupCount });
      const after = allocate(before, members(range(n + 1)), { partitionCount: P, backupCount });
      const keys = keysOf(range(n + 1));
      expect(expectWellFormed(after, keys, backupCount)).toEqual([]);
      expect(movedBackups(before, after)).toBe(backupLowerBound(before, after, keys));
      expect(movedBackups(before, after)).toBe(optimalBackupMoves(before, after.owners, keys, backupCount));
      // Old members only drop backups; every new one goes to the newcomer.
      const newcomerShare = backupCounts(after, [memberKey(n)])[0]!;
      expect(movedBackups(before, after)).toBe(newcomerShare);
    }
  });

  it.each([1, 2, 3])('refill only invalidated backups on a leave (%i backups)', (backupCount) => {
    for (let n = backupCount + 2; n <= 16; n++) {
      const before = allocate(undefined, members(range(n)), { partitionCount: P, backupCount });
      for (const leaver of [0, n - 1]) {
        const ids = range(n).filter((id) => id !== leaver);
        const after = allocate(before, members(ids), { partitionCount: P, backupCount });
        expect(expectWellFormed(after, keysOf(ids), backupCount)).toEqual([]);
        // Slots lost: where the leaver was a backup, and where a backup became the owner.
        const lost = before.backups.reduce(
          (sum, row, p) => sum + row.filter((k) => k === memberKey(leaver) || k === after.owners[p]).length,
          0,
        );
        expect(movedBackups(before, after)).toBe(backupLowerBound(before, after, keysOf(ids)));
        expect(movedBackups(before, after)).toBe(
          optimalBackupMoves(before, after.owners, keysOf(ids), backupCount),
        );
        expect(movedBackups(before, after)).toBeLessThanOrEqual(lost);
      }
    }
  });

  it('spread one owner’s backups over all other members', () => {
    // So that when a member fails, its partitions are promoted on (and re-backed up by) many
    // members, not one. Not a hard guarantee of the flow, a property of its tie-breaking.
    for (const n of [3, 4, 8, 13, 20]) {
      for (const backupCount of [1, 2, 3]) {
        const table = allocate(undefined, members(range(n)), { partitionCount: P, backupCount });
        const keys = keysOf(range(n));
        for (const owner of keys) {
          const owned = partitionsOwnedBy(table, owner);
          const partners = keys
            .filter((key) => key !== owner)
            .map((key) => owned.filter((p) => table.backups[p]!.includes(key)).length);
          expect(
            spreadOf(partners),
            `${n} members, ${backupCount} backups, owner ${owner}`,
          ).toBeLessThanOrEqual(backupCount + 1);
        }
      }
    }
  });

  it('keep every backup when nothing changes', () => {
    const before = allocate(undefined, members(range(6)), { partitionCount: P, backupCount: 2 });
    const after = allocate(before, members(range(6)), { partitionCount: P, backupCount: 2 });
    expect(after.backups).toEqual(before.backups);
  });

  it('rebalance after backupCount changes', () => {
    let table: PartitionTable = allocate(undefined, members(range(5)), { partitionCount: P, backupCount: 1 });
    for (const backupCount of [3, 2, 0, 4, 1]) {
      table = allocate(table, members(range(5)), { partitionCount: P, backupCount });
      expect(expectWellFormed(table, keysOf(range(5)), backupCount)).toEqual([]);
      expect(spreadOf(backupCounts(table, keysOf(range(5))))).toBeLessThanOrEqual(1);
    }
  });

  it('stay feasible for tiny tables', () => {
    for (let partitionCount = 1; partitionCount <= 8; partitionCount++) {
      for (let n = 1; n <= 8; n++) {
        for (let backupCount = 0; backupCount <= 6; backupCount++) {
          const table = allocate(undefined, members(range(n)), { partitionCount, backupCount });
          expect(expectWellFormed(table, keysOf(range(n)), backupCount)).toEqual([]);
        }
      }
    }
  });
});
