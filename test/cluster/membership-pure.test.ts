import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addJoiner,
  coordinatorOf,
  diffMemberships,
  downMembers,
  formCluster,
  removeMembers,
  setStatus,
  setUnreachable,
} from '../../packages/cluster/src/index.js';
import { nodeKey } from '../../packages/core/src/index.js';
import { grown, key, node } from '../support/member-fixtures.js';

describe('membership (pure)', () => {
  it('forms with age 1 and hands out ages from a counter that never goes back', () => {
    const m = grown(3);
    expect(m.members.map((x) => [x.name, x.age])).toEqual([
      ['n1', 1],
      ['n2', 2],
      ['n3', 3],
    ]);
    const afterDown = downMembers(m, [key(3)]);
    const rejoined = addJoiner(afterDown, { ...node(3), uid: 'again' }).membership;
    expect(rejoined.members.find((x) => x.name === 'n3')!.age).toBe(4);
    expect(rejoined.failed).toEqual([]);
  });

  it('the coordinator is the up member with the lowest age', () => {
    let m = grown(3);
    expect(coordinatorOf(m)?.name).toBe('n1');
    m = setStatus(m, [key(1)], 'leaving');
    expect(coordinatorOf(m)?.name).toBe('n2');
    m = downMembers(m, [key(2)]);
    expect(coordinatorOf(m)?.name).toBe('n3');
  });

  it('a new incarnation at a known address replaces the old one', () => {
    const m = grown(3);
    const { membership, replaced } = addJoiner(m, { ...node(2), uid: 'new' });
    expect(replaced?.uid).toBe('u2');
    expect(membership.members.filter((x) => x.address === node(2).address).map((x) => x.uid)).toEqual([
      'new',
    ]);
  });

  it('every change bumps the version once; no-ops do not', () => {
    const m = grown(2);
    expect(setStatus(m, [key(1)], 'up')).toBe(m);
    expect(setUnreachable(m, [])).toBe(m);
    expect(removeMembers(m, ['nobody#x'])).toBe(m);
    expect(setUnreachable(m, [key(2)]).version).toBe(m.version + 1);
  });

  it('ages are unique and versions only grow, whatever the sequence of changes', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('join' as const), n: fc.integer({ min: 1, max: 8 }), uid: fc.nat(3) }),
      fc.record({ kind: fc.constant('down' as const), n: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('leave' as const), n: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('unreachable' as const), n: fc.integer({ min: 1, max: 8 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        let m = formCluster(node(1));
        const seenAges = new Set([1]);
        for (const o of ops) {
          const before = m;
          const target = m.members.find((x) => x.address === node(o.n).address);
          if (o.kind === 'join') {
            const r = addJoiner(m, { ...node(o.n), uid: `u${o.n}-${o.uid}` });
            if (target && target.uid === `u${o.n}-${o.uid}`) continue;
            m = r.membership;
            const age = m.members.find((x) => x.address === node(o.n).address)!.age;
            if (seenAges.has(age)) return false;
            seenAges.add(age);
          } else if (target && o.kind === 'down') m = downMembers(m, [nodeKey(target)]);
          else if (target && o.kind === 'leave') m = removeMembers(m, [nodeKey(target)]);
          else if (target && o.kind === 'unreachable')
            m = setUnreachable(m, [...m.unreachable, nodeKey(target)]);
          if (m.version < before.version) return false;
          if (new Set(m.members.map((x) => x.age)).size !== m.members.length) return false;
        }
        return true;
      }),
    );
  });
});

describe('cluster events from membership changes', () => {
  it('names joins, ups, unreachability, downing, removal and coordinator changes', () => {
    const m3 = grown(3);
    expect(diffMemberships(undefined, formCluster(node(1))).map((e) => e.type)).toEqual([
      'member.joined',
      'member.up',
      'coordinator.changed',
    ]);
    const joined = addJoiner(m3, node(4)).membership;
    expect(diffMemberships(m3, joined).map((e) => e.type)).toEqual(['member.joined']);
    const unreachable = setUnreachable(m3, [key(1)]);
    expect(diffMemberships(m3, unreachable).map((e) => e.type)).toEqual(['member.unreachable']);
    const downed = downMembers(unreachable, [key(1)]);
    expect(diffMemberships(unreachable, downed).map((e) => e.type)).toEqual([
      'member.downed',
      'member.removed',
      'coordinator.changed',
    ]);
    const back = setUnreachable(setUnreachable(m3, [key(2)]), []);
    expect(diffMemberships(setUnreachable(m3, [key(2)]), back).map((e) => e.type)).toEqual([
      'member.reachable',
    ]);
    const leaving = setStatus(m3, [key(3)], 'leaving');
    expect(diffMemberships(m3, leaving).map((e) => e.type)).toEqual(['member.leaving']);
    const gone = removeMembers(setStatus(leaving, [key(3)], 'exiting'), [key(3)]);
    expect(diffMemberships(setStatus(leaving, [key(3)], 'exiting'), gone)).toMatchObject([
      { type: 'member.removed', previousStatus: 'exiting' },
    ]);
  });
});
