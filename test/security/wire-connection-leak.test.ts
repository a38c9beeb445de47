import { afterEach, describe, expect, it } from 'vitest';
import { CloseCode } from '../../packages/wire/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const nodes: TestNode[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
});

describe('issue 10 (7): connections closed for a violation after the handshake', () => {
  it('200 of them leave no inbound connection and no pending handshake behind', async () => {
    const n = await startTestNode();
    nodes.push(n);
    // each its own identity: a second connection of one identity and lane replaces the first (4013)
    const violate = async (_: unknown, i: number) => {
      const raw = await connectRaw(n.transport.port);
      await handshake(raw, { cluster: 'test', secret: 'sesame', lane: 'system', uid: `leak-${i}` });
      raw.sendRaw(Buffer.from([0x91, 0xc1])); // outside the wire grammar: closes the connection
      expect((await raw.closed).code).toBe(CloseCode.unsupportedData);
    };
    // eight at a time: the per-address handshake quota
    for (let i = 0; i < 200; i += 8) await Promise.all(Array.from({ length: 8 }, violate));
    // positive control: every one authenticated and was then refused
    expect(n.system.metrics.value('doyen_wire_inbound_connections_total', { lane: 'system' })).toBe(200);
    expect(n.system.metrics.value('doyen_wire_rejected_total', { reason: 'unsupported-msgpack' })).toBe(200);
    await eventually(() => n.transport.inboundConnections === 0, { what: 'the inbound set to empty' });
    expect(n.transport.pendingHandshakeCount).toBe(0);
    expect(n.transport.pendingUpgradeCount).toBe(0);
  });
});
