// `pnpm bench console-page [--nodes=50] [--incidents=10] [--old=DIR]`: what the console page itself
// costs at N nodes, without N node processes (issue 30: at 50 nodes the page, not the node, held
// updates back). A local server plays the serving node with synthetic views (N members, the
// protocol machines with their transitions, 271 partitions) and a history of HISTORY_FRAMES
// frames; Debian's Chromium loads the page. Figures:
//  - first paint: navigation start → body[data-ready=1];
//  - per incident (one member reported unreachable, then every node's view changes, as after a
//    kill): the decisive frame written → the page's handler got it → the matrix cell red;
//  - the renderer's CPU per incident (Chrome's Performance metrics: script, style, layout), which
//    the load of a shared machine distorts far less than wall-clock times.
// The stream carries changes as deltas (as the serving node does), interleaved with the same page
// sent whole views (`wholeViews`, as before): an A/B. The serving node's own CPU per incident and
// the bytes, whole views against deltas, are measured in-process first (`servingSide`).
// --old=DIR also measures the page files in DIR (e.g. a `git show HEAD:…` copy), fed whole views.
import { EventEmitter } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type CDPSession, chromium } from 'playwright-core';
import { ConsoleGatherer } from '../packages/doyen/src/console/console-gatherer.js';
import {
  readViewDelta,
  readWireView,
  type WireView,
} from '../packages/doyen/src/console/console-messages.js';
import { ConsoleViewers, streamDelta } from '../packages/doyen/src/console/console-viewers.js';
import type { NodeView } from '../packages/doyen/src/console/node-view.js';
import { applyDelta, diffView, type ViewDelta } from '../packages/doyen/src/console/view-delta.js';
import { median, printResult } from './lib/stats.js';

const CHROMIUM = process.env.DOYEN_CHROMIUM ?? '/usr/bin/chromium';
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const N = Number(arg('nodes') ?? 50);
const INCIDENTS = Number(arg('incidents') ?? 10);
const OLD = arg('old');
/** `--profile=FILE`: the renderer's CPU profile over the incidents of the first round with deltas (Chrome DevTools format). */
const PROFILE = arg('profile');
const NEW = fileURLToPath(new URL('../packages/doyen/console/', import.meta.url));
const HISTORY_FRAMES = 2000;
/** Events the state holds, as after a 50-node cluster formed (each node logs member.up for each). */
const STATE_EVENTS = 2500;
const MACHINES = [
  'membership',
  'failure-detector',
  'downing',
  'sbr-checker',
  'gossip',
  'heartbeat',
  'singleton-manager-allocator',
];
const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

const T0 = Date.now();
const keys = Array.from({ length: N }, (_, i) => `127.0.0.1:${40000 + i}#${(1e6 + i).toString(16)}`);

/** Node `i`'s view, with `unreachable` reported by it (observer) about the subjects given. */
function viewOf(i: number, at: number, unreachable: readonly string[] = []): NodeView {
  const key = keys[i]!;
  return {
    key,
    address: key.split('#')[0]!,
    name: `n${i}`,
    roles: ['dc-default'],
    incarnation: 1,
    upSince: at - 60_000,
    at,
    stale: false,
    membershipVersion: 100 + unreachable.length,
    members: keys.map((k, r) => ({
      key: k,
      address: k.split('#')[0]!,
      status: 'up',
      roles: ['dc-default'],
      ageRank: r,
    })),
    coordinator: keys[0]!,
    successor: keys[1]!,
    unreachable: [...unreachable],
    reachability: unreachable.map((subject) => ({ observer: key, subject, status: 'unreachable' as const })),
    sbr: {
      strategy: 'keep-majority',
      state: unreachable.length ? 'unstable.waiting' : 'stable',
      stableInMs: unreachable.length ? 1000 : null,
    },
    singletons: [{ name: 'allocator', host: keys[0]!.split('#')[0]!, runsHere: i === 0, state: 'running' }],
    partitions: {
      version: 7,
      owners: Array.from({ length: 271 }, (_, p) => keys[p % N]!),
      backups: Array.from({ length: 271 }, (_, p) => [keys[(p + 1) % N]!]),
    },
    machines: MACHINES.map((m) => ({
      id: `/system/${m}`,
      state: unreachable.length ? { up: 'unstable' } : { up: 'stable' },
      // the older transitions stay as they were; an incident adds one
      transitions: Array.from({ length: 10 }, (_, t) => ({
        at: (t === 0 && unreachable.length ? at : T0) - 1000 * t,
        event: 'transition',
        state: { up: t % 2 ? 'stable' : 'unstable' },
      })),
    })),
  };
}

function serve(dir: string, state: () => unknown, history: unknown, streams: Set<ServerResponse>) {
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    const file =
      path === '/console' ? 'index.html' : path.startsWith('/console/assets/') ? path.slice(16) : undefined;
    if (file !== undefined && TYPES[file]) {
      res.writeHead(200, { 'content-type': TYPES[file]!, 'cache-control': 'no-cache' });
      res.end(readFileSync(`${dir}/${file}`));
    } else if (path === '/console/state') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(state()));
    } else if (path === '/console/history') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(history));
    } else if (path === '/console/stream') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.write(': console\n\n');
      streams.add(res);
      res.once('close', () => streams.delete(res));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise<{ url: string; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/console`,
        close: () => {
          for (const s of streams) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

const INIT = `(() => {
  window.__arrived = {};
  window.__needles = {};
  const ES = window.EventSource;
  const listen = ES.prototype.addEventListener;
  ES.prototype.addEventListener = function (type, fn, ...rest) {
    return listen.call(this, type, function (m) {
      for (const [name, needle] of Object.entries(window.__needles))
        if (window.__arrived[name] === undefined && m.data.includes(needle)) window.__arrived[name] = Date.now();
      return fn.call(this, m);
    }, ...rest);
  };
  const mark = () => {
    if (window.__ready === undefined && document.body && document.body.dataset.ready === '1') window.__ready = performance.now();
  };
  new MutationObserver(mark).observe(document, { subtree: true, childList: true, attributes: true });
})();`;

/** The renderer's CPU so far (ms): script, style recalculation, layout (Chrome's Performance metrics). */
async function metrics(cdp: CDPSession) {
  const { metrics: list } = (await cdp.send('Performance.getMetrics')) as {
    metrics: { name: string; value: number }[];
  };
  const get = (name: string) => (list.find((m) => m.name === name)?.value ?? 0) * 1000;
  return { script: get('ScriptDuration'), style: get('RecalcStyleDuration'), layout: get('LayoutDuration') };
}

async function measure(
  browser: Awaited<ReturnType<typeof chromium.launch>>,
  dir: string,
  deltas: boolean,
  profile?: string,
) {
  const at0 = Date.now() - 600_000;
  let now = Date.now();
  // revisions as the serving node's gatherer numbers its views (the stream's deltas go between them)
  let rev = 0;
  const revised = (v: NodeView): NodeView => ({ ...v, rev: ++rev });
  const current = new Map(keys.map((k, i) => [k, revised(viewOf(i, now))]));
  /** What the stream carried last per node (the page loaded `current` from the state). */
  const carried = new Map(current);
  let streamBytes = 0;
  const history = {
    from: at0,
    to: now,
    frames: Array.from({ length: HISTORY_FRAMES }, (_, f) => ({
      at: at0 + f * 300,
      kind: 'view',
      view: viewOf(f % N, at0 + f * 300),
    })),
  };
  const formation = Array.from({ length: STATE_EVENTS }, (_, e) => ({
    seq: e + 1,
    at: at0 + e * 10,
    node: keys[e % N],
    event: 'member.up',
    msg: `member.up ${keys[Math.floor(e / N) % N]}`,
    fields: {},
  }));
  const streams = new Set<ServerResponse>();
  const server = await serve(
    dir,
    () => ({
      servedBy: keys[0],
      now: Date.now(),
      nodes: Object.fromEntries(current),
      events: formation,
      historyFrom: at0,
    }),
    history,
    streams,
  );
  const send = (whole: NodeView) => {
    const view = revised(whole);
    current.set(view.key, view);
    const prev = carried.get(view.key);
    carried.set(view.key, view);
    const delta = deltas && prev ? streamDelta(prev, view) : undefined;
    const text = delta
      ? `event: delta\ndata: ${JSON.stringify(delta)}\n\n`
      : `event: view\ndata: ${JSON.stringify(view)}\n\n`;
    streamBytes += text.length;
    for (const s of streams) s.write(text);
  };
  // the timeline: every node logs the fact too (as after a kill: member.unreachable on each)
  let seq = STATE_EVENTS;
  const logged = (node: string, subject: string) => {
    const e = {
      seq: ++seq,
      at: Date.now(),
      node,
      event: 'member.unreachable',
      msg: `member.unreachable ${subject}`,
      fields: { member: { address: subject } },
    };
    for (const s of streams) s.write(`event: timeline\ndata: ${JSON.stringify([e])}\n\n`);
  };
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  await context.addInitScript(INIT);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction('window.__ready !== undefined', undefined, { timeout: 30_000 });
  const firstPaintMs = (await page.evaluate('window.__ready')) as number;
  await page.waitForTimeout(1500);
  if (profile) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
  }
  const incidents: {
    toPageMs: number;
    pageMs: number;
    script: number;
    style: number;
    layout: number;
    bytes: number;
  }[] = [];
  for (let k = 0; k < INCIDENTS; k++) {
    const subject = keys[N - 1 - (k % (N - 1))]!;
    const needle = `"subject":"${subject}","status":"unreachable"`;
    await page.evaluate(`(() => {
      window.__needles = { hit: ${JSON.stringify(needle)} };
      window.__arrived = {};
      window.__shown = undefined;
      const sel = '[data-testid=matrix-cell][data-observer="${keys[0]}"][data-subject="${subject}"][data-state=unreachable]';
      const check = () => { if (window.__shown === undefined && document.querySelector(sel)) window.__shown = Date.now(); };
      new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true });
    })()`);
    const before = await metrics(cdp);
    const bytesBefore = streamBytes;
    now = Date.now();
    // the serving node's own view first (it logged the event), then every other node's, as gossip spreads it
    const first = viewOf(0, now, [subject]);
    const written = Date.now();
    send(first);
    for (let i = 1; i < N; i++) {
      send(viewOf(i, Date.now(), i % 3 === 0 ? [subject] : []));
      logged(keys[i]!, subject);
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    const bytes = streamBytes - bytesBefore;
    await page.waitForFunction('window.__shown !== undefined', undefined, { timeout: 20_000 });
    await page.waitForTimeout(1200);
    const after = await metrics(cdp);
    const [arrived, shown] = (await page.evaluate('[window.__arrived.hit, window.__shown]')) as [
      number,
      number,
    ];
    incidents.push({
      toPageMs: arrived - written,
      pageMs: shown - arrived,
      script: Math.round(after.script - before.script),
      style: Math.round(after.style - before.style),
      layout: Math.round(after.layout - before.layout),
      bytes,
    });
    // back to healthy for the next incident
    for (let i = 0; i < N; i++) send(viewOf(i, Date.now()));
    await page.waitForTimeout(800);
  }
  if (profile) {
    const { profile: taken } = (await cdp.send('Profiler.stop')) as { profile: unknown };
    writeFileSync(profile, JSON.stringify(taken));
  }
  await context.close();
  server.close();
  const med = (f: (x: (typeof incidents)[number]) => number) =>
    Math.round(median(incidents.map(f)) ?? Number.NaN);
  return {
    firstPaintMs: Math.round(firstPaintMs),
    frameToDomMs: med((x) => x.toPageMs + x.pageMs),
    frameToPageMs: med((x) => x.toPageMs),
    pageToDomMs: med((x) => x.pageMs),
    streamBytesPerIncident: med((x) => x.bytes),
    cpuPerIncidentMs: {
      script: med((x) => x.script),
      style: med((x) => x.style),
      layout: med((x) => x.layout),
    },
  };
}

/**
 * The serving node's own work for one incident (every one of N members' views changing), whole
 * views against deltas, in this process's CPU time (what load distorts least): each member's
 * update read at the wire boundary (the bytes: its JSON), applied, and encoded for the stream.
 * The members' side (making the delta) is counted apart: each member does it once for its view.
 */
function servingSide() {
  const t0 = Date.now();
  const before = keys.map((_, i) => viewOf(i, t0));
  const after = keys.map((_, i) => viewOf(i, t0 + 1000, i % 3 === 0 ? [keys[N - 1]!] : []));
  const wire = (v: NodeView): WireView => {
    const { stale: _s, rev: _r, ...rest } = v;
    return rest;
  };
  const cpu = (reps: number, f: () => void) => {
    for (let r = 0; r < 5; r++) f();
    const t = process.cpuUsage();
    for (let r = 0; r < reps; r++) f();
    const u = process.cpuUsage(t);
    return +((u.user + u.system) / 1000 / reps).toFixed(2);
  };
  const deltas = after.map((v, i) => diffView(wire(before[i]!), wire(v), 1)!);
  let bytesWhole = 0;
  let bytesDelta = 0;
  for (let i = 0; i < N; i++) {
    bytesWhole += JSON.stringify(wire(after[i]!)).length;
    bytesDelta += JSON.stringify(deltas[i]).length;
  }
  const reps = 40;
  return {
    wireBytes: { wholeViews: bytesWhole, deltas: bytesDelta },
    servingCpuMs: {
      wholeViews: cpu(reps, () => {
        for (let i = 0; i < N; i++) {
          const v = readWireView(JSON.parse(JSON.stringify(wire(after[i]!))), 'view');
          JSON.stringify({ ...v, stale: false, rev: 2 });
        }
      }),
      deltas: cpu(reps, () => {
        for (let i = 0; i < N; i++) {
          const d = readViewDelta(JSON.parse(JSON.stringify(deltas[i])), 'delta');
          const applied = applyDelta({ ...before[i]!, rev: 1 }, 1, d);
          if (!('view' in applied)) throw new Error('delta did not apply');
          JSON.stringify(streamDelta({ ...before[i]!, rev: 1 }, { ...applied.view, rev: 2 }));
        }
      }),
    },
    // the serving node's whole path for the deltas, as it runs it: read at the wire boundary,
    // gathered (applied, kept in the history, which measures each frame's JSON) and streamed to
    // one viewer, the incident and the way back alternating
    gatheredAndStreamedMs: gatheredAndStreamed(before, deltas, wire, cpu),
    memberCpuMsPerView: {
      wholeViewCompare: cpu(reps * 10, () => {
        JSON.stringify(wire(after[1]!)) === JSON.stringify(wire(before[1]!));
      }),
      delta: cpu(reps * 10, () => diffView(wire(before[1]!), wire(after[1]!), 1)),
    },
  };
}

/** CPU per incident of the serving node's gatherer and stream (see servingSide). */
function gatheredAndStreamed(
  before: NodeView[],
  deltas: ViewDelta[],
  wire: (v: NodeView) => WireView,
  cpu: (reps: number, f: () => void) => number,
): number {
  const gatherer = new ConsoleGatherer({ historyMs: 600_000, historyBytes: 16 * 1024 * 1024 });
  const viewers = new ConsoleViewers({ coalesceMs: 0, pingMs: 600_000 }, () => {});
  gatherer.listen(viewers);
  const sink = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    writeHead: () => sink,
    write: () => true,
    end: () => {},
    destroy: () => {},
  });
  viewers.add('127.0.0.1', sink as unknown as ServerResponse);
  const member = () => true;
  for (let i = 0; i < N; i++)
    gatherer.receive(keys[i]!, { view: wire(before[i]!), version: 1, events: [] }, member);
  // the way back from each incident: the delta from `after` to `before`, made once
  const back = deltas.map((d, i) => {
    const applied = applyDelta(wire(before[i]!), 1, d);
    if (!('view' in applied)) throw new Error('delta did not apply');
    return diffView(applied.view, wire(before[i]!), 2)!;
  });
  const texts = [deltas, back].map((list) => list.map((d) => JSON.stringify(d)));
  let version = 1;
  let round = 0;
  const ms = cpu(40, () => {
    const list = texts[round++ % 2]!;
    for (let i = 0; i < N; i++) {
      const d = readViewDelta(JSON.parse(list[i]!), 'delta');
      gatherer.receive(
        keys[i]!,
        { delta: { ...d, base: version, version: version + 1 }, events: [] },
        member,
      );
    }
    version++;
    (viewers as unknown as { flush(): void }).flush();
  });
  viewers.close();
  return ms;
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
// deltas: the stream carries each changed view as its change (as the serving node does);
// wholeViews: the same page sent every view whole (before the deltas), interleaved with it
const variants: [name: string, dir: string, deltas: boolean][] = [
  ['deltas', NEW, true],
  ['wholeViews', NEW, false],
  ...(OLD ? [['old', OLD, false] as [string, string, boolean]] : []),
];
const results: Record<string, unknown[]> = Object.fromEntries(variants.map(([name]) => [name, []]));
const serving = servingSide();
process.stderr.write(`N=${N} serving side per incident: ${JSON.stringify(serving)}\n`);
try {
  for (let round = 0; round < 2; round++)
    for (const [name, dir, deltas] of variants) {
      const r = await measure(browser, dir, deltas, round === 0 && deltas ? PROFILE : undefined);
      process.stderr.write(`N=${N} ${name}: ${JSON.stringify(r)}\n`);
      results[name]!.push(r);
    }
} finally {
  await browser.close();
}
printResult({ bench: 'console-page', nodes: N, incidents: INCIDENTS, servingSide: serving, results });
