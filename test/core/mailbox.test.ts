import { describe, expect, it } from 'vitest';
import { InvalidConfigError, Mailbox, RingBuffer } from '../../packages/core/src/index.js';

const d = (n: number) => ({ message: { type: 'm', n } as { type: string }, sender: undefined });

describe('mailbox', () => {
  it('keeps FIFO order across ring growth', () => {
    const ring = new RingBuffer<number>(2);
    for (let i = 0; i < 100; i++) {
      ring.push(i);
      if (i % 3 === 0) ring.shift();
    }
    const rest = ring.drain();
    expect(rest).toEqual([...rest].sort((a, b) => a - b));
    expect(ring.length).toBe(0);
  });

  it('drop-newest refuses the arriving message when full', () => {
    const box = new Mailbox({ capacity: 2, overflow: 'drop-newest' });
    expect(box.offer(d(1)).accepted).toBe(true);
    expect(box.offer(d(2)).accepted).toBe(true);
    expect(box.offer(d(3))).toEqual({ accepted: false, policy: 'drop-newest' });
    expect(box.drain().map((x) => (x.message as unknown as { n: number }).n)).toEqual([1, 2]);
  });

  it('drop-oldest evicts the head and accepts the new one', () => {
    const box = new Mailbox({ capacity: 2, overflow: 'drop-oldest' });
    box.offer(d(1));
    box.offer(d(2));
    const r = box.offer(d(3));
    expect(r.accepted).toBe(true);
    expect(r).toMatchObject({ accepted: true, evicted: { message: { n: 1 } } });
    expect(box.drain().map((x) => (x.message as unknown as { n: number }).n)).toEqual([2, 3]);
  });

  it('reject reports the policy so the sender can be told', () => {
    const box = new Mailbox({ capacity: 1, overflow: 'reject' });
    box.offer(d(1));
    expect(box.offer(d(2))).toEqual({ accepted: false, policy: 'reject' });
  });

  it('refuses a nonsensical capacity', () => {
    expect(() => new Mailbox({ capacity: 0, overflow: 'reject' })).toThrow(InvalidConfigError);
  });
});
