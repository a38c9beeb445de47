import { describe, expect, it } from 'vitest';
import {
  allocate,
  countsByOwner,
  MAX_PARTITION_COUNT,
  ownerOf,
  ownerOfKey,
  PartitionOutOfRangeError,
  type PartitionTable,
  partitionOf,
  partitionsOwnedBy,
  validateTable,
} from '../../packages/partitions/src/index.js';

const table: PartitionTable = {
  version: 3,
  partitionCount: 4,
  owners: ['b', 'a', '', 'b'],
  backups: [['a'], ['b'], [], ['a']],
};

describe('table helpers', () => {
  it('look up owners, treating unassigned as undefined', () => {
    expect([0, 1, 2, 3].map((p) => ownerOf(table, p))).toEqual(['b', 'a', undefined, 'b']);
    for (const bad of [-1, 4, 1.5]) expect(() => ownerOf(table, bad)).toThrow(PartitionOutOfRangeError);
    expect(ownerOfKey(table, 'user-42')).toBe(ownerOf(table, partitionOf('user-42', 4)));
  });

  it('list and count partitions per owner', () => {
    expect(partitionsOwnedBy(table, 'b')).toEqual([0, 3]);
    expect(partitionsOwnedBy(table, 'zz')).toEqual([]);
    expect(partitionsOwnedBy(table, '')).toEqual([]);
    expect([...countsByOwner(table)]).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });
});

describe('validateTable', () => {
  it('accepts tables from allocate', () => {
    expect(validateTable(table)).toBeUndefined();
    const big = allocate(
      undefined,
      [
        { key: 'x', roles: [] },
        { key: 'y', roles: [] },
      ],
      {
        partitionCount: MAX_PARTITION_COUNT,
        backupCount: 1,
      },
    );
    expect(validateTable(big)).toBeUndefined();
    expect(validateTable(structuredClone(big))).toBeUndefined();
  });

  it.each([
    ['null', null],
    ['a string', 'table'],
    ['a negative version', { ...table, version: -1 }],
    ['a fractional version', { ...table, version: 1.5 }],
    ['zero partitions', { ...table, partitionCount: 0, owners: [], backups: [] }],
    ['too many partitions', { ...table, partitionCount: MAX_PARTITION_COUNT + 1 }],
    ['owners of the wrong length', { ...table, owners: ['a'] }],
    ['a non-string owner', { ...table, owners: ['a', 'b', 3, 'b'] }],
    ['an over-long owner key', { ...table, owners: ['a'.repeat(2000), 'a', '', 'b'] }],
    ['backups of the wrong length', { ...table, backups: [] }],
    ['a non-array backup list', { ...table, backups: [['a'], 'b', [], ['a']] }],
    ['a backup equal to the owner', { ...table, backups: [['b'], ['b'], [], ['a']] }],
    ['a repeated backup', { ...table, backups: [['a', 'a'], ['b'], [], ['a']] }],
    ['an empty backup key', { ...table, backups: [[''], ['b'], [], ['a']] }],
    ['backups of an unassigned partition', { ...table, backups: [['a'], ['b'], ['a'], ['a']] }],
    ['more than 6 backups', { ...table, backups: [['1', '2', '3', '4', '5', '6', '7'], ['b'], [], ['a']] }],
  ])('rejects %s', (_, value) => {
    expect(validateTable(value)).toEqual(expect.any(String));
  });
});
