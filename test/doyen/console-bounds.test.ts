import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleGatherer } from '../../packages/doyen/src/console/console-gatherer.js';
import { HistoryBuffer } from '../../packages/doyen/src/console/console-history.js';
import type { WireView } from '../../packages/doyen/src/console/console-messages.js';
import { ConsoleViewers, type ViewerClosed } from '../../packages/doyen/src/console/console-viewers.js';
import type { ConsoleHistory } from '../../packages/doyen/src/console/node-view.js';
import { nodeConfigProblems } from '../../packages/doyen/src/node-config.js';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * What the console keeps and queues is bounded: the history by age and by bytes (a cap of
 * Infinity is the positive control: the same feed grows it), and a viewer that stops reading
 * the event stream is closed instead of growing the node's memory.
 */
const KEY = '127.0.0.1:2552#a1';

function viewAt(at: number, version: number): WireView {
  return {
    key: KEY,
    address: '127.0.0.1:2552',
    roles: [],
    incarnation: 1,
    at,
    membershipVersion: version,
    members: [{ key: KEY, address: '127.0.0.1:2552', status: 'up', roles: [], ageRank: 0 }],
    unreachable: [],
    reachability: [],
    sbr: { strategy: 'keep-majority', stableInMs: null },
    singletons: [],
    machines: [],
  };
}

/** Feeds `count` views and events one virtual second apart; returns the history's export. */
function feed(history: { maxAgeMs: number; maxBytes: number }, count: number) {
  let now = 1_000_000;
  const gatherer = new ConsoleGatherer(
    { historyMs: history.maxAgeMs, historyBytes: history.maxBytes },
    () => now,
  );
  for (let i = 0; i < count; i++) {
    now += 1000;
    gatherer.receive(
      KEY,
      { view: viewAt(now, i), events: [{ at: now, event: 'member.up', fields: { n: i } }] },
      () => true,
    );
  }
  return { gatherer, exported: gatherer.history.export(), now };
}

describe('console history caps', () => {
  it('keeps at most historyMs of frames, starting from the base view (positive control: Infinity keeps all)', () => {
    const { exported, now } = feed({ maxAgeMs: 60_000, maxBytes: Number.POSITIVE_INFINITY }, 600);
    const events = exported.frames.filter((f) => f.kind === 'event');
    expect(events.length).toBeLessThanOrEqual(61);
    expect(exported.from).toBeGreaterThanOrEqual(now - 61_000);
    // the replay starts from the state at `from`: the base view of the node comes first
    expect(exported.frames[0]!.kind).toBe('view');
    expect(exported.frames[0]!.at).toBe(exported.from);
    const all = feed(
      { maxAgeMs: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY },
      600,
    ).exported;
    expect(all.frames.filter((f) => f.kind === 'event').length).toBe(600);
  });

  it('keeps at most historyBytes (positive control: Infinity grows with the feed)', () => {
    const cap = 64 * 1024;
    const capped = feed({ maxAgeMs: Number.POSITIVE_INFINITY, maxBytes: cap }, 2000);
    expect(capped.gatherer.history.bytes).toBeLessThanOrEqual(cap);
    expect(JSON.stringify(capped.exported).length).toBeLessThan(cap * 1.1);
    const open = feed({ maxAgeMs: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY }, 2000);
    expect(open.gatherer.history.bytes).toBeGreaterThan(cap * 10);
    expect(open.gatherer.history.size).toBe(4000);
  });

  it('a base view over the size cap by itself goes too', () => {
    let now = 0;
    const h = new HistoryBuffer(10, 100, () => now);
    h.add({ at: 0, kind: 'view', view: { ...viewAt(0, 1), stale: false } });
    now = 1000;
    h.trim();
    expect(h.bytes).toBe(0);
    expect(h.export().frames).toEqual([]);
  });
});

describe('console config', () => {
  it('refuses caps that are not numbers above 0; takes positive ones and Infinity', () => {
    const problems = (console: object) =>
      nodeConfigProblems({ cluster: 'c', host: '127.0.0.1', port: 1, console } as never).filter(
        (p) => p.setting === 'console',
      );
    expect(problems({ historyMs: 0 }).map((p) => p.message)).toEqual([
      'console.historyMs must be a number above 0, got 0',
    ]);
    expect(problems({ historyBytes: '16MB' })).toHaveLength(1);
    expect(problems({ historyMs: 60_000, historyBytes: Number.POSITIVE_INFINITY, enabled: false })).toEqual(
      [],
    );
  });
});

describe('console history on a node', () => {
  const nodes = nodesClosedAfterEach();

  it('is bounded by console.historyBytes from the node config (positive control: Infinity)', async () => {
    const historyOf = async (historyBytes: number) => {
      const { httpPort } = await startLocalNode(
        { cluster: 'console-history', partitions: { count: 64 }, console: { historyBytes } },
        {},
        nodes,
      );
      const url = `http://127.0.0.1:${httpPort}/console/history`;
      await fetch(url); // the first console request starts the gathering
      // views of a 64-partition table and 1 s liveness: a few KiB each, every change
      await new Promise((r) => setTimeout(r, 2500));
      const response = await fetch(`${url}?download=1`);
      expect(response.headers.get('content-disposition')).toMatch(
        /^attachment; filename="doyen-console-.*\.json"$/,
      );
      return JSON.stringify((await response.json()) as ConsoleHistory).length;
    };
    const cap = 2000;
    expect(await historyOf(cap)).toBeLessThan(cap + 200);
    // one view of this lone node is ~4 KB: over the cap alone
    expect(await historyOf(Number.POSITIVE_INFINITY)).toBeGreaterThan(cap + 1000);
  }, 20_000);
});

describe('console viewers', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  async function serve(limits: ConstructorParameters<typeof ConsoleViewers>[0]) {
    const closed: ViewerClosed[] = [];
    const viewers = new ConsoleViewers(limits, (reason) => closed.push(reason));
    const server = createServer((request, response) =>
      viewers.add(request.socket.remoteAddress ?? '?', response),
    );
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    /** A viewer that connects and never reads. */
    const sleeper = () =>
      new Promise<IncomingMessage>((resolve) =>
        get({ host: '127.0.0.1', port, path: '/console/stream' }, (res) => {
          res.pause();
          resolve(res);
        }),
      );
    return { viewers, closed, sleeper };
  }

  const burst = (viewers: ConsoleViewers) => {
    const payload = 'x'.repeat(256 * 1024);
    for (let i = 0; i < 80; i++) viewers.broadcast('view', { key: KEY, payload });
  };

  it('closes a viewer that does not read (positive control: with no cap it stays and its backlog grows)', async () => {
    const capped = await serve({ maxViewerBufferBytes: 1024 * 1024 });
    await capped.sleeper();
    await eventually(() => capped.viewers.size === 1, { what: 'the viewer admitted' });
    burst(capped.viewers);
    expect(capped.closed).toEqual(['slow']);
    expect(capped.viewers.size).toBe(0);
    capped.viewers.close();

    const open = await serve({ maxViewerBufferBytes: Number.POSITIVE_INFINITY });
    await open.sleeper();
    await eventually(() => open.viewers.size === 1, { what: 'the viewer admitted' });
    burst(open.viewers);
    expect(open.closed).toEqual([]);
    expect(open.viewers.size).toBe(1);
    open.viewers.close();
  });

  it('a viewer past the cap closes the oldest one', async () => {
    const { viewers, closed, sleeper } = await serve({ maxViewers: 2, maxViewersPerClient: 2 });
    const first = await sleeper();
    await sleeper();
    await eventually(() => viewers.size === 2, { what: 'two viewers' });
    const ended = new Promise((r) => first.on('end', r).resume());
    await sleeper();
    await ended;
    expect(closed).toEqual(['replaced']);
    await eventually(() => viewers.size === 2, { what: 'still two viewers' });
    viewers.close();
  });
});
