import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultClusterConfig } from '../../packages/cluster/src/index.js';
import { runConsoleCommand } from '../../packages/doyen/src/console/console-standalone.js';
import type { StreamDelta } from '../../packages/doyen/src/console/console-viewers.js';
import type { ConsoleState, NodeView } from '../../packages/doyen/src/console/node-view.js';
import { applyDelta } from '../../packages/doyen/src/console/view-delta.js';
import {
  createNodeLogger,
  type DoyenNode,
  type Message,
  type NodeConfig,
} from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startLocalNode, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * The cluster console (issue 30), server side: one node's `/console/state` shows every member's
 * own view, gathered over the cluster's authenticated wire by each node's `/system/console`
 * actor; a crashed member turns stale and goes once it left the membership; the event stream
 * pushes a view after a change; a view claiming another node is refused at the boundary.
 */
const nodes = nodesClosedAfterEach();

/** A logger that writes (so the console's tap sees the `event` lines) to nowhere. */
const quietLogger = () =>
  createNodeLogger({ level: 'info', destination: new Writable({ write: (_c, _e, done) => done() }) });

const CONFIG: Partial<NodeConfig> = {
  partitions: { count: 16 },
  // the resolver waits long enough for the view of a killed member to be seen stale first
  clusterOptions: { sbr: { ...defaultClusterConfig.sbr, stableAfterMs: 4000 } },
};

async function threeNodes(): Promise<{
  a: DoyenNode;
  b: DoyenNode;
  c: DoyenNode;
  httpPort: number;
  secret: string;
}> {
  const secret = randomBytes(16).toString('hex');
  const cluster = `console-${randomBytes(3).toString('hex')}`;
  const first = await startLocalNode({ cluster, secret, ...CONFIG }, { logger: quietLogger() }, nodes);
  const [pb, pc] = await freePorts(2);
  const b = await startMemberNode(
    pb!,
    first.port,
    { cluster, secret, ...CONFIG },
    { logger: quietLogger() },
    nodes,
  );
  const c = await startMemberNode(
    pc!,
    first.port,
    { cluster, secret, ...CONFIG },
    { logger: quietLogger() },
    nodes,
  );
  await eventually(
    () =>
      [first.node, b, c].every(
        (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 3,
      ),
    { what: '3 up members everywhere' },
  );
  return { a: first.node, b, c, httpPort: first.httpPort, secret };
}

async function state(httpPort: number): Promise<ConsoleState> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/console/state`);
  expect(response.status).toBe(200);
  return (await response.json()) as ConsoleState;
}

/** A raw GET with exactly these headers (fetch would not send a foreign Host). */
function rawGet(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    r.on('error', reject);
    r.end();
  });
}

describe('the cluster console gathers every member over the wire', () => {
  it("shows all three members' own views; a killed member turns stale, then leaves the view", async () => {
    const { a, b, c, httpPort } = await threeNodes();
    const keys = [a, b, c].map((n) => n.cluster.self.key);
    const s = await eventually(
      async () => {
        const st = await state(httpPort);
        return keys.every((k) => st.nodes[k] && !st.nodes[k].stale && st.nodes[k].members.length === 3) && st;
      },
      { what: 'three views gathered', timeoutMs: 15_000 },
    );
    expect(s.servedBy).toBe(a.cluster.self.key);
    for (const [i, n] of [a, b, c].entries()) {
      const view: NodeView = s.nodes[keys[i]!]!;
      // each view is the member's own, made by it (not the serving node's idea of it)
      expect(view.key).toBe(n.cluster.self.key);
      expect(view.address).toBe(n.cluster.self.address);
      expect(view.coordinator).toBe(a.cluster.self.key);
      expect(view.successor).toBe(b.cluster.self.key);
      expect(view.members.map((m) => m.ageRank).sort()).toEqual([0, 1, 2]);
      expect(view.machines.map((m) => m.id)).toContain('/system/membership');
      expect(view.sbr.strategy).toBeTruthy();
    }
    // the partition table as B holds it, and the timeline has the members' logged events
    await eventually(async () => (await state(httpPort)).nodes[keys[1]!]?.partitions?.owners.length === 16, {
      what: "B's partition table",
    });
    expect(s.events.some((e) => e.event.startsWith('member.'))).toBe(true);

    // kill -9 of C: stale within seconds, gone once the resolver downed and removed it
    await c.close();
    await eventually(async () => (await state(httpPort)).nodes[keys[2]!]?.stale === true, {
      what: "C's view stale",
      timeoutMs: 8000,
    });
    const afterKill = await state(httpPort);
    // its last word stays visible while it is stale; B observes it unreachable meanwhile
    expect(afterKill.nodes[keys[2]!]!.members.length).toBe(3);
    await eventually(async () => (await state(httpPort)).nodes[keys[2]!] === undefined, {
      what: "C's view gone after the downing",
      timeoutMs: 20_000,
    });
    const history = (await (await fetch(`http://127.0.0.1:${httpPort}/console/history`)).json()) as {
      frames: { kind: string; view?: NodeView }[];
    };
    // the replay still has C before the kill
    expect(history.frames.some((f) => f.kind === 'view' && f.view!.key === keys[2] && !f.view!.stale)).toBe(
      true,
    );
  }, 60_000);

  it('the event stream starts with every view gathered, then sends a change as a delta on the revision it carried', async () => {
    const { a, httpPort, secret } = await threeNodes();
    // gathered before the viewer comes: the stream must start with them (nothing changes after)
    await eventually(async () => Object.keys((await state(httpPort)).nodes).length === 3, {
      what: 'three views gathered',
    });
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${httpPort}/console/stream`, {
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    let text = '';
    const views: NodeView[] = [];
    const deltaBytes: number[] = [];
    let misapplied = 0;
    const pump = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
        let i = text.indexOf('\n\n');
        while (i >= 0) {
          const frame = text.slice(0, i);
          text = text.slice(i + 2);
          const kind = /^event: (\S+)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (kind === 'view' && data) views.push(JSON.parse(data) as NodeView);
          if (kind === 'delta' && data) {
            // a change from the revision last carried for that node (the page's way)
            const d = JSON.parse(data) as StreamDelta;
            deltaBytes.push(data.length);
            const prev = views.findLast((v) => v.key === d.key);
            const applied = prev && applyDelta(prev, prev.rev!, d);
            if (applied && 'view' in applied)
              views.push({ ...applied.view, rev: d.version, stale: d.stale } as NodeView);
            else misapplied++;
          }
          i = text.indexOf('\n\n');
        }
      }
    })().catch(() => {});
    const selfKey = a.cluster.self.key;
    await eventually(() => new Set(views.map((v) => v.key)).size === 3, {
      what: 'the three views at the start of the stream',
      timeoutMs: 1000,
    });
    expect(views.some((v) => v.key === selfKey && v.members.length === 3)).toBe(true);
    // positive control: no four-member view before the change
    expect(views.some((v) => v.members.length === 4)).toBe(false);
    const [pd] = await freePorts(1);
    const seedPort = Number(a.cluster.self.address.split(':')[1]);
    const cluster = a.system.cluster;
    await startMemberNode(pd!, seedPort, { cluster, secret, ...CONFIG }, {}, nodes);
    await eventually(() => views.some((v) => v.key === selfKey && v.members.length === 4), {
      what: "A's view with the newcomer on the stream",
    });
    // the change came as deltas, each applying on the revision the stream carried before it
    expect(deltaBytes.length).toBeGreaterThan(0);
    expect(misapplied).toBe(0);
    controller.abort();
    await pump;
  }, 40_000);

  it('refuses a view claiming another member (counted), takes one about its sender (positive control)', async () => {
    const { a, b, c, httpPort } = await threeNodes();
    const keys = [a, b, c].map((n) => n.cluster.self.key);
    await eventually(async () => Object.keys((await state(httpPort)).nodes).length === 3, {
      what: 'three views',
    });
    const own = (await state(httpPort)).nodes[keys[1]!]!;
    const forgedView = { ...own, key: keys[2]!, address: c.cluster.self.address, name: 'forged' };
    const { stale: _s, ...forgedWire } = forgedView;
    const consoleOfA = b.system.remoteRef(a.system.node, '/system/console');
    const forged = () => a.system.metrics.value('doyen_wire_forged_total');
    const before = forged();
    // B says the view is about C: the boundary refuses it (the update speaks for B, the view for C)
    consoleOfA.send({
      type: 'console.update',
      from: keys[1],
      view: forgedWire,
      events: [],
    } as unknown as Message);
    // and B claiming to be C altogether
    consoleOfA.send({
      type: 'console.update',
      from: keys[2],
      view: forgedWire,
      events: [],
    } as unknown as Message);
    await eventually(() => forged() >= before + 2, { what: 'both forged updates counted' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await state(httpPort)).nodes[keys[2]!]!.name).not.toBe('forged');
    // positive control: the same route carries B's view about B
    const { stale: _t, ...genuine } = { ...own, name: 'genuine-b', at: Date.now() };
    consoleOfA.send({
      type: 'console.update',
      from: keys[1],
      view: genuine,
      events: [],
    } as unknown as Message);
    await eventually(async () => (await state(httpPort)).nodes[keys[1]!]?.name === 'genuine-b', {
      what: "B's own view taken",
    });
  }, 40_000);

  it('refuses cross-site requests and a foreign Host on every console path', async () => {
    const { httpPort } = await startLocalNode(
      { cluster: 'console-guard', partitions: { count: 0 } },
      {},
      nodes,
    );
    const refused = (reason: string) =>
      nodes[0]!.system.metrics.value('doyen_http_refused_total', { reason });
    for (const path of [
      '/console',
      '/console/state',
      '/console/stream',
      '/console/history',
      '/console/assets/console.js',
    ]) {
      expect(await rawGet(httpPort, path, { 'sec-fetch-site': 'cross-site' }), path).toBe(403);
      expect(await rawGet(httpPort, path, { origin: 'http://evil.example' }), path).toBe(403);
      expect(await rawGet(httpPort, path, { host: `evil.example:${httpPort}` }), path).toBe(403);
    }
    expect(refused('cross-site')).toBe(5);
    expect(refused('origin')).toBe(5);
    expect(refused('host')).toBe(5);
    // positive control: the same requests from the node's own origin are answered
    for (const path of ['/console', '/console/state', '/console/history', '/console/assets/console.js'])
      expect(
        await rawGet(httpPort, path, {
          origin: `http://127.0.0.1:${httpPort}`,
          'sec-fetch-site': 'same-origin',
        }),
        path,
      ).toBe(200);
    expect(await rawGet(httpPort, '/console/assets/../../package.json', {})).toBe(404);
  });
});

describe('doyen console (standalone)', () => {
  const standalone: { stop(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(standalone.splice(0).map((s) => s.stop()));
  });

  it("serves the page itself and relays the console's data to one node", async () => {
    const { node, httpPort } = await startLocalNode(
      { cluster: 'console-standalone', partitions: { count: 0 } },
      {},
      nodes,
    );
    const started = await runConsoleCommand(
      ['--node', `http://127.0.0.1:${httpPort}`, '--port', '0'],
      () => {},
    );
    if ('error' in started) throw new Error(started.error);
    standalone.push(started);
    const base = started.url.replace(/\/console$/, '');
    const page = await fetch(`${base}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(await page.text()).toMatch(/data-testid="replay-slider"/);
    expect((await fetch(`${base}/console/assets/console.js`)).headers.get('content-type')).toMatch(
      /javascript/,
    );
    const key = node.cluster.self.key;
    await eventually(
      async () => ((await (await fetch(`${base}/console/state`)).json()) as ConsoleState).nodes[key],
      {
        what: "the node's own view through the relay",
      },
    );
    const history = await fetch(`${base}/console/history?download=1`);
    expect(history.headers.get('content-disposition')).toMatch(/^attachment/);
    // actions are relayed with the token; this node is read-only, so the node itself refuses
    const down = await fetch(`${base}/cluster/down/${encodeURIComponent(key)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer nope' },
      body: '{}',
    });
    expect(down.status).toBe(403);
    // a foreign Host and another site are refused by the standalone server itself
    const port = Number(new URL(base).port);
    expect(await rawGet(port, '/console/state', { host: `evil.example:${port}` })).toBe(403);
    expect(await rawGet(port, '/console/state', { 'sec-fetch-site': 'cross-site' })).toBe(403);
    // positive control: the same request as the page makes it
    expect(await rawGet(port, '/console/state', {})).toBe(200);
    // nothing else of the node is reachable through it
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  });
});
