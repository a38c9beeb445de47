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
    const honest = await connectRaw(port, { localAddress: '127.0.0.2' });
    const welcome = (await handshake(honest, {
      cluster: 'test',
      secret: 'sesame',
      host: '127.0.0.2',
      port: 2552,
      uid: 'aaaa',
    })) as unknown[];
    expect(welcome[0]).toBe(HandshakeKind.Welcome);
    honest.socket.close();
  });

  it('host names are not checked, and the check can be turned off for NAT', async () => {
    node = await startTestNode({ wire: { verifyPeerAddress: false } });
    const peer = await connectRaw(node.transport.port, { localAddress: '127.0.0.2' });
    const welcome = (await handshake(peer, {
      cluster: 'test',
      secret: 'sesame',
      host: '127.0.0.1',
      port: 2552,
      uid: 'bbbb',
    })) as unknown[];
    expect(welcome[0]).toBe(HandshakeKind.Welcome);
    peer.socket.close();
    await node.transport.close(0);
    node = await startTestNode();
    const named = await connectRaw(node.transport.port, { localAddress: '127.0.0.2' });
    const reply = (await handshake(named, {
      cluster: 'test',
      secret: 'sesame',
      host: 'node-1.example',
      port: 2552,
      uid: 'cccc',
    })) as unknown[];
    expect(reply[0]).toBe(HandshakeKind.Welcome);
    named.socket.close();
  });
});
