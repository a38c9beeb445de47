import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Message } from '../../packages/core/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { eventually } from '../support/wait.js';

const nodes: TestNode[] = [];
const uncaught = vi.fn();
afterEach(async () => {
  process.off('uncaughtException', uncaught);
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
});

describe('a message the encoder cannot write', () => {
  it('becomes a dead letter on its own; its batch neighbours and later messages arrive in order', async () => {
    process.on('uncaughtException', uncaught);
    const a = await startTestNode();
    const b = await startTestNode();
    nodes.push(a, b);
    const inbox = a.system.refFor(b.system.lookup('/user/inbox')!.id);
    inbox.send({ type: 'test.n', n: 0 } as Message);
    await eventually(() => b.inbox.length === 1, { what: 'the connection' });

    const cycle: Record<string, unknown> = { type: 'test.n', n: -1 };
    cycle.self = cycle;
    const huge = { type: 'test.n', n: -2, big: 2n ** 80n };
    // one tick: all of these share a batch
    inbox.send({ type: 'test.n', n: 1 } as Message);
    inbox.send(cycle as unknown as Message);
    inbox.send({ type: 'test.n', n: 2 } as Message);
    inbox.send(huge as unknown as Message);
    for (let n = 3; n < 200; n++) inbox.send({ type: 'test.n', n, shape: 'same' } as Message);
    await eventually(() => b.inbox.length === 200, { what: 'every encodable message' });
    expect(b.inbox.map((m) => (m as unknown as { n: number }).n)).toEqual([...Array(200).keys()]);
    expect(a.deadLetters.filter((l) => l.reason === 'unencodable').map((l) => l.message)).toEqual([
      cycle,
      huge,
    ]);
    expect(a.system.metrics.value('doyen_wire_encode_failures_total', { lane: 'user' })).toBe(2);
    // the records on both sides still agree after the resets: a later stream of the same shapes decodes
    for (let n = 200; n < 300; n++) inbox.send({ type: 'test.n', n, shape: 'same' } as Message);
    await eventually(() => b.inbox.length === 300, { what: 'the later stream' });
    expect(b.system.metrics.value('doyen_wire_rejected_total', { reason: 'malformed-msgpack' })).toBe(0);
    expect(uncaught).not.toHaveBeenCalled();
  });
});
