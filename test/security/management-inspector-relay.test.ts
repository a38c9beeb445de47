import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type InspectorServer, startInspectorServer } from '../../packages/doyen/src/inspector/index.js';
import { type Recorder, record, upgradeStatus } from '../inspector/support.js';
import { runCli } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { inspectorRunsClosedAfterEach } from '../support/inspector-runs.js';
import { eventually } from '../support/wait.js';

const { servers, recorders, children } = inspectorRunsClosedAfterEach();

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

describe('doyen inspector: the relay bounds what it queues for a viewer', () => {
  /** A viewer that stops reading: its socket is paused, so the kernel buffers fill and the relay's queue grows. */
  async function sleepingViewer(url: string): Promise<Recorder> {
    const viewer = await open(url);
    (viewer.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    return viewer;
  }

  const FRAME_PAD = 'x'.repeat(64 * 1024);
  const FRAMES = 400; // 25 MiB in all

  async function flood(options: {
    maxViewerBufferBytes?: number;
  }): Promise<{ server: InspectorServer; reader: Recorder; sleeper: Recorder; peak: number }> {
    const [port] = await freePorts(1);
    const server = await startInspectorServer({ port: port!, ...options });
    servers.push(server);
    const base = `ws://127.0.0.1:${port}`;
    const reader = await open(`${base}/viewer`);
    const sleeper = await sleepingViewer(`${base}/viewer`);
    const node = await open(base);
    let peak = 0;
    for (let n = 0; n < FRAMES; n++) {
      node.ws.send(JSON.stringify({ ...event(n), pad: FRAME_PAD }));
      // let the relay take the frames in, as a node sending steadily would
      if (n % 20 === 19) {
        await new Promise((r) => setTimeout(r, 10));
        peak = Math.max(peak, server.relay.viewerBufferedBytes);
      }
    }
    await reader.waitFor(
      (m) => m.event?.type === `e${FRAMES - 1}`,
      'the last event at the reading viewer',
      0,
      30_000,
    );
    peak = Math.max(peak, server.relay.viewerBufferedBytes);
    return { server, reader, sleeper, peak };
  }

  it('a viewer that never reads is closed (counted, logged) and the queue stays under its budget; a reading viewer gets everything', async () => {
    const budget = 4 * 1024 * 1024;
    const { server, reader, sleeper, peak } = await flood({ maxViewerBufferBytes: budget });
    expect(server.relay.counters.slowViewers).toBe(1);
    expect(server.relay.viewerCount).toBe(1);
    // the reading viewer's share plus the sleeper's, each under its budget
    expect(peak).toBeLessThanOrEqual(2 * budget);
    // woken up, the sleeper finds its connection closed, short of the events it did not read
    const closed = new Promise<number>((resolve) => sleeper.ws.once('close', (code) => resolve(code)));
    (sleeper.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    // 1008 with the reason when the close frame got through, 1006 when the connection was cut
    expect([1008, 1006]).toContain(await closed);
    expect(sleeper.messages.length).toBeLessThan(FRAMES);
    // the reading viewer (positive control for delivery) got every event, in order
    const got = reader.messages.map((m) => m.event?.type);
    expect(got).toEqual(Array.from({ length: FRAMES }, (_, n) => `e${n}`));
  }, 60_000);

  it('positive control: with no budget the sleeping viewer holds the relay’s memory (tens of MiB queued)', async () => {
    const { server, reader, peak } = await flood({ maxViewerBufferBytes: Number.POSITIVE_INFINITY });
    expect(server.relay.counters.slowViewers).toBe(0);
    expect(server.relay.viewerCount).toBe(2);
    expect(peak).toBeGreaterThan(16 * 1024 * 1024);
    expect(reader.messages).toHaveLength(FRAMES);
  }, 60_000);

  it(`at most maxViewers viewers: a newer one takes the oldest one's place`, async () => {
    const [port] = await freePorts(1);
    const server = await startInspectorServer({ port: port!, maxViewers: 2 });
    servers.push(server);
    const base = `ws://127.0.0.1:${port}`;
    const first = await open(`${base}/viewer`);
    const closed = new Promise<number>((resolve) => first.ws.once('close', (code) => resolve(code)));
    await open(`${base}/viewer`);
    const third = await open(`${base}/viewer`);
    expect(await closed).toBe(1008);
    expect(server.relay.viewerCount).toBe(2);
    expect(server.relay.counters.viewersReplaced).toBe(1);
    const node = await open(base);
    node.ws.send(JSON.stringify(event(1)));
    await third.waitFor((m) => m.event?.type === 'e1', 'the newest viewer served');
  });
});
