import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import {
  allocate,
  InvalidPartitionCountError,
  InvalidPartitionTableError,
  movedPartitions,
  optimalMoves,
  PartitionCountMismatchError,
  partitionsOwnedBy,
} from '../../packages/partitions/src/index.js';
import { expectWellFormed, memberKey, members, ownerCounts, P, range, spreadOf } from './support.js';

const options = { partitionCount: P };

describe('allocate: balance', () => {
  it.each(range(20, 1))('gives each of %i members ⌊P/N⌋ or ⌈P/N⌉ partitions', (n) => {
    const all = members(range(n));
    const table = allocate(undefined, all, options);
    const counts = ownerCounts(
      table,
      all.map((m) => m.key),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(P);
    for (const c of counts) expect([Math.floor(P / n), Math.ceil(P / n)]).toContain(c);
    expect(counts.filter((c) => c === Math.ceil(P / n)).length).toBe(P % n || n);
    expect(table).toMatchObject({ version: 1, partitionCount: P });
  });

  it('leaves every partition unassigned without members', () => {
    const table = allocate(undefined, [], options);
    expect(table.owners).toEqual(new Array(P).fill(''));
    expect(table.backups.every((row) => row.length === 0)).toBe(true);
    const later = allocate(allocate(undefined, members([1, 2]), options), [], options);
    expect(later.owners.every((owner) => owner === '')).toBe(true);
    expect(later.version).toBe(2);
  });

  it('handles more members than partitions', () => {
    const table = allocate(undefined, members(range(10)), { partitionCount: 3, backupCount: 2 });
    expect(new Set(table.owners).size).toBe(3);
    expect(
      expectWellFormed(
        table,
        members(range(10)).map((m) => m.key),
        2,
      ),
    ).toEqual([]);
  });
});

describe('allocate: determinism', () => {
  it('does not depend on member order, duplicates or role order', () => {
    const ids = range(9);
    const base = allocate(undefined, members(ids), { ...options, backupCount: 2 });
    const shuffled = [...members(ids)].reverse();
    shuffled.splice(3, 0, { key: memberKey(4), roles: [] }); // a duplicate
    expect(allocate(undefined, shuffled, { ...options, backupCount: 2 })).toEqual(base);
    const next = members(range(10));
    expect(allocate(base, next, { ...options, backupCount: 2 })).toEqual(
      allocate(base, [...next].reverse(), { ...options, backupCount: 2 }),
    );
  });

  it('orders keys by code unit, not by locale', () => {
    const keys = ['b', 'B', 'a', 'ä', 'Z'];
    const table = allocate(
      undefined,
      keys.map((key) => ({ key, roles: [] })),
      { partitionCount: 5 },
    );
    // 5 partitions over 5 members, nothing held before: filled in code-unit key order.
    expect(table.owners).toEqual(['B', 'Z', 'a', 'b', 'ä']);
  });

  it('returns a new table and never mutates its inputs', () => {
    const before = allocate(undefined, members(range(4)), { ...options, backupCount: 1 });
    const snapshot = structuredClone(before);
    const input = members(range(6));
    const inputSnapshot = structuredClone(input);
    const after = allocate(before, input, { ...options, backupCount: 1 });
    expect(after).not.toBe(before);
    expect(before).toEqual(snapshot);
    expect(input).toEqual(inputSnapshot);
    expect(after.version).toBe(before.version + 1);
  });
});

describe('allocate: minimal movement', () => {
  it.each(range(19, 1))('moves exactly the optimum when a member joins %i others', (n) => {
    const before = allocate(undefined, members(range(n)), options);
    const after = allocate(before, members(range(n + 1)), options);
    const moved = movedPartitions(before, after);
    // The newcomer gets ⌈P/(n+1)⌉ only when no old member can take the extra instead.
    const q = Math.floor(P / (n + 1));
    const extras = P % (n + 1);
    const oldWithMore = ownerCounts(
      before,
      members(range(n)).map((m) => m.key),
    ).filter((c) => c > q).length;
    const newcomerQuota = oldWithMore >= extras ? q : q + 1;
    expect(moved.length).toBe(newcomerQuota);
    expect(optimalMoves(before, members(range(n + 1)), options)).toBe(newcomerQuota);
    expect(partitionsOwnedBy(after, memberKey(n))).toEqual(moved);
  });

  it.each(range(19, 2))('moves exactly the leaver’s partitions when one of %i leaves', (n) => {
    const before = allocate(undefined, members(range(n)), options);
    for (const leaver of [0, Math.floor(n / 2), n - 1]) {
      const rest = members(range(n).filter((id) => id !== leaver));
      const after = allocate(before, rest, options);
      const moved = movedPartitions(before, after);
      expect(moved).toEqual(partitionsOwnedBy(before, memberKey(leaver)));
      expect(optimalMoves(before, rest, options)).toBe(moved.length);
      expect(
        spreadOf(
          ownerCounts(
            after,
            rest.map((m) => m.key),
          ),
        ),
      ).toBeLessThanOrEqual(1);
    }
  });

  it('moves nothing when the members do not change', () => {
    const before = allocate(undefined, members(range(7)), { ...options, backupCount: 2 });
    const after = allocate(before, members(range(7)), { ...options, backupCount: 2 });
    expect(after).toEqual({ ...before, version: 2 });
  });

  it.each([
    [5, 2],
    [5, 4],
    [10, 2],
  ])('promotes a backup for every partition of a leaver (%i members, %i backups)', (n, backupCount) => {
    const before = allocate(undefined, members(range(n)), { ...options, backupCount });
    const after = allocate(before, members(range(n - 1)), { ...options, backupCount });
    for (const p of partitionsOwnedBy(before, memberKey(n - 1))) {
      expect(before.backups[p]).toContain(after.owners[p]);
    }
  });

  it('promotes as many backups as the quotas allow', () => {
    // With one backup each orphan has one candidate, so the best possible is, per survivor,
    // min(orphans it backs up, partitions it may still take).
    const before = allocate(undefined, members(range(8)), { ...options, backupCount: 1 });
    const rest = members(range(7));
    const after = allocate(before, rest, { ...options, backupCount: 1 });
    const orphans = partitionsOwnedBy(before, memberKey(7));
    for (const { key } of rest) {
      const backs = orphans.filter((p) => before.backups[p]![0] === key).length;
      const room = partitionsOwnedBy(after, key).length - partitionsOwnedBy(before, key).length;
      const promoted = orphans.filter((p) => after.owners[p] === key && before.backups[p]![0] === key).length;
      expect(promoted).toBe(Math.min(backs, room));
    }
  });

  it('computes the optimum for arbitrary changes', () => {
    const before = allocate(undefined, members(range(6)), options);
    // Two leave and three join: orphans of the leavers plus what the survivors must hand over.
    const next = members([0, 1, 2, 3, 6, 7, 8]);
    const after = allocate(before, next, options);
    expect(movedPartitions(before, after).length).toBe(optimalMoves(before, next, options));
    // 6 members held 46,45,45,45,45,45; 7 get 39 (a 39th-and-one extra to the 5 largest holders).
    const orphans = 45 + 45;
    const surplus = 46 - 39 + 3 * (45 - 39);
    expect(optimalMoves(before, next, options)).toBe(orphans + surplus);
  });
});

describe('allocate: roles', () => {
  it('gives partitions only to members with the role', () => {
    const all = [
      ...members([0, 1, 2], ['data']),
      ...members([3, 4], ['web']),
      ...members([5], ['web', 'data']),
    ];
    const table = allocate(undefined, all, { ...options, role: 'data', backupCount: 1 });
    const owners = new Set([...table.owners, ...table.backups.flat()]);
    expect([...owners].sort()).toEqual(['m00', 'm01', 'm02', 'm05']);
    expect(expectWellFormed(table, ['m00', 'm01', 'm02', 'm05'], 1)).toEqual([]);
  });

  it('takes partitions from a member that loses the role', () => {
    const before = allocate(undefined, members([0, 1, 2], ['data']), { ...options, role: 'data' });
    const after = allocate(before, [...members([0, 1], ['data']), ...members([2], [])], {
      ...options,
      role: 'data',
    });
    expect(partitionsOwnedBy(after, 'm02')).toEqual([]);
    expect(movedPartitions(before, after)).toEqual(partitionsOwnedBy(before, 'm02'));
  });

  it('leaves everything unassigned when nobody has the role', () => {
    const table = allocate(undefined, members([0, 1]), { ...options, role: 'data' });
    expect(table.owners.every((owner) => owner === '')).toBe(true);
  });
});

describe('allocate: bad input', () => {
  it('throws typed errors', () => {
    expect(() => allocate(undefined, [], { partitionCount: 0 })).toThrow(InvalidPartitionCountError);
    expect(() => allocate(undefined, [], { partitionCount: 65_537 })).toThrow(InvalidPartitionCountError);
    expect(() => allocate(undefined, [], { partitionCount: 5, backupCount: 7 })).toThrow(InvalidConfigError);
    expect(() => allocate(undefined, [], { partitionCount: 5, backupCount: -1 })).toThrow(InvalidConfigError);
    expect(() => allocate(undefined, [{ key: '', roles: [] }], options)).toThrow(InvalidConfigError);
    const table = allocate(undefined, members([0]), { partitionCount: 5 });
    expect(() => allocate(table, members([0]), { partitionCount: 6 })).toThrow(PartitionCountMismatchError);
    const broken = { ...table, owners: table.owners.slice(1) };
    expect(() => allocate(broken, members([0]), { partitionCount: 5 })).toThrow(InvalidPartitionTableError);
  });
});
