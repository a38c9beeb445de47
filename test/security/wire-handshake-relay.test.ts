import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { Message } from '../../packages/core/src/index.js';
import { freePorts } from '../../packages/testkit/src/free-ports.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { startFakeAcceptor } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const nodes: TestNode[] = [];
const relays: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
});

const closable = (code: number) =>
  (code >= 3000 && code <= 4999) || [1000, 1001, 1003, 1007, 1008, 1009].includes(code);

/**
 * A man in the middle on an address a node dials (a stale seed): every connection it accepts is
 * relayed frame by frame, close codes included, to the real node at `upstream`.
 */
async function startRelay(port: number, upstream: number) {
  const relayed = { toDialer: 0, toAcceptor: 0 };
  const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/doyen' });
  wss.on('connection', (down) => {
    const up = new WebSocket(`ws://127.0.0.1:${upstream}/doyen`);
    const early: Buffer[] = [];
    up.on('open', () => {
      for (const f of early.splice(0)) up.send(f);
    });
    up.on('message', (d: Buffer) => {
      relayed.toDialer++;
      down.send(d);
    });
    down.on('message', (d: Buffer) => {
      relayed.toAcceptor++;
      if (up.readyState === WebSocket.OPEN) up.send(d);
      else early.push(d);
    });
    up.on('close', (code, reason) => down.close(closable(code) ? code : 1000, reason));
    down.on('close', (code, reason) =>
      up.readyState === WebSocket.CONNECTING
        ? up.terminate()
        : up.close(closable(code) ? code : 1000, reason),
    );
    up.on('error', () => {});
    down.on('error', () => {});
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  const relay = {
    relayed,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  };
  relays.push(relay);
  return relay;
}

const inboxAt = (n: TestNode, port: number) =>
  `doyen://test@127.0.0.1:${port}/user/inbox#${n.system.node.uid}`;
const failures = (n: TestNode, reason: string) =>
  n.system.metrics.value('doyen_wire_handshake_failures_total', { lane: 'user', reason });

describe('issue 10 (2): the handshake cannot be relayed', () => {
  it('a relay on a stale seed address is refused by the node it relays to, and the dialer counts the refusal', async () => {
    const real = await startTestNode();
    const dialer = await startTestNode();
    nodes.push(real, dialer);
    const [stale] = (await freePorts(1)) as [number];
    const relay = await startRelay(stale, real.transport.port);

    dialer.system.refFor(inboxAt(real, stale)).send({ type: 'test.ping' } as Message);
    await eventually(
      () => real.system.metrics.value('doyen_wire_rejected_total', { reason: 'wrong-target' }) >= 1,
      {
        what: 'the real node to refuse the relayed hello',
      },
    );
    await eventually(() => failures(dialer, 'refused') >= 1, { what: 'the dialer to count the refusal' });
    // positive control: the relay carried the challenge to the dialer and the hello to the real node
    expect(relay.relayed.toDialer).toBeGreaterThanOrEqual(1);
    expect(relay.relayed.toAcceptor).toBeGreaterThanOrEqual(1);
    // nobody logged in as the dialer, nothing was delivered
    expect(real.transport.inboundConnections).toBe(0);
    expect(real.inbox).toHaveLength(0);
    expect(dialer.transport.isConnected({ host: '127.0.0.1', port: stale }, 'user')).toBe(false);

    // positive control: a direct dial between the same two nodes works
    dialer.system.refFor(inboxAt(real, real.transport.port)).send({ type: 'test.ping' } as Message);
    await eventually(() => real.inbox.length === 1, { what: 'the direct message' });
  });

  it('the dialer refuses a welcome that names another address than the one dialled, even with a valid proof', async () => {
    const dialer = await startTestNode();
    nodes.push(dialer);
    const [stale, elsewhere] = (await freePorts(2)) as [number, number];
    // it knows the secret and proves it over the transcript, but says it is another node
    const fake = await startFakeAcceptor(stale, {
      welcomeAs: { host: '127.0.0.1', port: elsewhere, uid: 'x' },
    });
    relays.push(fake);
    dialer.system
      .refFor(`doyen://test@127.0.0.1:${stale}/user/inbox#x`)
      .send({ type: 'test.ping' } as Message);
    await eventually(() => failures(dialer, 'wrong-peer') >= 1, { what: 'the dialer to refuse the welcome' });
    expect(fake.received.length).toBeGreaterThanOrEqual(1); // positive control: the hello went out
    expect(dialer.transport.isConnected({ host: '127.0.0.1', port: stale }, 'user')).toBe(false);
    expect(failures(dialer, 'bad-proof')).toBe(0);
  });

  it('a welcome with a wrong proof is refused (positive control for the fake acceptor: with the right address and proof it connects)', async () => {
    const dialer = await startTestNode();
    nodes.push(dialer);
    const [wrongSecret, right] = (await freePorts(2)) as [number, number];
    const liar = await startFakeAcceptor(wrongSecret, {
      secret: 'guess',
      welcomeAs: { host: '127.0.0.1', port: wrongSecret, uid: 'x' },
    });
    const honest = await startFakeAcceptor(right, {
      welcomeAs: { host: '127.0.0.1', port: right, uid: 'x' },
    });
    relays.push(liar, honest);
    dialer.system
      .refFor(`doyen://test@127.0.0.1:${wrongSecret}/user/inbox#x`)
      .send({ type: 'test.ping' } as Message);
    dialer.system
      .refFor(`doyen://test@127.0.0.1:${right}/user/inbox#x`)
      .send({ type: 'test.ping' } as Message);
    await eventually(() => failures(dialer, 'bad-proof') >= 1, { what: 'the bad proof to be refused' });
    await eventually(() => dialer.transport.isConnected({ host: '127.0.0.1', port: right }, 'user'), {
      what: 'the honest fake to be accepted',
    });
  });

  it('a node answers to its advertised address and its configured aliases only', async () => {
    const [plainPort, aliasedPort] = (await freePorts(2)) as [number, number];
    const plain = await startTestNode({ port: plainPort });
    const aliased = await startTestNode({
      port: aliasedPort,
      wire: { aliases: [`localhost:${aliasedPort}`] },
    });
    const dialer = await startTestNode();
    nodes.push(plain, aliased, dialer);
    const viaName = (n: TestNode, port: number) =>
      `doyen://test@localhost:${port}/user/inbox#${n.system.node.uid}`;
    // the same machine under a name the node does not advertise: refused
    dialer.system.refFor(viaName(plain, plainPort)).send({ type: 'test.ping' } as Message);
    await eventually(
      () => plain.system.metrics.value('doyen_wire_rejected_total', { reason: 'wrong-target' }) >= 1,
      {
        what: 'the hello to an unknown name to be refused',
      },
    );
    // under a configured alias the hello is taken and the node answers as that name
    dialer.system.refFor(viaName(aliased, aliasedPort)).send({ type: 'test.ping' } as Message);
    await eventually(() => aliased.inbox.length === 1, { what: 'the message through the alias' });
    expect(aliased.system.metrics.value('doyen_wire_rejected_total', { reason: 'wrong-target' })).toBe(0);
    expect(failures(dialer, 'wrong-peer')).toBe(0);
  });
});
