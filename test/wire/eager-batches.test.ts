// A connected association encodes a frame as soon as a full batch is queued (association.ts,
// sendFullBatch), in the sender's own task, rather than leaving every envelope of a burst queued
// for later turns' flush budgets (where a saturating sender kept ~100k of them alive and the
// collector paid for it). Fewer than a batch still wait for the scheduled flush (the control),
// and either way every message arrives, in order.
import { describe, expect, it } from 'vitest';
import { testNodesClosedAfterEach } from '../support/nodes.js';
import { eventually } from '../support/wait.js';

const node = testNodesClosedAfterEach();

type N = { type: 'test.n'; n: number };

const framesSent = (n: Awaited<ReturnType<typeof node>>) =>
  n.system.metrics.value('doyen_wire_frames_sent_total', { lane: 'user' });

describe('eager batches on a connected association', () => {
  it('a burst is framed while it is being sent; a few messages wait for the flush; all arrive in order', async () => {
    const a = await node();
    const b = await node();
    const inbox = a.system.refFor<N>(b.system.lookup('/user/inbox')!.id);
    inbox.send({ type: 'test.n', n: -1 });
    await eventually(() => b.inbox.length === 1, { what: 'the connection' });
    await eventually(() => a.transport.queued(inbox.address.node, 'user') === 0, { what: 'an empty queue' });

    // control: a few messages, less than a batch, are not framed on the sender's stack
    let before = framesSent(a);
    for (let n = 0; n < 10; n++) inbox.send({ type: 'test.n', n });
    expect(framesSent(a)).toBe(before);
    await eventually(() => b.inbox.length === 11, { what: 'the few' });

    // a burst of many batches: frames leave during the loop, the queue never holds the burst
    before = framesSent(a);
    let deepest = 0;
    const burst = 20_000;
    for (let n = 10; n < 10 + burst; n++) {
      inbox.send({ type: 'test.n', n });
      deepest = Math.max(deepest, a.transport.queued(inbox.address.node, 'user'));
    }
    expect(framesSent(a) - before).toBeGreaterThan(1);
    expect(deepest).toBeLessThan(burst / 2);
    await eventually(() => b.inbox.length === 11 + burst, { what: 'the burst', timeoutMs: 20_000 });
    const ns = b.inbox.slice(1).map((m) => (m as N).n);
    expect(ns).toEqual(Array.from({ length: 10 + burst }, (_, i) => i));
  });
});
