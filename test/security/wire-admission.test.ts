import { connect, type Socket } from 'node:net';
import { Packr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { CloseCode, setReceiveLimit } from '../../packages/wire/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake, type RawPeer } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const stops: (() => Promise<void>)[] = [];
const peers: RawPeer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) p.socket.terminate();
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

const rejectedBy = (system: TestNode['system'], reason: string) =>
  system.metrics.value('doyen_wire_rejected_total', { reason });

/** A TCP connection from `localAddress` that says nothing (or half an HTTP request) and stays. */
async function silentTcp(port: number, localAddress: string, partial?: string): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  if (partial) socket.write(partial);
  return socket;
}

describe('issue 10 (4): handshake slots and raw sockets', () => {
  it('64+ silent WebSocket connections from one address do not stop a node on another address from joining', async () => {
    const [portA, portB] = (await freePorts(2)) as [number, number];
    const seeds = [{ host: '127.0.0.1', port: portA }];
    const a: ClusterNode = await startClusterNode(portA, seeds, {});
    stops.push(() => a.transport.close());
    await a.cluster.whenUp();

    // 70 upgrades from 127.0.0.2 that never send a hello
    const attempts = await Promise.allSettled(
      Array.from({ length: 70 }, () => connectRaw(portA, { localAddress: '127.0.0.2' })),
    );
    for (const r of attempts) if (r.status === 'fulfilled') peers.push(r.value);
    // positive control: they really hold slots, up to the per-address cap, and the rest were refused
    const cap = a.transport.config.maxPendingHandshakesPerIp;
    await eventually(() => a.transport.pendingHandshakeCount === cap, {
      what: 'the silent sockets to hold slots',
    });
    await eventually(() => rejectedBy(a.transport.system, 'too-many-handshakes-from-ip') === 70 - cap, {
      what: 'the surplus to be refused',
    });

    const b = await startClusterNode(portB, seeds);
    stops.push(() => b.transport.close());
    await b.cluster.whenUp();
    await eventually(
      () => a.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 2,
      {
        what: 'the coordinator to see the new member up',
      },
    );
    // the silent ones still sit there (they time out on their own)
    expect(a.transport.pendingHandshakeCount).toBe(cap);
  });

  it('TCP connections that never complete the upgrade are capped and cut after the timeout', async () => {
    const n = await startTestNode({
      // no slots reserved for known peers: all ten are open to the unknown source (see handshake-slots.test.ts)
      wire: {
        upgradeTimeoutMs: 300,
        maxPendingUpgrades: 10,
        maxPendingHandshakesPerIp: 100,
        reservedHandshakeSlots: 0,
      },
    });
    stops.push(() => n.transport.close());
    const held = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        silentTcp(n.transport.port, '127.0.0.3', i % 2 ? 'GET /doyen HTTP/1.1\r\nHost: x\r\n' : undefined),
      ),
    );
    const closedAt: number[] = [];
    const started = Date.now();
    for (const s of held) s.once('close', () => closedAt.push(Date.now() - started));
    await eventually(() => rejectedBy(n.system, 'too-many-upgrades') === 10, {
      what: 'the surplus to be cut',
    });
    // positive control: ten sockets really held the upgrade slots
    expect(n.transport.pendingUpgradeCount).toBe(10);
    await eventually(() => closedAt.length === 20, { what: 'every silent socket to be closed' });
    expect(rejectedBy(n.system, 'upgrade-timeout')).toBe(10);
    expect(n.transport.pendingUpgradeCount).toBe(0);
    expect(Math.max(...closedAt)).toBeLessThan(3000);

    // the node still serves a well-behaved peer
    const raw = await connectRaw(n.transport.port);
    peers.push(raw);
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    expect(n.transport.inboundConnections).toBe(1);
  });

  it('plain HTTP gets 426 and is closed; nothing else is served on the wire port', async () => {
    const n = await startTestNode();
    stops.push(() => n.transport.close());
    const response = await fetch(`http://127.0.0.1:${n.transport.port}/doyen`);
    expect(response.status).toBe(426);
    expect(rejectedBy(n.system, 'not-websocket')).toBe(1);
  });

  it('before authentication a frame over the handshake limit is refused by ws itself (1009); a smaller one reaches the decoder', async () => {
    const n = await startTestNode();
    stops.push(() => n.transport.close());
    // 0.9 MB of record definitions: before, the node decoded all of it pre-auth
    const keys = Array.from({ length: 20_000 }, (_, i) => `k${i}`);
    const big = new Packr({ useRecords: true }).pack([Object.fromEntries(keys.map((k) => [k, 1]))]);
    expect(big.length).toBeGreaterThan(100_000);
    const raw = await connectRaw(n.transport.port);
    peers.push(raw);
    await raw.challenge;
    // this ws version lets the limit be lowered before authentication (so ws refuses, not our code)
    expect(setReceiveLimit(raw.socket, 100 * 1024 * 1024)).toBe(true);
    const sent = performance.now();
    raw.sendRaw(big);
    expect(await raw.closed).toMatchObject({ code: CloseCode.tooBig });
    expect(performance.now() - sent).toBeLessThan(1000);
    await eventually(() => rejectedBy(n.system, 'frame-too-large') === 1, {
      what: 'the refusal to be counted',
    });
    // positive control: a frame under the limit is decoded (and refused as no hello)
    const small = await connectRaw(n.transport.port);
    peers.push(small);
    await small.challenge;
    small.sendRaw(new Packr({ useRecords: false }).pack(['x'.repeat(900)]));
    expect(await small.closed).toMatchObject({ code: CloseCode.policyViolation, reason: 'handshake failed' });
    expect(rejectedBy(n.system, 'bad-handshake')).toBe(1);
  });
});
