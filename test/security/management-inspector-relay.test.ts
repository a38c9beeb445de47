import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type InspectorServer, startInspectorServer } from '../../packages/doyen/src/inspector/index.js';
import { type Recorder, record, upgradeStatus } from '../inspector/support.js';
import { type CliNode, killAll, runCli } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const servers: InspectorServer[] = [];
const recorders: Recorder[] = [];
const children: CliNode[] = [];
afterEach(async () => {
  killAll(children.splice(0));
  await Promise.all(recorders.splice(0).map((r) => r.close()));
  for (const s of servers.splice(0)) s.stop();
});

async function relay(): Promise<{ server: InspectorServer; port: number }> {
  const [port] = await freePorts(1);
  const server = await startInspectorServer({ port: port! });
  servers.push(server);
  return { server, port: port! };
}

async function open(url: string, headers: Record<string, string> = {}): Promise<Recorder> {
  const r = await record(url, headers);
  recorders.push(r);
  return r;
}

const event = (n: number) => ({
  type: '@xstate.event',
  sessionId: `node#1/system/x`,
  event: { type: `e${n}` },
});

describe('doyen inspector: the relay', () => {
  it('binds 127.0.0.1 by default: another local address is refused', async () => {
    const { server, port } = await relay();
    expect(server.relay.address.address).toBe('127.0.0.1');
    expect(server.url).toBe(`ws://127.0.0.1:${port}`);
    // positive control: loopback answers
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.2:${port}/`)).rejects.toThrow();
  });

  it('the CLI binds 127.0.0.1 unless --host says otherwise', async () => {
    const [a, b] = await freePorts(2);
    const byDefault = runCli(['inspector', '--port', String(a)]);
    const elsewhere = runCli(['inspector', '--port', String(b), '--host', '127.0.0.2']);
    children.push(byDefault, elsewhere);
    await eventually(() => byDefault.logs.some((l) => l.includes(`on 127.0.0.1:${a}`)), {
      timeoutMs: 20_000,
      what: 'the default relay up',
    });
    await eventually(() => elsewhere.logs.some((l) => l.includes(`on 127.0.0.2:${b}`)), {
      timeoutMs: 20_000,
      what: 'the --host relay up',
    });
    expect((await fetch(`http://127.0.0.1:${a}/`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.2:${a}/`)).rejects.toThrow();
    expect((await fetch(`http://127.0.0.2:${b}/`)).status).toBe(200);
  });

  it('refuses viewers of a foreign origin and browsers posing as nodes; its own page origin may watch', async () => {
    const { server, port } = await relay();
    const base = `ws://127.0.0.1:${port}`;
    expect(await upgradeStatus(`${base}/viewer`, { origin: 'http://evil.example' })).toBe(403);
    // DNS rebinding: the attacker's own name as origin and host
    expect(
      await upgradeStatus(`${base}/viewer`, {
        origin: `http://evil.example:${port}`,
        host: `evil.example:${port}`,
      }),
    ).toBe(403);
    // any page, even the relay's own, is a viewer: on the node path it is refused
    expect(await upgradeStatus(base, { origin: 'http://evil.example' })).toBe(403);
    expect(await upgradeStatus(base, { origin: `http://127.0.0.1:${port}` })).toBe(403);
    expect(server.relay.counters).toMatchObject({ foreignOrigin: 2, browserAsNode: 2 });
    // positive control: the page's own origins watch, a node (no Origin) sends
    expect(await upgradeStatus(`${base}/viewer`, { origin: `http://127.0.0.1:${port}` })).toBe(101);
    expect(await upgradeStatus(`${base}/viewer`, { origin: `http://localhost:${port}` })).toBe(101);
    expect(await upgradeStatus(base)).toBe(101);
  });

  it("relays only nodes' events, to viewers only; what a viewer sends is neither relayed nor replayed", async () => {
    const { server, port } = await relay();
    const base = `ws://127.0.0.1:${port}`;
    const origin = { origin: `http://127.0.0.1:${port}` };
    const viewerA = await open(`${base}/viewer`, origin);
    const viewerB = await open(`${base}/viewer`, origin);
    const nodeA = await open(base);
    const nodeB = await open(base);

    // a viewer injects a forged event: nobody gets it
    viewerA.ws.send(JSON.stringify({ ...event(666), forged: true }));
    await eventually(() => server.relay.counters.viewerFrames === 1, { what: 'the viewer frame seen' });
    // a node's event reaches both viewers (the positive control), not the other node
    nodeA.ws.send(JSON.stringify(event(1)));
    await viewerA.waitFor((m) => m.event?.type === 'e1', 'e1 at viewer A');
    await viewerB.waitFor((m) => m.event?.type === 'e1', 'e1 at viewer B');
    // garbage from a node is dropped and counted
    nodeA.ws.send('not json');
    nodeA.ws.send(JSON.stringify({ type: 'something-else' }));
    await eventually(() => server.relay.counters.notAnEvent === 2, { what: 'two non-events dropped' });
    nodeA.ws.send(JSON.stringify(event(2)));
    await viewerB.waitFor((m) => m.event?.type === 'e2', 'e2 at viewer B');
    expect(viewerB.messages.some((m) => m.forged)).toBe(false);
    expect(viewerB.messages.map((m) => m.event?.type)).toEqual(['e1', 'e2']);
    expect(nodeB.messages).toEqual([]);

    // a viewer that comes later gets the nodes' events replayed, and nothing forged
    const late = await open(`${base}/viewer`, origin);
    await late.waitFor((m) => m.event?.type === 'e2', 'the replay');
    expect(late.messages.map((m) => m.event?.type)).toEqual(['e1', 'e2']);
    // a node that comes later gets nothing
    const lateNode = await open(base);
    nodeA.ws.send(JSON.stringify(event(3)));
    await late.waitFor((m) => m.event?.type === 'e3', 'e3 at the late viewer');
    expect(lateNode.messages).toEqual([]);
  });

  it('closes a node connection that sends a frame over 1 MiB (1009); a frame under it is relayed', async () => {
    const { port } = await relay();
    const base = `ws://127.0.0.1:${port}`;
    const viewer = await open(`${base}/viewer`);
    const node = await open(base);
    // positive control: a 512 KiB event goes through
    node.ws.send(JSON.stringify({ ...event(1), pad: 'x'.repeat(512 * 1024) }));
    await viewer.waitFor((m) => m.event?.type === 'e1', 'the 512 KiB event');
    const closed = new Promise<number>((resolve) => node.ws.once('close', (code) => resolve(code)));
    node.ws.send(JSON.stringify({ ...event(2), pad: 'x'.repeat(2 * 1024 * 1024) }));
    expect(await closed).toBe(1009);
    expect(viewer.messages.some((m) => m.event?.type === 'e2')).toBe(false);
    expect(node.ws.readyState).toBe(WebSocket.CLOSED);
  });
});
