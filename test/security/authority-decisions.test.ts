import { describe, expect, it } from 'vitest';
import { isOwnFinding, type Member, type Membership } from '../../packages/cluster/src/index.js';
import { type PartitionTable, tableRefusal } from '../../packages/partitions/src/index.js';

const member = (port: number, age: number, status: Member['status'] = 'up'): Member => ({
  address: `10.0.0.1:${port}`,
  uid: `u${port}`,
  name: `n${port}`,
  age,
  status,
  roles: [],
});
const key = (m: Member) => `${m.address}#${m.uid}`;
const view = (...members: Member[]): Membership => ({
  version: 7,
  nextAge: 10,
  members,
  failed: [],
  unreachable: [],
});
const table = (owners: string[], backups: string[][] = owners.map(() => [])): PartitionTable => ({
  version: 3,
  partitionCount: owners.length,
  owners,
  backups,
});

describe('tableRefusal: who may publish a partition table, naming whom', () => {
  const a = member(1, 1);
  const b = member(2, 2);
  const c = member(3, 3);
  const cases: [string, PartitionTable, string, Membership, string | undefined, string | undefined][] = [
    ['the host, naming members', table([key(b), key(c)]), key(a), view(a, b, c), key(a), undefined],
    [
      'a member that is not the host',
      table([key(b), key(c)]),
      key(c),
      view(a, b, c),
      key(a),
      'not-allocator-host',
    ],
    ['a stranger', table([key(b)]), '10.6.6.6:1#x', view(a, b, c), key(a), 'not-allocator-host'],
    [
      'the host, naming a stranger',
      table(['10.66.6.6:2552#e']),
      key(a),
      view(a, b, c),
      key(a),
      'unknown-owner',
    ],
    [
      'the host, a stranger among the backups',
      table([key(b)], [['10.66.6.6:2552#e']]),
      key(a),
      view(a, b, c),
      key(a),
      'unknown-owner',
    ],
    ['unassigned partitions', table(['', key(b)]), key(a), view(a, b, c), key(a), undefined],
    // the former host, leaving: it still runs the allocator until it has handed over
    [
      'an older member that is leaving',
      table([key(b), key(c)]),
      key(a),
      view(member(1, 1, 'leaving'), b, c),
      key(b),
      undefined,
    ],
    [
      'a younger member that is leaving',
      table([key(b)]),
      key(c),
      view(a, b, member(3, 3, 'leaving')),
      key(a),
      'not-allocator-host',
    ],
  ];
  it.each(cases)('%s', (_what, t, sender, m, host, expected) => {
    expect(tableRefusal(t, sender, m, host)).toBe(expected);
  });
});

describe('isOwnFinding: a merge follows only a reply to our own probe', () => {
  const node = (port: number) => ({ host: '10.0.0.1', port, uid: 'u' });
  const probed = ['10.0.0.1:2', '10.0.0.1:3'];
  const seeds = [{ host: '10.0.0.1', port: 9 }];
  const cases: [string, { from: ReturnType<typeof node>; coordinator: ReturnType<typeof node> }, boolean][] =
    [
      ['an unsolicited reply', { from: node(5), coordinator: node(5) }, false],
      ['unsolicited, naming a probed coordinator', { from: node(5), coordinator: node(2) }, false],
      ['a probed address answering for itself', { from: node(2), coordinator: node(2) }, true],
      ['a probed address naming another probed one', { from: node(3), coordinator: node(2) }, true],
      ['a probed address naming one of our seeds', { from: node(3), coordinator: node(9) }, true],
      ['a probed address naming a stranger', { from: node(3), coordinator: node(66) }, false],
    ];
  it.each(cases)('%s', (_what, reply, expected) => {
    expect(isOwnFinding(probed, seeds, reply)).toBe(expected);
  });
});
