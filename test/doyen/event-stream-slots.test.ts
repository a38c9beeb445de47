import { describe, expect, it } from 'vitest';
import { EventStreamSlots } from '../../packages/doyen/src/event-stream-slots.js';

describe('EventStreamSlots: a newcomer is always admitted, the caps kept by closing older streams', () => {
  it('under both caps nothing is closed', () => {
    const slots = new EventStreamSlots<string>(4, 2);
    expect(slots.admit('a', 'a1')).toEqual([]);
    expect(slots.admit('b', 'b1')).toEqual([]);
    expect(slots.admit('a', 'a2')).toEqual([]);
    expect(slots.size).toBe(3);
  });

  it('a client at its share gives up its own oldest stream, never another client’s', () => {
    const slots = new EventStreamSlots<string>(10, 2);
    slots.admit('operator', 'op1');
    slots.admit('holder', 'h1');
    slots.admit('holder', 'h2');
    expect(slots.admit('holder', 'h3')).toEqual([{ stream: 'h1', reason: 'client-cap' }]);
    expect(slots.heldBy('holder')).toBe(2);
    expect(slots.heldBy('operator')).toBe(1);
  });

  it('at the total cap the oldest stream of the client holding the most is closed', () => {
    const slots = new EventStreamSlots<string>(4, 3);
    slots.admit('x', 'x1');
    slots.admit('y', 'y1');
    slots.admit('y', 'y2');
    slots.admit('y', 'y3');
    expect(slots.admit('operator', 'op')).toEqual([{ stream: 'y1', reason: 'total-cap' }]);
    // equals: the one whose oldest stream is oldest
    const even = new EventStreamSlots<string>(2, 2);
    even.admit('p', 'p1');
    even.admit('q', 'q1');
    expect(even.admit('r', 'r1')).toEqual([{ stream: 'p1', reason: 'total-cap' }]);
  });

  it('a released stream frees its place; releasing twice is harmless', () => {
    const slots = new EventStreamSlots<string>(1, 1);
    slots.admit('a', 'a1');
    slots.release('a1');
    slots.release('a1');
    expect(slots.admit('b', 'b1')).toEqual([]);
    expect(() => new EventStreamSlots<string>(0, 1)).toThrow(RangeError);
  });
});
