import { describe, expect, it } from 'vitest';
import { IN_FLIGHT_SLACK_MS } from '../../bench/lib/chaos-sharding-checker.js';
import {
  type ChaosFault,
  chaosPlan,
  describeChaosFault,
  MIN_CHECKED_QUIET_MS,
} from '../../bench/lib/chaos-sharding-schedule.js';

/**
 * The sharding chaos runner's plan (pure: a seed in, faults out). Session 38 made pauses and cuts
 * last until the cluster decided them (plus a seeded hold) and the quiet periods start once every
 * partition is active again: the plan must still play every fault kind, keep a seed's faults as
 * they were, and leave every quiet period some load the checker does not excuse.
 */

const lengthOf = (f: ChaosFault) => ('length' in f ? f.length : undefined);

describe('the sharding chaos plan', () => {
  it('plays every fault kind over a series of seeds', () => {
    const kinds = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) for (const { fault } of chaosPlan(seed, 6)) kinds.add(fault.kind);
    expect([...kinds].sort()).toEqual(['kill', 'leave', 'one-way', 'partition', 'pause']);
  });

  it('holds every pause and cut until every side decided, then under a second; quiet periods keep checked load', () => {
    for (let seed = 1; seed <= 200; seed++)
      for (const { fault, quietMs } of chaosPlan(seed, 6)) {
        const length = lengthOf(fault);
        if (fault.kind === 'pause' || fault.kind === 'partition' || fault.kind === 'one-way') {
          expect(length).toHaveProperty('afterDownedMs');
          const hold = (length as { afterDownedMs: number }).afterDownedMs;
          expect(hold).toBeGreaterThanOrEqual(0);
          expect(hold).toBeLessThan(1_000);
          expect(describeChaosFault(fault)).toContain('until every side decided');
        }
        // past the next fault's in-flight slack (whose sends the checker excuses), load is checked
        expect(quietMs).toBeGreaterThanOrEqual(IN_FLIGHT_SLACK_MS + MIN_CHECKED_QUIET_MS);
        expect(quietMs).toBeLessThan(IN_FLIGHT_SLACK_MS + MIN_CHECKED_QUIET_MS + 500);
      }
  });

  it("keeps a seed's faults: seed 29 plays the kinds, nodes and kill time it played in session 37", () => {
    const plan = chaosPlan(29, 6).map(({ fault }) => describeChaosFault(fault).replace(/ until.*/, ''));
    expect(plan).toEqual([
      'one-way: n5 -> n1+n2+n3+n4 dropped',
      'one-way: n2 -> n1+n3+n4+n5 dropped',
      'kill -9 n3 (down 2.2 s, then a new process)',
      'one-way: n5 -> n1+n2+n3+n4 dropped',
      'one-way: n1+n2+n3+n5 -> n4 dropped',
      'SIGSTOP n2',
    ]);
  });

  it('a fixed length stays fixed (the positive control cuts its owner off for a set time)', () => {
    const cut: ChaosFault = { kind: 'partition', side: [2], length: { ms: 15_000 } };
    expect(describeChaosFault(cut)).toBe('partition n3 | rest for 15.0 s');
  });
});
