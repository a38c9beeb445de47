import { describe, expect, it } from 'vitest';
import {
  PARTITION_PASSIVATED_EVENT,
  PASSIVATED_EVENT,
  perEntityLines,
} from '../../packages/sharding/src/region/entity-log-lines.js';

const line = {
  level: 30,
  time: 1_000,
  node: '10.0.0.1:2552',
  logSeq: 7,
  event: PARTITION_PASSIVATED_EVENT,
  entityType: 'cart',
  partition: 12,
  version: 4,
  incarnation: 'u1',
  reason: 'hand-off',
  entityIds: ['a', 'b', 'c'],
  activations: [3, 9, 27],
  msg: '3 cart entities of partition 12 stopped (hand-off)',
};

describe('perEntityLines: a partition’s stop line as the stops of its entities', () => {
  it('one passivated line per entity, in order, with the line’s time, reason, partition and incarnation', () => {
    expect(perEntityLines(line)).toEqual(
      ['a', 'b', 'c'].map((entityId, i) => ({
        level: 30,
        time: 1_000,
        node: '10.0.0.1:2552',
        logSeq: 7,
        event: PASSIVATED_EVENT,
        entityType: 'cart',
        partition: 12,
        version: 4,
        incarnation: 'u1',
        reason: 'hand-off',
        entityId,
        activation: [3, 9, 27][i],
      })),
    );
  });

  it('any other line as it is', () => {
    const other = { event: PASSIVATED_EVENT, entityId: 'a', time: 5 };
    expect(perEntityLines(other)).toEqual([other]);
    expect(perEntityLines(other)[0]).toBe(other);
  });

  it('a malformed partition line as it is: no invented stops', () => {
    for (const bad of [
      { ...line, entityIds: 'a' },
      { ...line, activations: [1] },
      { ...line, entityIds: ['a', 2, 'c'] },
      { ...line, entityIds: undefined },
    ])
      expect(perEntityLines(bad)).toEqual([bad]);
  });
});
