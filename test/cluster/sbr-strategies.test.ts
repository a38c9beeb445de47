import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  indirectlyConnected,
  isMinoritySide,
  keepMajority,
  keepOldest,
  resolve,
  resolveWithLease,
  type SbrInput,
  type SbrMember,
  type SbrView,
  type StrategyConfig,
  staticQuorum,
} from '../../packages/cluster/src/index.js';

/** n members 10.0.0.1.. with ages 1..n (member i is the i-th oldest). */
function members(n: number, roles: (i: number) => string[] = () => []): SbrMember[] {
  return Array.from({ length: n }, (_, i) => ({
    key: `10.0.0.${i + 1}:2552#u${i + 1}`,
    address: `10.0.0.${i + 1}:2552`,
    age: i + 1,
    status: 'up' as const,
    roles: roles(i + 1),
  }));
}

/** The view of the side holding `ours` (1-based member numbers); everyone else is unreachable. */
function sideView(all: SbrMember[], ours: number[]): SbrView {
  return { members: all, unreachable: new Set(all.filter((m) => !ours.includes(m.age)).map((m) => m.key)) };
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('split-brain resolver strategies: the seed examples', () => {
  it('static-quorum: 9 nodes, quorum 5, split 4 | 5: the five survive, the four down themselves', () => {
    const all = members(9);
    expect(staticQuorum(sideView(all, range(1, 4)), 5).decision).toBe('down-reachable');
    expect(staticQuorum(sideView(all, range(5, 9)), 5).decision).toBe('down-unreachable');
  });

  it('static-quorum: a cluster grown past 2·quorum − 1 downs everything when a decision is needed', () => {
    const all = members(10);
    expect(staticQuorum(sideView(all, range(1, 6)), 5).decision).toBe('down-all');
    expect(staticQuorum(sideView(all, range(7, 10)), 5).decision).toBe('down-all');
  });

  it('keep-oldest: 2 vs 98, the two with the oldest survive and the 98 go', () => {
    const all = members(100);
    expect(keepOldest(sideView(all, [1, 2]), false).decision).toBe('down-unreachable');
    expect(keepOldest(sideView(all, range(3, 100)), false).decision).toBe('down-reachable');
  });

  it('keep-oldest with down-if-alone: an oldest cut off from everyone downs itself, the rest live', () => {
    const all = members(5);
    expect(keepOldest(sideView(all, [1]), true).decision).toBe('down-reachable');
    expect(keepOldest(sideView(all, range(2, 5)), true).decision).toBe('down-unreachable');
    // without down-if-alone the lone oldest wins
    expect(keepOldest(sideView(all, [1]), false).decision).toBe('down-unreachable');
    expect(keepOldest(sideView(all, range(2, 5)), false).decision).toBe('down-reachable');
  });

  it('keep-majority: equal halves keep the side with the lowest address', () => {
    const all = members(4);
    expect(keepMajority(sideView(all, [1, 4])).decision).toBe('down-unreachable');
    expect(keepMajority(sideView(all, [2, 3])).decision).toBe('down-reachable');
  });

  it('keep-majority: a three-way split with no majority downs every part', () => {
    const all = members(9);
    for (const side of [range(1, 3), range(4, 6), range(7, 9)]) {
      expect(keepMajority(sideView(all, side)).decision).toBe('down-reachable');
    }
  });

  it('keep-majority counts only members with the role', () => {
    const all = members(7, (i) => (i <= 3 ? ['data'] : []));
    // side 1..2 holds two of three data nodes: it survives although it has fewer members
    expect(keepMajority(sideView(all, [1, 2]), 'data').decision).toBe('down-unreachable');
    expect(keepMajority(sideView(all, range(3, 7)), 'data').decision).toBe('down-reachable');
  });

  it('keep-majority: Joining members count on the other side but not on ours (the seed edge case)', () => {
    const all = members(5).map((m) => (m.age === 5 ? { ...m, status: 'joining' as const } : m));
    // side {1,2} sees {3,4,5}: the joining 5 may be Up over there: 2 < 3, yield
    expect(keepMajority(sideView(all, [1, 2])).decision).toBe('down-reachable');
    // side {3,4,5}: its own joining 5 does not count: 2 vs 2, lowest address 10.0.0.1 is over there
    expect(keepMajority(sideView(all, [3, 4, 5])).decision).toBe('down-reachable');
  });

  it('down-all downs both sides', () => {
    const all = members(4);
    const r = resolve(
      { strategy: 'down-all' },
      {
        members: all,
        observations: { [all[3]!.key]: [all[0]!.key] },
        selfKey: all[0]!.key,
        ownReachable: new Set(),
      },
    );
    expect(r.decision).toBe('down-all');
    expect(r.down).toHaveLength(4);
  });
});

describe('indirectly connected members', () => {
  const all = members(5);
  const k = (i: number) => all[i - 1]!.key;
  /** keep-majority as member 1 decides, reaching `ownReachable` itself. */
  const asFirst = (observations: SbrInput['observations'], ownReachable = [2, 3, 4, 5]) =>
    resolve(
      { strategy: 'keep-majority' },
      { members: all, observations, selfKey: k(1), ownReachable: new Set(ownReachable.map(k)) },
    );

  it('one broken link between two members that both see the rest: both are downed, nobody else', () => {
    const observations = { [k(4)]: [k(5)], [k(5)]: [k(4)] };
    expect(indirectlyConnected(observations, k(1), new Set([k(2), k(3), k(4), k(5)]))).toEqual(
      new Set([k(4), k(5)]),
    );
    const r = asFirst(observations);
    expect(r.decision).toBe('down-indirectly-connected');
    expect([...r.down].sort()).toEqual([k(4), k(5)].sort());
  });

  it('a member unreachable for one observer but reachable for us: the observer is indirectly connected (its word against ours)', () => {
    const observations = { [k(5)]: [k(3)] };
    const r = asFirst(observations);
    expect([...r.indirectlyConnected].sort()).toEqual([k(3)]);
    expect(r.unreachable).toEqual([]);
  });

  it('indirectly connected members first, then the strategy decides the clean rest', () => {
    // 2 is cleanly gone; 4 and 5 have a broken link between them
    const observations = { [k(2)]: [k(1), k(3)], [k(4)]: [k(5)], [k(5)]: [k(4)] };
    const r = asFirst(observations, [3, 4, 5]);
    expect(r.decision).toBe('down-unreachable');
    expect([...r.down].sort()).toEqual([k(2), k(4), k(5)].sort());
  });
});

/** Every clean partition of a converged membership into sides: at most one side survives. */
describe('property: at most one side survives any clean partition', () => {
  const strategies: StrategyConfig[] = [
    { strategy: 'keep-majority' },
    { strategy: 'keep-majority', role: 'r' },
    { strategy: 'static-quorum', quorumSize: 3 },
    { strategy: 'keep-oldest', downIfAlone: false },
    { strategy: 'keep-oldest', downIfAlone: true },
  ];
  it.each(strategies.map((s) => [JSON.stringify(s), s] as const))('%s', (_name, strategy) => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            sideOf: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: n, maxLength: n }),
            roles: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
            joining: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
          }),
        ),
        ({ n, sideOf, roles, joining }) => {
          const all = members(n, (i) => (roles[i - 1] ? ['r'] : [])).map((m, i) =>
            joining[i] && i > 0 ? { ...m, status: 'joining' as const } : m,
          );
          const sides = [...new Set(sideOf)];
          let survivors = 0;
          for (const side of sides) {
            const ours = all.filter((_, i) => sideOf[i] === side).map((m) => m.age);
            if (ours.length === 0) continue;
            const view = sideView(all, ours);
            const decision = resolve(strategy, {
              members: all,
              observations: Object.fromEntries(
                [...view.unreachable].map((u) => [u, [all[ours[0]! - 1]!.key]]),
              ),
              selfKey: all[ours[0]! - 1]!.key,
              ownReachable: new Set(all.filter((m) => ours.includes(m.age)).map((m) => m.key)),
            });
            if (sides.length === 1) continue;
            if (decision.decision === 'down-unreachable') survivors++;
          }
          return survivors <= 1;
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('lease-majority: only the side that acquires the lease survives, whatever the sizes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 9 }),
        fc.integer({ min: 1, max: 8 }),
        fc.boolean(),
        (n, cut, minorityFirst) => {
          fc.pre(cut < n);
          const all = members(n);
          let holder: string | undefined;
          const tryAcquire = (owner: string) => {
            if (holder === undefined) holder = owner;
            return holder === owner;
          };
          const sides = [range(1, cut), range(cut + 1, n)];
          // the minority waits before trying; model both orders of arrival at the lease
          const inputs = sides.map((ours) => {
            const view = sideView(all, ours);
            return {
              members: all,
              observations: Object.fromEntries(
                [...view.unreachable].map((u) => [u, [all[ours[0]! - 1]!.key]]),
              ),
              selfKey: all[ours[0]! - 1]!.key,
              ownReachable: new Set(all.filter((m) => ours.includes(m.age)).map((m) => m.key)),
            };
          });
          const order = inputs
            .map((input, i) => ({ input, i, minority: isMinoritySide(input) }))
            .sort((a, b) => (a.minority === b.minority ? 0 : a.minority === minorityFirst ? -1 : 1));
          const survivors = order.filter(
            ({ input, i }) => resolveWithLease(input, tryAcquire(`side${i}`)).decision === 'down-unreachable',
          );
          return survivors.length === 1;
        },
      ),
    );
  });
});
