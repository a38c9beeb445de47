import { describe, expect, it } from 'vitest';
import { check } from '../../apps/partition-demo/src/conditions.js';
import { EventLog } from '../../apps/partition-demo/src/events.js';
import { keyAction, splitKeys } from '../../apps/partition-demo/src/keys.js';
import { type ObservedNode, observe } from '../../apps/partition-demo/src/observe.js';
import type { ClusterView, NodeSnapshot } from '../../apps/partition-demo/src/poller.js';
import { renderView, type ViewModel, type ViewRow } from '../../apps/partition-demo/src/view.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'];

function row(i: number, extra: Partial<ViewRow> = {}): ViewRow {
  return {
    number: i + 1,
    name: NAMES[i]!,
    port: 40001 + i,
    process: 'running',
    status: 'up',
    reachable: true,
    age: i + 1,
    incarnation: 1,
    partitions: i === 0 ? 55 : 54,
    coordinator: i === 0,
    allocator: i === 0,
    sees: '5 up, athens',
    selected: i === 0,
    ...extra,
  };
}

function model(extra: Partial<ViewModel> = {}): ViewModel {
  const events = new EventLog();
  events.addDemo('kill -9 delphi', NOW - 5000);
  for (const reporter of ['athens', 'byzantium', 'cyrene'])
    events.addLogLine(
      reporter,
      { event: 'member.downed', time: NOW - 2000, member: { name: 'delphi', uid: 'u4', age: 4 } },
      NOW,
      (a) => a,
    );
  return {
    cluster: 'partition-demo',
    now: NOW,
    uptimeMs: 83_000,
    running: 4,
    total: 5,
    coordinator: { name: 'athens', address: '127.0.0.1:40001', votes: 4, of: 4, majority: true },
    otherCoordinators: [],
    singletons: [{ name: 'partition-allocator', on: ['athens'] }],
    table: {
      version: 7,
      partitionCount: 271,
      members: 4,
      owners: 4,
      min: 67,
      max: 68,
      unassigned: 0,
      strays: [],
      balanced: true,
    },
    missing: [],
    fault: undefined,
    rows: [
      row(0),
      row(1),
      row(2),
      row(3, { process: 'killed', status: 'down', reachable: false, partitions: undefined, sees: undefined }),
      row(4),
    ],
    events: events.recent(30),
    script: undefined,
    lastAction: 'kill -9 delphi',
    keys: '[1-9] select [k]ill [q]uit',
    logDir: '/tmp/doyen-demo-x',
    ...extra,
  };
}

describe('demo view', () => {
  it('shows members, coordinator, singleton, partitions, events and keys in 80 columns', () => {
    const text = renderView(model(), { width: 80, color: false });
    const lines = text.split('\n');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    expect(text).toContain('doyen partition demo   cluster partition-demo   4 of 5 nodes running   up 1:23');
    expect(text).toMatch(/^coordinator +athens 127\.0\.0\.1:40001 +\(4 of 4 nodes agree\)$/m);
    expect(text).toMatch(/^singletons +partition-allocator on athens$/m);
    expect(text).toMatch(/table v7: 271 over 4 up members, 67\.\.68 per node +balanced/);
    expect(text).toMatch(/^fault +none$/m);
    const header = lines.find((l) => l.includes('process'))!;
    expect(header).toMatch(/#\s+node\s+port\s+process\s+member\s+reach\s+age\s+inc\s+parts\s+coord\s+alloc/);
    expect(lines.find((l) => l.includes('athens  '))).toMatch(
      /^>1 athens +40001 running +up +yes +1 +1 +55 +yes +yes/,
    );
    expect(lines.find((l) => l.includes(' delphi '))).toMatch(
      /^ 4 delphi +40004 killed +down +NO +4 +1 +- *$/,
    );
    // one event for the three nodes that saw delphi downed
    expect(text).toMatch(/3 nodes +member\.downed +delphi \(age 4\)/);
    expect(text).toMatch(/demo +demo +kill -9 delphi/);
    expect(text).toMatch(/^\[1-9\] select \[k\]ill \[q\]uit$/m);
    expect(text).not.toContain('\u001b[');
  });

  it('fits a small terminal: fewer events, no line longer than the width', () => {
    const many = new EventLog();
    for (let i = 0; i < 30; i++) many.addDemo(`step ${i}`, NOW + i);
    const text = renderView(model({ events: many.recent(30) }), { width: 60, height: 24, color: false });
    const lines = text.split('\n');
    expect(lines.length).toBeLessThanOrEqual(24);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    expect(text).toContain('step 29'); // the newest stay
    expect(text).not.toContain('step 10');
    expect(text).not.toContain('its own view'); // dropped first when narrow
  });

  it('shows a partition, disagreement, a missing endpoint and an unbalanced table', () => {
    const text = renderView(
      model({
        fault: [
          ['athens', 'byzantium', 'cyrene'],
          ['delphi', 'ephesus'],
        ],
        coordinator: { name: 'athens', address: '127.0.0.1:40001', votes: 3, of: 5, majority: true },
        otherCoordinators: [{ name: 'delphi', votes: 2 }],
        missing: ['/singletons'],
        table: {
          version: 8,
          partitionCount: 271,
          members: 3,
          owners: 5,
          min: 54,
          max: 55,
          unassigned: 0,
          strays: ['delphi', 'ephesus'],
          balanced: false,
        },
        script: { file: 'ci.demo', line: 14, text: 'wait-until members 3 20s' },
      }),
      { width: 120 },
    );
    expect(text).toMatch(/^fault +athens,byzantium,cyrene {2}\| {2}delphi,ephesus {2}\(blackholed\)$/m);
    expect(text).toContain('(3 of 5 nodes agree; others see delphi (2))');
    expect(text).toContain('GET /singletons answers 404');
    expect(text).toMatch(/owners not up: delphi, ephesus +unbalanced/);
    expect(text).toMatch(/^script +ci\.demo:14 {2}wait-until members 3 20s$/m);
  });

  it('colours for a terminal', () => {
    const text = renderView(model(), { width: 100, color: true });
    expect(text).toContain('\u001b[32mup');
    expect(text).toContain('\u001b[31;1mNO');
  });
});

describe('demo observation', () => {
  function view(
    self: number,
    members: number[],
    coordinator: number,
    unreachable: number[] = [],
  ): ClusterView {
    return {
      self: `127.0.0.1:${40001 + self}`,
      uid: `u${self}`,
      status: 'up',
      coordinator: `127.0.0.1:${40001 + coordinator}`,
      version: 10,
      members: members.map((m) => ({
        address: `127.0.0.1:${40001 + m}`,
        uid: `u${m}`,
        name: NAMES[m]!,
        age: m + 1,
        status: 'up',
        reachable: !unreachable.includes(m),
        roles: [],
      })),
    };
  }
  function node(
    i: number,
    cluster: ClusterView,
    allocator: boolean,
    counts: Record<string, number>,
  ): ObservedNode {
    const snapshot: NodeSnapshot = {
      at: NOW - 100,
      cluster,
      singletons: [
        { name: 'partition-allocator', node: cluster.coordinator, runsHere: allocator, state: 'running' },
      ],
      partitions: { version: 3, partitionCount: 271, owners: Array(271).fill('x'), counts, backups: [] },
      error: undefined,
      errorAt: 0,
    };
    return { name: NAMES[i]!, address: `127.0.0.1:${40001 + i}`, state: 'running', snapshot };
  }
  const a = (i: number) => `127.0.0.1:${40001 + i}`;

  it('a 3 | 2 partition: the majority side names the coordinator, each side its own view', () => {
    const majority = { [a(0)]: 91, [a(1)]: 90, [a(2)]: 90 };
    const minority = { [a(3)]: 136, [a(4)]: 135 };
    const nodes = [
      node(0, view(0, [0, 1, 2], 0), true, majority),
      node(1, view(1, [0, 1, 2], 0), false, majority),
      node(2, view(2, [0, 1, 2], 0), false, majority),
      node(3, view(3, [3, 4], 3), true, minority),
      node(4, view(4, [3, 4], 3), false, minority),
    ];
    const o = observe(nodes, NOW);
    expect(o.coordinator).toMatchObject({ name: 'athens', votes: 3, majority: true });
    expect(o.others).toEqual([{ address: a(3), name: 'delphi', votes: 2 }]);
    expect(o.balance).toMatchObject({ members: 3, min: 90, max: 91, balanced: true });
    expect(o.rows.get('delphi')).toMatchObject({ member: undefined, seesUp: 2, seesCoordinator: 'delphi' });
    expect(check({ kind: 'members', count: 3 }, nodes, o, NOW).ok).toBe(true);
    expect(check({ kind: 'coordinator', node: 'athens' }, nodes, o, NOW).ok).toBe(true);
    expect(check({ kind: 'partitions-balanced' }, nodes, o, NOW).ok).toBe(true);
    // two allocators, one per side: not a singleton any more
    expect(check({ kind: 'singleton-on', node: 'athens' }, nodes, o, NOW)).toEqual({
      ok: false,
      detail: 'partition-allocator runs on athens and delphi',
    });
    expect(check({ kind: 'converged', count: 5 }, nodes, o, NOW)).toMatchObject({ ok: false });
  });

  it('converged: every node up, the same members, coordinator and table', () => {
    const counts = { [a(0)]: 91, [a(1)]: 90, [a(2)]: 90 };
    const nodes = [0, 1, 2].map((i) => node(i, view(i, [0, 1, 2], 0), i === 0, counts));
    const o = observe(nodes, NOW);
    expect(check({ kind: 'converged', count: 3 }, nodes, o, NOW)).toEqual({
      ok: true,
      detail: '3 up, coordinator athens (3 of 3 nodes agree)',
    });
    // an unreachable member is not converged
    const shaky = [0, 1, 2].map((i) => node(i, view(i, [0, 1, 2], 0, i === 1 ? [2] : []), i === 0, counts));
    expect(check({ kind: 'converged', count: 3 }, shaky, observe(shaky, NOW), NOW)).toEqual({
      ok: false,
      detail: 'byzantium sees cyrene unreachable',
    });
  });
});

describe('demo keys', () => {
  it('maps keys to actions and splits escape sequences', () => {
    expect(keyAction('3')).toEqual({ type: 'select', index: 2 });
    expect(keyAction('k')).toEqual({ type: 'kill' });
    expect(keyAction('\u0003')).toEqual({ type: 'quit' });
    expect(keyAction('z')).toBeUndefined();
    expect(splitKeys('k\u001b[Bq')).toEqual(['k', '\u001b[B', 'q']);
  });
});
