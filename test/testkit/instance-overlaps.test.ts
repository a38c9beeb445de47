import { describe, expect, it } from 'vitest';
import {
  describeOverlaps,
  findInstanceOverlaps,
  type InstanceLogLine,
  instanceIntervals,
  type ProcessFate,
} from '../../packages/testkit/src/index.js';

const started = (node: string, time: number, singleton = 'allocator'): InstanceLogLine => ({
  node,
  line: { level: 30, time, event: 'singleton.started', singleton, msg: `singleton ${singleton} started` },
});
const stopped = (node: string, time: number, singleton = 'allocator'): InstanceLogLine => ({
  node,
  line: { level: 30, time, event: 'singleton.stopped', singleton, reason: 'handed over' },
});
const other = (node: string, time: number, event: string): InstanceLogLine => ({
  node,
  line: { level: 30, time, event, singleton: 'allocator' },
});

describe('instanceIntervals', () => {
  it('an instance lives from its start line to its stop line', () => {
    const lines = [
      started('a', 100),
      stopped('a', 400),
      started('b', 450),
      other('b', 460, 'singleton.taking-over'),
    ];
    expect(instanceIntervals(lines, [], 1000)).toEqual([
      { node: 'a', singleton: 'allocator', start: 100, end: 400 },
      { node: 'b', singleton: 'allocator', start: 450, end: 1000 },
    ]);
  });

  it("a process's death ends every instance it still ran, whatever the order the lines come in", () => {
    const lines = [started('b', 900), started('a', 100, 'x'), started('a', 150, 'y')];
    const fates: ProcessFate[] = [{ node: 'a', kind: 'killed', t: 500 }];
    expect(instanceIntervals(lines, fates, 2000)).toEqual([
      { node: 'a', singleton: 'x', start: 100, end: 500 },
      { node: 'a', singleton: 'y', start: 150, end: 500 },
      { node: 'b', singleton: 'allocator', start: 900, end: 2000 },
    ]);
  });

  it('a process restarted under the same node name starts fresh after its former death', () => {
    const lines = [started('a', 100), started('a', 700)];
    const fates: ProcessFate[] = [{ node: 'a', kind: 'exited', t: 600 }];
    expect(instanceIntervals(lines, fates, 1000)).toEqual([
      { node: 'a', singleton: 'allocator', start: 100, end: 600 },
      { node: 'a', singleton: 'allocator', start: 700, end: 1000 },
    ]);
  });

  it('a stop only ends its own singleton, and a death in the same ms comes after the lines', () => {
    const lines = [
      started('a', 100, 'x'),
      started('a', 100, 'y'),
      stopped('a', 300, 'y'),
      started('a', 500, 'z'),
    ];
    const fates: ProcessFate[] = [{ node: 'a', kind: 'killed', t: 500 }];
    expect(instanceIntervals(lines, fates, 1000)).toEqual([
      { node: 'a', singleton: 'x', start: 100, end: 500 },
      { node: 'a', singleton: 'y', start: 100, end: 300 },
      { node: 'a', singleton: 'z', start: 500, end: 500 },
    ]);
  });

  it('skips lines without a numeric time or a singleton name, and stops of nothing running', () => {
    const lines: InstanceLogLine[] = [
      { node: 'a', line: { event: 'singleton.started', singleton: 'allocator', time: '100' } },
      { node: 'a', line: { event: 'singleton.started', time: 100 } },
      { node: 'a', line: { event: 'singleton.started', singleton: 'allocator', time: Number.NaN } },
      stopped('b', 50),
    ];
    expect(instanceIntervals(lines, [], 1000)).toEqual([]);
  });
});

describe('findInstanceOverlaps', () => {
  it('finds a planted overlap (positive control): a successor started before the old host died', () => {
    const lines = [started('a', 100), started('b', 1_000)];
    const fates: ProcessFate[] = [{ node: 'a', kind: 'killed', t: 1_250 }];
    const overlaps = findInstanceOverlaps(instanceIntervals(lines, fates, 3_000));
    expect(overlaps).toEqual([
      {
        singleton: 'allocator',
        a: { node: 'a', singleton: 'allocator', start: 100, end: 1_250 },
        b: { node: 'b', singleton: 'allocator', start: 1_000, end: 3_000 },
        overlapMs: 250,
      },
    ]);
  });

  it('finds an instance nested inside another, and each pair of three at once', () => {
    const intervals = [
      { node: 'a', singleton: 's', start: 0, end: 1000 },
      { node: 'b', singleton: 's', start: 200, end: 300 },
      { node: 'c', singleton: 's', start: 250, end: 2000 },
    ];
    const found = findInstanceOverlaps(intervals).map((o) => [o.a.node, o.b.node, o.overlapMs]);
    expect(found).toEqual([
      ['a', 'b', 100],
      ['a', 'c', 750],
      ['b', 'c', 50],
    ]);
  });

  it('a double start on one node without a stop is two instances at once', () => {
    const overlaps = findInstanceOverlaps(instanceIntervals([started('a', 100), started('a', 200)], [], 500));
    expect(overlaps.map((o) => o.overlapMs)).toEqual([300]);
  });

  it('touching intervals (a stop and the next start in the same ms) do not overlap', () => {
    const lines = [
      started('a', 100),
      stopped('a', 400),
      started('b', 400),
      stopped('b', 900),
      started('c', 900),
    ];
    const intervals = instanceIntervals(lines, [{ node: 'b', kind: 'exited', t: 950 }], 2000);
    expect(intervals).toHaveLength(3);
    expect(findInstanceOverlaps(intervals)).toEqual([]);
  });

  it('a kill in the same ms as the successor starts is not an overlap either', () => {
    const intervals = instanceIntervals(
      [started('a', 100), started('b', 500)],
      [{ node: 'a', kind: 'killed', t: 500 }],
      900,
    );
    expect(findInstanceOverlaps(intervals)).toEqual([]);
  });

  it('instances of different singletons never overlap one another', () => {
    const intervals = instanceIntervals([started('a', 100, 'x'), started('b', 100, 'y')], [], 900);
    expect(findInstanceOverlaps(intervals)).toEqual([]);
  });
});

describe('describeOverlaps', () => {
  it('names the singleton, both nodes, both intervals and the overlap', () => {
    const overlaps = findInstanceOverlaps([
      {
        node: 'athens',
        singleton: 'allocator',
        start: Date.UTC(2026, 10, 27, 9, 0, 0, 0),
        end: Date.UTC(2026, 10, 27, 9, 0, 2, 0),
      },
      {
        node: 'delphi',
        singleton: 'allocator',
        start: Date.UTC(2026, 10, 27, 9, 0, 1, 500),
        end: Date.UTC(2026, 10, 27, 9, 0, 5, 0),
      },
    ]);
    expect(describeOverlaps(overlaps)).toBe(
      'allocator: athens [09:00:00.000–09:00:02.000] and delphi [09:00:01.500–09:00:05.000] both alive for 500 ms',
    );
    expect(describeOverlaps([])).toBe('no overlaps');
  });
});
