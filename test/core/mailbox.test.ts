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

  // takeMessage skips the sender check while no queued message carries a sender (a count of them):
  // the count must follow every way a message leaves (take, takeMessage, drain, drop-oldest eviction)
  it('keeps each message with its sender whichever way messages leave, with and without senders mixed', () => {
    const box = new Mailbox({ capacity: 3, overflow: 'drop-oldest' });
    const m = (n: number) => ({ type: 'm', n }) as { type: string };
    box.offerMessage(m(1), 'a');
    box.offerMessage(m(2), undefined);
    box.offerMessage(m(3), 'c');
    const evicted = box.offerMessage(m(4), undefined); // evicts 1 (with sender a)
    expect(evicted).toMatchObject({ accepted: true, evicted: { message: { n: 1 }, sender: 'a' } });
    expect(box.takeMessage()).toEqual(m(2));
    expect(box.takeMessage()).toEqual(m(3)); // a sender-carrying item: its message alone
    expect(box.takeMessage()).toEqual(m(4));
    expect(box.takeMessage()).toBeUndefined();
    // every sender-carrying item left: plain messages come back as they are
    box.offerMessage(m(5), undefined);
    expect(box.takeMessage()).toEqual(m(5));
    box.offerMessage(m(6), 'f');
    box.offerMessage(m(7), undefined);
    expect(box.take()).toEqual({ message: m(6), sender: 'f' });
    box.offerMessage(m(8), 'h');
    expect(box.drain()).toEqual([
      { message: m(7), sender: undefined },
      { message: m(8), sender: 'h' },
    ]);
    box.offerMessage(m(9), 'i');
    expect(box.takeMessage()).toEqual(m(9));
    // a refused message with a sender is never queued, so never counted
    const full = new Mailbox({ capacity: 1, overflow: 'reject' });
    full.offerMessage(m(10), undefined);
    expect(full.offerMessage(m(11), 'k')).toEqual({ accepted: false, policy: 'reject' });
    expect(full.takeMessage()).toEqual(m(10));
    expect((full as unknown as { withSender: number }).withSender).toBe(0);
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
