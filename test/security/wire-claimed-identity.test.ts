import { afterEach, describe, expect, it } from 'vitest';
import { CloseCode, HandshakeKind } from '../../packages/wire/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake } from '../support/raw-peer.js';

/**
 * The identity in a hello is claimed by whoever holds the secret. A peer that names an IP address
 * as its host must connect from it, so a secret holder on another machine cannot claim to be an
 * existing member (and then speak for it: every message is bound to the connection's identity).
 */
describe('a hello claiming an IP address must come from it', () => {
  let node: TestNode | undefined;
  afterEach(async () => {
    await node?.transport.close(0);
    node = undefined;
  });

  const rejected = (n: TestNode, reason: string) =>
    n.system.metrics.value('doyen_wire_rejected_total', { reason });

  /** Dials from 127.0.0.2 claiming `host`; resolves with the first kind the node answers. */
  async function helloFrom127002(n: TestNode, host: string, uid: string) {
    const peer = await connectRaw(n.transport.port, { localAddress: '127.0.0.2' });
    const reply = (await handshake(peer, {
      cluster: 'test',
      secret: 'sesame',
      host,
      port: 2552,
      uid,
    })) as unknown[];
    peer.socket.close();
    return reply[0];
  }

  it('a peer on 127.0.0.2 claiming to be 127.0.0.1 is refused; claiming its own address it is welcomed', async () => {
    node = await startTestNode();
    const port = node.transport.port;
    const impostor = await connectRaw(port, { localAddress: '127.0.0.2' });
    void handshake(impostor, {
      cluster: 'test',
      secret: 'sesame',
      host: '127.0.0.1',
      port: 2552,
      uid: 'aaaa',
    });
    expect(await impostor.closed).toMatchObject({ code: CloseCode.wrongSource, reason: 'handshake failed' });
    expect(rejected(node, 'wrong-source')).toBe(1);
    // positive control: the same peer naming its own address gets a welcome
    expect(await helloFrom127002(node, '127.0.0.2', 'aaaa')).toBe(HandshakeKind.Welcome);
  });

  it('host names are not checked, and the check can be turned off for NAT', async () => {
    node = await startTestNode({ wire: { verifyPeerAddress: false } });
    expect(await helloFrom127002(node, '127.0.0.1', 'bbbb')).toBe(HandshakeKind.Welcome);
    await node.transport.close(0);
    node = await startTestNode();
    expect(await helloFrom127002(node, 'node-1.example', 'cccc')).toBe(HandshakeKind.Welcome);
  });
});
