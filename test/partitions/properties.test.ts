import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allocate,
  movedBackups,
  movedPartitions,
  optimalMoves,
  type PartitionMember,
  type PartitionTable,
  partitionOf,
  validateTable,
} from '../../packages/partitions/src/index.js';
import { optimalBackupMoves } from './min-cost-backups.js';
import { expectWellFormed, memberKey, P } from './support.js';

/** A cluster's life: a start set, then steps that each add or remove members (or flip roles). */
const memberArb = fc.record({ id: fc.integer({ min: 0, max: 11 }), data: fc.boolean() });
const clusterArb = fc.array(fc.uniqueArray(memberArb, { selector: (m) => m.id, maxLength: 12 }), {
  minLength: 1,
  maxLength: 8,
});
const toMembers = (step: readonly { id: number; data: boolean }[]): PartitionMember[] =>
  step.map(({ id, data }) => ({ key: memberKey(id), roles: data ? ['data'] : [] }));

/** Single joins and leaves: toggles member `id` in or out. */
const togglesArb = fc.array(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 12 });

function eligible(members: readonly PartitionMember[], role: string | undefined): string[] {
  return [
    ...new Set(members.filter((m) => role === undefined || m.roles.includes(role)).map((m) => m.key)),
  ].sort();
}

describe('allocate properties', () => {
  it('stays balanced, moves exactly the optimum and bumps the version over any membership changes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 3 }),
        fc.option(fc.constant('data'), { nil: undefined }),
        clusterArb,
        (partitionCount, backupCount, role, steps) => {
          const options = { partitionCount, backupCount, role };
          let table: PartitionTable | undefined;
          for (const step of steps) {
            const members = toMembers(step);
            const next = allocate(table, members, options);
            expect(expectWellFormed(next, eligible(members, role), backupCount)).toEqual([]);
            expect(validateTable(next)).toBeUndefined();
            expect(movedPartitions(table, next).length).toBe(optimalMoves(table, members, options));
            expect(next.version).toBe((table?.version ?? 0) + 1);
            expect(allocate(table, [...members].reverse(), options)).toEqual(next);
            table = next;
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('moves exactly the optimum of owners and of backups on joins and leaves (P = 271)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 8 }),
        togglesArb,
        (b, start, toggles) => {
          const options = { partitionCount: P, backupCount: b };
          let ids = Array.from({ length: start }, (_, i) => i);
          let table = allocate(undefined, toMembers(ids.map((id) => ({ id, data: true }))), options);
          for (const id of toggles) {
            ids = ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id];
            const members = toMembers(ids.map((x) => ({ id: x, data: true })));
            const next = allocate(table, members, options);
            const keys = eligible(members, undefined);
            expect(expectWellFormed(next, keys, b)).toEqual([]);
            expect(movedPartitions(table, next).length).toBe(optimalMoves(table, members, options));
            expect(movedBackups(table, next)).toBe(optimalBackupMoves(table, next.owners, keys, b));
            table = next;
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('moves the fewest backups for arbitrary changes on small tables', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 6 }),
        clusterArb,
        (count, b, steps) => {
          const options = { partitionCount: count, backupCount: b };
          let table: PartitionTable | undefined;
          for (const step of steps) {
            const members = toMembers(step);
            const next = allocate(table, members, options);
            expect(movedBackups(table, next)).toBe(
              optimalBackupMoves(table, next.owners, eligible(members, undefined), b),
            );
            table = next;
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('optimalMoves', () => {
  it('equals the best over every way of handing out the ⌈P/N⌉ quotas (brute force)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 60 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 6 }),
        (count, ownerIds, afterIds) => {
          const owners = Array.from({ length: count }, (_, p) => memberKey(ownerIds[p % ownerIds.length]!));
          const before: PartitionTable = {
            version: 1,
            partitionCount: count,
            owners,
            backups: owners.map(() => []),
          };
          const after = toMembers(afterIds.map((id) => ({ id, data: true })));
          const keys = eligible(after, undefined);
          const held = keys.map((key) => owners.filter((o) => o === key).length);
          const floor = Math.floor(count / keys.length);
          const extras = count % keys.length;
          let bestKept = 0;
          for (let mask = 0; mask < 1 << keys.length; mask++) {
            if (popcount(mask) !== extras) continue;
            const kept = held.reduce((sum, h, i) => sum + Math.min(h, floor + ((mask >> i) & 1)), 0);
            bestKept = Math.max(bestKept, kept);
          }
          expect(optimalMoves(before, after, { partitionCount: count })).toBe(count - bestKept);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('partitionOf properties', () => {
  it('agrees for any string and its UTF-8 bytes, and stays in range', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 2000 }),
        fc.integer({ min: 1, max: 65_536 }),
        (key, count) => {
          const p = partitionOf(key, count);
          expect(p).toBe(partitionOf(new TextEncoder().encode(key), count));
          expect(p >= 0 && p < count && Number.isInteger(p)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

function popcount(n: number): number {
  let bits = 0;
  for (let x = n; x > 0; x >>= 1) bits += x & 1;
  return bits;
}
