import { afterEach, describe, expect, it } from 'vitest';
import { CloseCode, type WireConfig } from '../../packages/wire/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake, type RawPeer } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const nodes: TestNode[] = [];
const peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) p.socket.terminate();
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
});

async function node(wire: Partial<WireConfig>): Promise<TestNode> {
  const n = await startTestNode({ wire });
  nodes.push(n);
  return n;
}

/** An authenticated raw peer claiming `uid` (127.0.0.1:1#uid) on `lane`. */
async function authenticated(n: TestNode, uid: string, lane: 'system' | 'user' = 'user'): Promise<RawPeer> {
  const raw = await connectRaw(n.transport.port);
  peers.push(raw);
  await handshake(raw, { cluster: 'test', secret: 'sesame', uid, lane });
  return raw;
}

const stillOpen = (raw: RawPeer) => raw.socket.readyState === raw.socket.OPEN;

describe('issue 25 (3): authenticated inbound connections are capped in all', () => {
  it('beyond maxInboundConnections a new identity is closed with 4012', async () => {
    const n = await node({ maxInboundConnections: 4 });
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await authenticated(n, `peer-${i}`));
    const extra = await authenticated(n, 'peer-extra');
    const closed = await extra.closed;
    expect(closed.code).toBe(CloseCode.tooManyConnections);
    expect(closed.reason).toContain('4 connections');
    expect(n.system.metrics.value('doyen_wire_rejected_total', { reason: 'too-many-connections' })).toBe(1);
    expect(n.transport.inboundConnections).toBe(4);
    expect(held.every(stillOpen)).toBe(true);
  });

  it('a reconnect of an identity already in is not refused at the cap: it replaces its old connection', async () => {
    const n = await node({ maxInboundConnections: 4 });
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await authenticated(n, `peer-${i}`));
    // peer-0's old socket lingers half-open; it dials again
    const again = await authenticated(n, 'peer-0');
    expect((await first[0]!.closed).code).toBe(CloseCode.replaced);
    expect(stillOpen(again)).toBe(true);
    expect(n.transport.inboundConnections).toBe(4);
    expect(n.system.metrics.value('doyen_wire_connections_replaced_total')).toBe(1);
  });

  it("secret holders filling the node do not keep a member out: its connection takes a non-member's place", async () => {
    const n = await node({ maxInboundConnections: 4 });
    const squatters = [];
    for (let i = 0; i < 4; i++) squatters.push(await authenticated(n, `squatter-${i}`));
    // positive control: while the node does not know it as a member, it is refused like anyone
    const unknown = await authenticated(n, 'member');
    expect((await unknown.closed).code).toBe(CloseCode.tooManyConnections);
    n.transport.setKnownPeers([{ host: '127.0.0.1', port: 1, uid: 'member' }], []);
    const member = await authenticated(n, 'member');
    expect((await squatters[0]!.closed).code).toBe(CloseCode.tooManyConnections);
    expect(stillOpen(member)).toBe(true);
    expect(squatters.slice(1).every(stillOpen)).toBe(true);
    expect(n.transport.inboundConnections).toBe(4);
  });

  it('positive control: with no cap the fifth identity stays connected', async () => {
    const n = await node({ maxInboundConnections: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 5; i++) await authenticated(n, `peer-${i}`);
    await eventually(() => n.transport.inboundConnections === 5, { what: 'five connections' });
    expect(peers.every(stillOpen)).toBe(true);
  });
});

describe('issue 25 (3): authenticated inbound connections are capped per identity and lane', () => {
  it('one identity opening 20 connections on a lane keeps only its newest', async () => {
    const n = await node({});
    const conns = [];
    for (let i = 0; i < 20; i++) conns.push(await authenticated(n, 'greedy', 'system'));
    for (const old of conns.slice(0, -1)) expect((await old.closed).code).toBe(CloseCode.replaced);
    expect(stillOpen(conns.at(-1)!)).toBe(true);
    // its other lane is a connection of its own
    const user = await authenticated(n, 'greedy', 'user');
    expect(stillOpen(user)).toBe(true);
    await eventually(() => n.transport.inboundConnections === 2, { what: 'two connections left' });
  });

  it('positive control: with no per-identity cap all 20 stay open', async () => {
    const n = await node({ maxInboundPerIdentity: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 20; i++) await authenticated(n, 'greedy', 'system');
    await eventually(() => n.transport.inboundConnections === 20, { what: 'twenty connections' });
    expect(peers.every(stillOpen)).toBe(true);
  });
});
