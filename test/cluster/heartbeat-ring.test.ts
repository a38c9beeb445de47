import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HEARTBEAT_RING_CONFIG,
  HeartbeatRingConfigError,
  type HeartbeatRingOptions,
  heartbeatPeers,
  type RingMember,
  stableHash32,
  successionPartner,
} from '../../packages/cluster/src/failure-detector/heartbeat-ring.js';
import { nodeKey } from '../../packages/core/src/index.js';

const K = DEFAULT_HEARTBEAT_RING_CONFIG.monitoredByNrOfMembers;
/** Members monitored on each side of a node. */
const HALF = Math.ceil(K / 2);

function cluster(n: number, seed = 0): RingMember[] {
  return Array.from({ length: n }, (_, i) => ({
    address: `10.0.${i >> 8}.${i & 255}:2552`,
    uid: `${seed}-${(i * 2654435761) >>> 0}`,
  }));
}

const keys = (members: readonly RingMember[]): string[] => members.map(nodeKey);

/** Ring order computed independently of the implementation: by (hash, key). */
function ringOrder(members: readonly RingMember[]): string[] {
  return keys(members).sort((a, b) => stableHash32(a) - stableHash32(b) || (a < b ? -1 : 1));
}

/** targets and monitoredBy of every member, as key sets. */
function allPeers(members: readonly RingMember[], options?: HeartbeatRingOptions) {
  return new Map(
    members.map((m) => {
      const peers = heartbeatPeers(m, members, options);
      return [
        nodeKey(m),
        { targets: new Set(keys(peers.targets)), monitoredBy: new Set(keys(peers.monitoredBy)) },
      ];
    }),
  );
}

function shuffled<T>(items: readonly T[], randoms: readonly number[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor((randoms[i % randoms.length] ?? 0) * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

describe('stableHash32', () => {
  // Pinned: every node must place members identically, so the hash may never change. Values from an
  // independent implementation (FNV-1a 32 over UTF-8, then murmur3 fmix32).
  it.each([
    ['', 2872998923],
    ['a', 444641715],
    ['10.0.0.1:2552#u1', 3513349201],
    ['héllo#ü€😀', 4197785658],
  ])('hash(%j) = %d', (text, expected) => {
    expect(stableHash32(text)).toBe(expected);
  });
});

describe('heartbeatPeers: all-to-all', () => {
  it.each([1, 2, 3, 5, 10])('with %d members everyone monitors everyone', (n) => {
    const members = cluster(n);
    for (const self of members) {
      const { targets, monitoredBy } = heartbeatPeers(self, members, { unreachable: new Set(keys(members)) });
      const others = keys(members)
        .filter((k) => k !== nodeKey(self))
        .sort();
      expect(keys(targets).sort()).toEqual(others);
      expect(keys(monitoredBy).sort()).toEqual(others);
    }
  });

  it('honours a larger allToAllMax', () => {
    const members = cluster(30);
    const { targets } = heartbeatPeers(members[0]!, members, { config: { allToAllMax: 30 } });
    expect(targets).toHaveLength(29);
  });

  it('adds self when missing from the list and ignores duplicates', () => {
    const members = cluster(20);
    const self = members[3]!;
    const expected = heartbeatPeers(self, members);
    const withoutSelf = members.filter((m) => m !== self);
    const duplicated = [...members, ...members.map((m) => ({ ...m }))];
    expect(keys(heartbeatPeers(self, withoutSelf).targets)).toEqual(keys(expected.targets));
    expect(keys(heartbeatPeers(self, duplicated).targets)).toEqual(keys(expected.targets));
    expect(keys(heartbeatPeers(self, duplicated).monitoredBy)).toEqual(keys(expected.monitoredBy));
  });

  it('treats two incarnations at one address as two members', () => {
    const members = [...cluster(9), { address: '10.0.0.0:2552', uid: 'restarted' }];
    expect(heartbeatPeers(members[0]!, members).targets).toHaveLength(9);
  });
});

describe('heartbeatPeers: ring', () => {
  it.each([12, 50, 200])('with %d members: the nearest K/2 on each side of the ring', (n) => {
    const members = cluster(n);
    const order = ringOrder(members);
    for (const self of members) {
      const { targets, monitoredBy } = heartbeatPeers(self, members);
      const at = order.indexOf(nodeKey(self));
      const next = Array.from({ length: HALF }, (_, i) => order[(at + 1 + i) % n]);
      const previous = Array.from({ length: HALF }, (_, i) => order[(at - 1 - i + n) % n]);
      expect(keys(targets)).toEqual([...next, ...previous]);
      expect(keys(monitoredBy)).toEqual([...previous, ...next]);
    }
  });

  it.each([12, 50, 200])('with %d members each member is monitored by exactly K, its own targets', (n) => {
    const members = cluster(n, n);
    const peers = allPeers(members);
    const monitorCount = new Map<string, number>();
    for (const [x, { targets, monitoredBy }] of peers) {
      // symmetric: whoever I ping pings me, so nobody owes a reply
      expect([...targets].sort()).toEqual([...monitoredBy].sort());
      for (const y of targets) {
        monitorCount.set(y, (monitorCount.get(y) ?? 0) + 1);
        expect(peers.get(y)!.targets.has(x)).toBe(true);
      }
    }
    for (const [x, { monitoredBy }] of peers) {
      expect(monitorCount.get(x)).toBe(2 * HALF);
      expect(monitoredBy.size).toBe(2 * HALF);
    }
  });

  it('is all-to-all while K covers everyone else (11 members, K = 9 rounds up to 10)', () => {
    const members = cluster(11);
    const config = { allToAllMax: 10, monitoredByNrOfMembers: 9 };
    for (const self of members) expect(heartbeatPeers(self, members, { config }).targets).toHaveLength(10);
  });

  it('gives the same answer whatever the order of the member list', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 60 }),
        fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 1, maxLength: 60 }),
        fc.nat(),
        (n, randoms, pick) => {
          const members = cluster(n, pick);
          const self = members[pick % n]!;
          const a = heartbeatPeers(self, members);
          const b = heartbeatPeers(self, shuffled(members, randoms));
          expect(keys(b.targets)).toEqual(keys(a.targets));
          expect(keys(b.monitoredBy)).toEqual(keys(a.monitoredBy));
        },
      ),
    );
  });

  it.each([
    [4, 4],
    [3, 4], // odd K rounds up: two on each side
    [1, 2],
  ])('respects a configured K = %d (%d monitors each)', (k, monitors) => {
    const members = cluster(40);
    const peers = allPeers(members, { config: { monitoredByNrOfMembers: k, allToAllMax: 0 } });
    for (const { targets, monitoredBy } of peers.values()) {
      expect(targets.size).toBe(monitors);
      expect(monitoredBy.size).toBe(monitors);
    }
  });

  it.each([
    [{ allToAllMax: -1 }, 'allToAllMax'],
    [{ allToAllMax: 2.5 }, 'allToAllMax'],
    [{ monitoredByNrOfMembers: 0 }, 'monitoredByNrOfMembers'],
    [{ monitoredByNrOfMembers: Number.NaN }, 'monitoredByNrOfMembers'],
  ])('rejects %j with a typed error', (config, field) => {
    const members = cluster(3);
    const attempt = () => heartbeatPeers(members[0]!, members, { config });
    expect(attempt).toThrow(HeartbeatRingConfigError);
    expect(attempt).toThrow(new RegExp(`^invalid heartbeat ring config: ${field} must be`));
  });
});

describe('heartbeatPeers: unreachable members', () => {
  // After Akka's HeartbeatNodeRingSpec "pick specified number of nodes + unreachable as receivers":
  // aa..ff named in ring order, K = 3 (two on each side) and aa, dd, ee unreachable; worked by hand.
  it('walks both ways, taking unreachable members only while the side is short', () => {
    const members = cluster(6, 7);
    const order = ringOrder(members);
    const byKey = new Map(members.map((m) => [nodeKey(m), m]));
    const [aa, bb, cc, dd, ee, ff] = order.map((k) => byKey.get(k)!);
    const options = {
      unreachable: new Set(keys([aa!, dd!, ee!])),
      config: { monitoredByNrOfMembers: 3, allToAllMax: 0 },
    };
    const targets = (self: RingMember) => keys(heartbeatPeers(self, members, options).targets);
    expect(targets(aa!)).toEqual(keys([bb!, cc!, ff!, ee!])); // dd skipped (after ee, the side is full)
    expect(targets(bb!)).toEqual(keys([cc!, dd!, ff!, aa!])); // ee skipped
    expect(targets(cc!)).toEqual(keys([dd!, ee!, ff!, bb!, aa!]));
    expect(targets(dd!)).toEqual(keys([ee!, ff!, bb!, cc!])); // aa skipped
    expect(targets(ee!)).toEqual(keys([ff!, aa!, bb!, dd!, cc!]));
    expect(targets(ff!)).toEqual(keys([aa!, bb!, cc!, ee!, dd!]));
    // the reachable ones (bb, cc, ff) all monitor each other: no replies owed among them
    for (const [x, y] of [
      [bb!, cc!],
      [bb!, ff!],
      [cc!, ff!],
    ] as const) {
      expect(targets(x)).toContain(nodeKey(y));
      expect(targets(y)).toContain(nodeKey(x));
    }
  });

  it('keeps unreachable neighbours as targets and adds reachable ones until K/2 a side are reachable', () => {
    const members = cluster(30);
    const order = ringOrder(members);
    const self = members.find((m) => nodeKey(m) === order[0])!;
    const unreachable = new Set([order[1]!, order[2]!]);
    const { targets } = heartbeatPeers(self, members, { unreachable, config: { monitoredByNrOfMembers: 3 } });
    expect(keys(targets)).toEqual([...order.slice(1, 5), order[29], order[28]]);
  });

  it('monitors every reachable member when fewer than K are reachable', () => {
    const members = cluster(20);
    const self = members[0]!;
    const unreachable = new Set(keys(members.slice(1, 15)));
    const { targets } = heartbeatPeers(self, members, { unreachable });
    const reachableTargets = keys(targets).filter((k) => !unreachable.has(k));
    expect(reachableTargets.sort()).toEqual(keys(members.slice(15)).sort());
  });

  it('properties: K/2 neighbours a side kept, K reachable monitored, reachable pairs mutual, monitoredBy the inverse', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 11, max: 50 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.boolean(), { minLength: 50, maxLength: 50 }),
        fc.nat(),
        (n, k, unreachableFlags, seed) => {
          const half = Math.ceil(k / 2);
          const members = cluster(n, seed);
          const unreachable = new Set(keys(members.filter((_, i) => unreachableFlags[i])));
          const options = { unreachable, config: { monitoredByNrOfMembers: k } };
          const peers = allPeers(members, options);
          const order = ringOrder(members);
          for (const [x, { targets, monitoredBy }] of peers) {
            const at = order.indexOf(x);
            const neighbours = Array.from({ length: half }, (_, i) => [
              order[(at + 1 + i) % n]!,
              order[(at - 1 - i + n) % n]!,
            ]).flat();
            const reachableOthers = order.filter((y) => y !== x && !unreachable.has(y)).length;
            const reachableTargets = [...targets].filter((y) => !unreachable.has(y));
            if (n - 1 > 2 * half) {
              for (const y of neighbours) expect(targets.has(y)).toBe(true);
              expect(reachableTargets).toHaveLength(Math.min(2 * half, reachableOthers));
              // Beyond the nearest K/2 on each side only reachable members are added.
              for (const y of targets) if (!neighbours.includes(y)) expect(unreachable.has(y)).toBe(false);
            }
            expect(targets.has(x)).toBe(false);
            expect(monitoredBy.size).toBeGreaterThanOrEqual(Math.min(2 * half, n - 1));
            for (const y of monitoredBy) expect(peers.get(y)!.targets.has(x)).toBe(true);
            for (const y of targets) {
              expect(peers.get(y)!.monitoredBy.has(x)).toBe(true);
              if (!unreachable.has(x) && !unreachable.has(y)) expect(peers.get(y)!.targets.has(x)).toBe(true);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('successionPartner: the coordinator and its successor heartbeat each other', () => {
  const aged = (n: number) =>
    cluster(n).map((m, i) => ({ ...m, age: n - i, status: i === n - 1 ? 'leaving' : 'up' }));

  it('pairs the two oldest up members, both ways, and nobody else', () => {
    const members = aged(50);
    // ages run 50..1 down the list; the last (age 1) is leaving, so the oldest up are ages 2 and 3
    const oldest = members[48]!;
    const next = members[47]!;
    expect(successionPartner(oldest, members)).toBe(next);
    expect(successionPartner(next, members)).toBe(oldest);
    const others = members.filter((m) => m !== oldest && m !== next);
    expect(others.map((m) => successionPartner(m, members)).filter(Boolean)).toEqual([]);
    expect(successionPartner(oldest, [oldest])).toBeUndefined();
  });

  it('is needed: on a ring of 50 the two are not each other’s ring neighbours', () => {
    // positive control for the test above and for the simulation: the ring alone would not pair them
    const members = aged(50);
    const targets = keys(heartbeatPeers(members[48]!, members).targets);
    expect(targets).not.toContain(nodeKey(members[47]!));
  });
});
