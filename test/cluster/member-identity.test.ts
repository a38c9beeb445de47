import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addressOfKey,
  type MemberStatus,
  nodeOf,
  nodeOfKey,
  oldestOf,
  SINGLETON_HOLDING,
} from '../../packages/cluster/src/index.js';
import { InvalidAddressError, nodeKey } from '../../packages/core/src/index.js';

/** The one way to name a member (`host:port#uid`) and to find the oldest. */
describe('member keys', () => {
  it('a member and its node address name the same incarnation, and the key reads back', () => {
    for (const member of [
      { address: '10.0.0.7:2552', uid: 'u1' },
      { address: '[fd00::7]:2552', uid: 'a-b_c' },
      { address: 'pod-0.doyen.default.svc:25520', uid: 'x' },
    ]) {
      const key = nodeKey(member);
      expect(key).toBe(`${member.address}#${member.uid}`);
      expect(nodeKey(nodeOf(member))).toBe(key);
      expect(nodeKey(nodeOf(member))).toBe(key);
      expect(nodeOfKey(key)).toEqual(nodeOf(member));
      expect(addressOfKey(key)).toBe(member.address);
    }
    expect(nodeOfKey('[fd00::7]:2552#u')).toEqual({ host: 'fd00::7', port: 2552, uid: 'u' });
  });

  it('round-trips any IPv4 or IPv6 node with any uid', () => {
    const host = fc.oneof(fc.ipV4(), fc.ipV6());
    const uid = fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/);
    fc.assert(
      fc.property(host, fc.integer({ min: 1, max: 65535 }), uid, (h, port, u) => {
        const node = { host: h, port, uid: u };
        expect(nodeOfKey(nodeKey(node))).toEqual(node);
      }),
    );
  });

  it('refuses what is not host:port#uid with a typed error', () => {
    for (const bad of ['10.0.0.1:2552', '10.0.0.1:2552#', '#u1', 'host#u1', '10.0.0.1:99999#u', '']) {
      expect(() => nodeOfKey(bad), bad).toThrow(InvalidAddressError);
    }
    // addressOfKey is lenient: a plain address is its own address
    expect(addressOfKey('10.0.0.1:2552')).toBe('10.0.0.1:2552');
  });
});

describe('oldestOf', () => {
  const m = (age: number, status: MemberStatus, roles: string[] = []) => ({ age, status, roles, id: age });

  it('is the lowest age among up members by default, whatever the order', () => {
    const members = [m(5, 'up'), m(2, 'joining'), m(3, 'up'), m(1, 'leaving'), m(0, 'down')];
    expect(oldestOf(members)?.id).toBe(3);
    expect(oldestOf([...members].reverse())?.id).toBe(3);
  });

  it('counts the statuses asked for: a leaving or exiting oldest still holds its singletons', () => {
    const members = [m(5, 'up'), m(3, 'up'), m(1, 'leaving'), m(0, 'removed')];
    expect(oldestOf(members, { statuses: SINGLETON_HOLDING })?.id).toBe(1);
    expect(oldestOf([m(4, 'up'), m(2, 'exiting')], { statuses: SINGLETON_HOLDING })?.id).toBe(2);
  });

  it('only members with the role, when one is given; none when nobody qualifies', () => {
    const members = [m(1, 'up', ['frontend']), m(2, 'up', ['backend']), m(3, 'up', ['backend'])];
    expect(oldestOf(members, { role: 'backend' })?.id).toBe(2);
    expect(oldestOf(members, { role: 'batch' })).toBeUndefined();
    expect(oldestOf([m(1, 'joining')])).toBeUndefined();
  });
});
