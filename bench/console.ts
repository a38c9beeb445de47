// `pnpm bench console [--quick]`: the cluster console's figures (issue 30), against real `doyen node`
// processes (the bundled CLI: run `pnpm build` first) and Debian's Chromium (DOYEN_CHROMIUM):
//  1. page weight: raw and gzip (level 9, as a compressing proxy would send it) of the three files;
//  2. first paint: navigation start → body[data-ready=1] (the first state drawn), and → every
//     member's own view on the page (no matrix cell `unknown`), at 5 and 50 nodes; the first load
//     is cold (the serving node starts gathering on that request), the next ones warm;
//  3. event to screen: the serving node's log time of the event (`member.unreachable` after a
//     kill -9, `member.leaving` after POST /cluster/leave) → the page's DOM showing it (the
//     matrix cell red, the member row no longer up), one clock (same machine), in two stages: to
//     the page (the stream frame holding it reached the page's handler) and on the page (→ DOM),
//     with the stream's frames and bytes meanwhile and the page's long tasks;
//  4. the serving node's CPU (% of one core) and RSS: before anyone opened the console, while 5
//     viewers stream it, and gathering with no viewer left. A viewer is what the page does over
//     HTTP (GET state and history, then the event stream, read to the end) from its own loopback
//     address (127.0.0.2–6: the node keeps at most 4 streams per client address), so the
//     browser's own CPU does not weigh on the node's figures.
//  5. how much of event → screen the serving node and the page's renderer waited for a CPU
//     (run-queue delay from /proc schedstat, console-sched.ts): on 2 cores with N node processes
//     reacting to the same event, the stages' wall-clock times are mostly that wait.
//  6. the whole cluster's CPU (every node's utime + stime summed, /proc) in the second after the
//     kill and after the leave, and in a second with nothing happening, with the wire messages
//     the nodes sent meanwhile (console-cluster-cpu.ts): at 50 nodes on 2 cores that burst is
//     what every stage above waits behind. `--no-console`: the same with nobody ever opening the
//     console; `--profile`: three members' CPU profiles over each window (console-profile.ts).
//  The cold first paint also gives its requests' [sent, first byte, last byte] (`coldStages`).
// --quick: 5 nodes only; --nodes=5,20 other sizes; --fetch-probe also reads the stream with
// fetch() in the page (is EventSource holding frames back?); --browser-nice=N runs every thread
// of Chromium's processes at nice N (e.g. -10, as root) from the live page on: an operator's
// browser on a machine of its own rather than behind the N node processes reacting to the event
// on the same 2 cores (the figures' runs leave it off). Downing is manual (see the node
// arguments). Nodes start one per 200 ms (as bench/scale.ts), `--partitions 0`.
// The last line of stdout is one JSON object; figures sit beside their targets.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { ClusterView } from '../packages/doyen/src/index.js';
import { freePorts } from '../packages/testkit/src/index.js';
import {
  type ClusterCpu,
  clusterCpuWindow,
  messagesBetween,
  messagesSnapshot,
} from './console-cluster-cpu.js';
import { type ProfileSummary, startProfiling } from './console-profile.js';
import { descendants, mainThreadTrace, schedWindow, traceBetween } from './console-sched.js';
import { allUpAt, type CliNode, killCliNodes, spawnCliNode } from './lib/cli-nodes.js';
import { median, printResult } from './lib/stats.js';

const CHROMIUM = process.env.DOYEN_CHROMIUM ?? '/usr/bin/chromium';
const SECRET = 'console-bench-secret-0123456789abcdef';
const TOKEN = 'console-bench-token-0123456789abcdef';
// one start per 200 ms as bench/scale.ts; CONSOLE_BENCH_STAGGER_MS for a host too loaded for that
const STAGGER_MS = Number(process.env.CONSOLE_BENCH_STAGGER_MS ?? 200);
const LOADS = 4;
const VIEWERS = 5;
const SAMPLE_MS = 10_000;
const TARGETS = { firstPaintMsAt50: 500, eventToScreenMs: 100 };
const ASSETS = fileURLToPath(new URL('../packages/doyen/console/', import.meta.url));

/** Joins keep trying (50 nodes starting on 2 cores take longer than the default 10 attempts). */
const CONFIG = join(mkdtempSync(join(tmpdir(), 'doyen-console-bench-')), 'config.json');
writeFileSync(CONFIG, JSON.stringify({ clusterOptions: { maxJoinAttempts: 1000 } }));

const FETCH_PROBE = process.argv.includes('--fetch-probe');
const browserNiceArg = process.argv.find((a) => a.startsWith('--browser-nice='));
const BROWSER_NICE = browserNiceArg ? Number(browserNiceArg.slice('--browser-nice='.length)) : undefined;

/** --browser-nice: every thread of Chromium's processes at that nice (setpriority is per thread). */
function reniceBrowser(nice: number): number {
  let threads = 0;
  for (const { pid } of descendants(process.pid, /chrom/i)) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        setPriority(Number(tid), nice);
        threads++;
      } catch {
        // gone meanwhile, or not allowed (not root): left as it is
      }
    }
  }
  return threads;
}
/** --no-console: the same kill and leave with nobody ever opening the console (the cluster's own CPU burst). */
const NO_CONSOLE = process.argv.includes('--no-console');
/** The cluster-wide CPU window after each incident (ms). */
const INCIDENT_CPU_MS = 1000;
/**
 * --profile: three members (not the serving node, whose latency is measured) run with the
 * inspector on, and each incident's window is profiled on them (console-profile.ts); their CPU
 * then counts the profiler's too.
 */
const PROFILE = process.argv.includes('--profile');
const PROFILED = (n: number) => (PROFILE ? [Math.floor(n / 5), Math.floor(n / 2), n - 3] : []);
const diffOf = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? null : a - b;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number | undefined) => (x === undefined ? undefined : Math.round(x));

function pageWeight(): Record<string, { raw: number; gzip: number }> & {
  total: { raw: number; gzip: number };
} {
  const files = ['index.html', 'console.js', 'console.css'];
  const out: Record<string, { raw: number; gzip: number }> = {};
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const bytes = readFileSync(`${ASSETS}${f}`);
    const z = gzipSync(bytes, { level: 9 }).length;
    out[f] = { raw: bytes.length, gzip: z };
    raw += bytes.length;
    gzip += z;
  }
  return Object.assign(out, { total: { raw, gzip } });
}

/** CPU time (ms) of a process so far, from /proc (utime + stime, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

async function sample(pid: number, ms = SAMPLE_MS): Promise<{ cpuPct: number; rssMb: number }> {
  const before = cpuMs(pid);
  const t0 = Date.now();
  await sleep(ms);
  return {
    cpuPct: +(((cpuMs(pid) - before) / (Date.now() - t0)) * 100).toFixed(2),
    rssMb: +rssMb(pid).toFixed(1),
  };
}

/** GET to the node from `localAddress`, naming the node's own Host (the management Host check). */
function get(
  node: CliNode,
  path: string,
  localAddress: string,
  onData: (n: number) => void,
): { done: Promise<void>; stop: () => void } {
  let stop = () => {};
  const done = new Promise<void>((resolve) => {
    const r = request(
      {
        host: '127.0.0.1',
        port: node.httpPort,
        path,
        localAddress,
        headers: { host: `127.0.0.1:${node.httpPort}` },
      },
      (res) => {
        res.on('data', (c: Buffer) => onData(c.length));
        res.on('end', resolve);
        res.on('error', () => resolve());
      },
    );
    r.on('error', () => resolve());
    r.end();
    stop = () => {
      r.destroy();
      resolve();
    };
  });
  return { done, stop: () => stop() };
}

/** One viewer as the page is one over HTTP: state and history once, then the stream until stopped. */
function viewer(node: CliNode, index: number): { bytes: () => number; stop: () => void } {
  const from = `127.0.0.${2 + index}`;
  let bytes = 0;
  const add = (n: number) => {
    bytes += n;
  };
  let stream: { stop: () => void } | undefined;
  let stopped = false;
  void (async () => {
    await Promise.all([
      get(node, '/console/state', from, add).done,
      get(node, '/console/history', from, add).done,
    ]);
    if (!stopped) stream = get(node, '/console/stream', from, add);
  })();
  return {
    bytes: () => bytes,
    stop: () => {
      stopped = true;
      stream?.stop();
    },
  };
}

/** Marks on the page: when body[data-ready=1] first showed, and when every view did (performance.now()). */
const PAINT_MARKS = `(() => {
  const mark = () => {
    const b = document.body;
    if (!b) return;
    if (window.__ready === undefined && b.dataset.ready === '1') window.__ready = performance.now();
    if (window.__complete === undefined && window.__expect &&
        document.querySelectorAll('[data-testid=member]').length === window.__expect &&
        document.querySelectorAll('[data-testid=matrix-cell][data-state=unknown]').length === 0)
      window.__complete = performance.now();
  };
  new MutationObserver(mark).observe(document, { subtree: true, childList: true, attributes: true });
  // stage timing: when a stream frame holding a watched text arrived (before the page handled
  // it), how many frames and bytes came, and the main thread's long tasks
  window.__needles = {};
  window.__arrived = {};
  window.__carrier = {};
  window.__stream = { frames: 0, bytes: 0 };
  window.__long = [];
  const ES = window.EventSource;
  const listen = ES.prototype.addEventListener;
  ES.prototype.addEventListener = function (type, fn, ...rest) {
    return listen.call(this, type, function (m) {
      const t = Date.now();
      window.__stream.frames++;
      window.__stream.bytes += m.data.length;
      for (const [name, needle] of Object.entries(window.__needles))
        if (window.__arrived[name] === undefined && m.data.includes(needle)) {
          window.__arrived[name] = t;
          // which node's view carried it, when that node built it, when the serving node sent it
          try {
            const d = JSON.parse(m.data);
            window.__carrier[name] = { key: d.key, builtAt: d.at, sentAt: d.sentAt };
          } catch {}
        }
      return fn.call(this, m);
    }, ...rest);
  };
  // when the page had the history (megabytes at 50 nodes: parsed on the main thread after the
  // first paint), so that the event is timed on a page that is done loading
  const fetchPage = window.fetch;
  window.fetch = function (...args) {
    const answer = fetchPage.apply(this, args);
    if (String(args[0]).includes('/console/history'))
      answer.then((r) => {
        const json = r.json;
        r.json = function () {
          return json.call(this).then((v) => {
            window.__history = performance.now();
            return v;
          });
        };
      }, () => {});
    return answer;
  };
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push([Math.round(performance.timeOrigin + e.startTime), Math.round(e.duration)]);
    }).observe({ type: 'longtask', buffered: true });
  } catch {}
})();`;

async function load(
  browser: Browser,
  url: string,
  n: number,
): Promise<{ page: Page; readyMs: number; completeMs: number | null; stages: PaintStages }> {
  // the marks are evaluated text, which the page's CSP (no unsafe-eval) would refuse
  const context = await browser.newContext({
    colorScheme: 'light',
    viewport: { width: 1280, height: 900 },
    bypassCSP: true,
  });
  await context.addInitScript(`window.__expect = ${n};${PAINT_MARKS}`);
  const page = await context.newPage();
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction('window.__ready !== undefined', undefined, { timeout: 30_000 });
  // every view on the page: not when some member stays stale (a flapping cluster), then null
  await page
    .waitForFunction('window.__complete !== undefined', undefined, { timeout: 15_000 })
    .catch(() => {});
  const [readyMs, completeMs] = (await page.evaluate('[window.__ready, window.__complete ?? null]')) as [
    number,
    number | null,
  ];
  const stages = (await page.evaluate(PAINT_STAGES)) as PaintStages;
  return { page, readyMs, completeMs, stages };
}

/** Where a first paint's time went (ms from navigation start): [request sent, first byte, last byte] of each request. */
type PaintStages = Record<'html' | 'js' | 'css' | 'state', [number, number, number] | null> & {
  domContentLoaded: number;
};

const PAINT_STAGES = `(() => {
  const r = (e) => e ? [Math.round(e.requestStart || e.startTime), Math.round(e.responseStart), Math.round(e.responseEnd)] : null;
  const res = performance.getEntriesByType('resource');
  const pick = (s) => r(res.find((x) => x.name.includes(s)));
  const nav = performance.getEntriesByType('navigation')[0];
  return { html: r(nav), domContentLoaded: Math.round(nav.domContentLoadedEventEnd), js: pick('console.js'), css: pick('console.css'), state: pick('/console/state') };
})()`;

// The page-side code goes as text: tsx names functions (`__name`), which the page lacks.

/** Records Date.now() in the page when `predicate` (an expression on `document`) first holds (checked on every DOM change). */
async function watch(page: Page, name: string, predicate: string): Promise<void> {
  await page.evaluate(`(() => {
    window.__seen = window.__seen || {};
    const check = () => {
      if (window.__seen[${JSON.stringify(name)}] === undefined && (${predicate})) window.__seen[${JSON.stringify(name)}] = Date.now();
    };
    new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true });
    check();
  })()`);
}

/** How `node`'s `/cluster` shows the member at `address` (undefined: not a member there). */
async function memberOn(node: CliNode, address: string) {
  const view = await node.getJson<ClusterView>('/cluster');
  const m = view?.members.find((x) => x.address === address);
  return m ? { status: m.status, reachable: m.reachable } : undefined;
}

/** `explain`, on a timeout: what the nodes and the page show meanwhile, for the error (the run keeps no logs). */
async function seenAt(
  page: Page,
  name: string,
  explain?: () => Promise<unknown>,
  timeoutMs = 20_000,
): Promise<number> {
  const at = `window.__seen && window.__seen[${JSON.stringify(name)}]`;
  try {
    await page.waitForFunction(`(${at}) !== undefined`, undefined, { timeout: timeoutMs });
  } catch (error) {
    if (!explain) throw error;
    const seen = await explain().catch((e: unknown) => `(could not explain: ${String(e)})`);
    throw new Error(`the page did not show the ${name} within ${timeoutMs} ms: ${JSON.stringify(seen)}`);
  }
  return (await page.evaluate(at)) as number;
}

/**
 * The serving node's log time of `event` about `address`, the first at or after `since` (waits
 * for it): on a loaded host members flap, and an earlier false `member.unreachable` is not the kill's.
 */
async function loggedAt(
  node: CliNode,
  event: string,
  address: string,
  since: number,
  timeoutMs = 20_000,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const e = node
      .events()
      .find((x) => x.event === event && x.member?.address === address && (x.time as number) >= since);
    if (e) return e.time as number;
    if (Date.now() > deadline) throw new Error(`${node.address} logged no ${event} for ${address}`);
    await sleep(20);
  }
}

/** Starts `n` nodes one per STAGGER_MS into `nodes` and waits until every one sees all up. */
async function startCluster(n: number, nodes: CliNode[]): Promise<Map<CliNode, number>> {
  const profiled = PROFILED(n);
  const ports = await freePorts(2 * n + profiled.length);
  const inspectors = new Map<CliNode, number>();
  const seeds = ports.slice(0, Math.min(3, n));
  for (let i = 0; i < n; i++) {
    nodes.push(
      spawnCliNode(
        {
          cluster: 'console-bench',
          host: '127.0.0.1',
          port: ports[i]!,
          httpPort: ports[n + i]!,
          args: [
            '--seeds',
            seeds.map((p) => `127.0.0.1:${p}`).join(','),
            '--name',
            `n${i}`,
            '--partitions',
            '0',
            '--on-downed',
            'exit',
            // the console's figures, not the resolver's: on a host loaded past the failure
            // detector's bounds, downing would shrink the cluster being measured
            '--downing',
            'manual',
            '--config',
            CONFIG,
          ],
        },
        {
          DOYEN_SECRET: SECRET,
          DOYEN_HTTP_TOKEN: TOKEN,
          ...(profiled.includes(i)
            ? { NODE_OPTIONS: `--inspect=127.0.0.1:${ports[2 * n + profiled.indexOf(i)]}` }
            : {}),
        },
      ),
    );
    if (profiled.includes(i)) inspectors.set(nodes[i]!, ports[2 * n + profiled.indexOf(i)]!);
    if (i < n - 1) await sleep(STAGGER_MS);
  }
  const deadline = Date.now() + 240_000;
  while (allUpAt(nodes, n) === undefined) {
    if (Date.now() > deadline) {
      const exited = nodes.filter((x) => x.exitStatus() !== undefined).length;
      const ups = nodes.map((x) => {
        const up = new Set<string>();
        for (const e of x.events())
          if (e.event === 'member.up') up.add(e.member?.address);
          else if (e.event === 'member.removed' || e.event === 'member.downed') up.delete(e.member?.address);
        return up.size;
      });
      throw new Error(
        `N=${n}: not all up after 240 s (${exited} exited; members up per node: ${ups.join(' ')})`,
      );
    }
    await sleep(200);
  }
  await sleep(3000);
  return inspectors;
}

/**
 * The whole cluster's load after an incident: the wire messages every live node sent so far (read
 * before the incident's timing starts), then `start(act)` does it and the CPU of every live node
 * over INCIDENT_CPU_MS from it, and the messages sent until that window ended, are the result.
 */
async function prepareIncident(
  nodes: readonly CliNode[],
  serving: CliNode,
  gone: CliNode,
  inspectors: Map<CliNode, number>,
) {
  const alive = nodes.filter((x) => x !== gone && x.pid !== undefined && x.exitStatus() === undefined);
  const before = await messagesSnapshot(alive);
  const profiling = await Promise.all(
    [...inspectors]
      .filter(([node]) => alive.includes(node))
      .map(async ([node, port]) => ({ node: node.address, run: await startProfiling(port) })),
  );
  await sleep(300);
  return {
    start(act: () => void): Promise<{
      cpu: ClusterCpu;
      messages: ReturnType<typeof messagesBetween>;
      profiles?: Record<string, ProfileSummary | undefined>;
    }> {
      const cpu = clusterCpuWindow(
        alive.map((x) => ({ pid: x.pid!, serving: x === serving })),
        INCIDENT_CPU_MS,
      );
      act();
      return cpu.then(async (c) => {
        const profiles =
          profiling.length === 0
            ? undefined
            : Object.fromEntries(
                await Promise.all(profiling.map(async (p) => [p.node, await p.run?.stop()] as const)),
              );
        return {
          cpu: c,
          messages: messagesBetween(before, await messagesSnapshot(alive), serving),
          ...(profiles ? { profiles } : {}),
        };
      });
    },
  };
}

/** --no-console: a kill -9 and a leave on a cluster where nobody opened the console. */
async function runBare(n: number) {
  const nodes: CliNode[] = [];
  try {
    const inspectors = await startCluster(n, nodes);
    const serving = nodes[0]!;
    const killed = nodes[n - 1]!;
    const leaver = nodes[n - 2]!;
    // the same window with nothing happening: what the nodes cost anyway (heartbeats)
    const idle = await (await prepareIncident(nodes, serving, killed, new Map())).start(() => {});
    const kill = await (await prepareIncident(nodes, serving, killed, inspectors)).start(() =>
      killed.kill9(),
    );
    await sleep(1000);
    const leave = await (await prepareIncident(nodes, serving, killed, inspectors)).start(() => {
      void fetch(`http://127.0.0.1:${leaver.httpPort}/cluster/leave`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{}',
      });
    });
    return { nodes: n, console: false, incidentLoad: { idle, kill, leave } };
  } finally {
    await killCliNodes(nodes);
  }
}

async function runSize(browser: Browser, n: number) {
  const nodes: CliNode[] = [];
  try {
    const inspectors = await startCluster(n, nodes);
    const serving = nodes[0]!;
    const pid = serving.pid!;
    process.stderr.write(`N=${n}: all up; sampling the serving node before any console request\n`);
    const untouched = await sample(pid);

    const url = `http://127.0.0.1:${serving.httpPort}/console`;
    const loads: { readyMs: number; completeMs: number | null; stages: PaintStages }[] = [];
    let page: Page | undefined;
    for (let i = 0; i < LOADS; i++) {
      const l = await load(browser, url, n);
      loads.push({
        readyMs: +l.readyMs.toFixed(1),
        completeMs: l.completeMs === null ? null : +l.completeMs.toFixed(1),
        stages: l.stages,
      });
      if (i < LOADS - 1) await l.page.context().close();
      else page = l.page;
    }
    // the latency page stays open (a sixth stream, from 127.0.0.1) but idle while the node is sampled
    await page!.context().close();

    const viewers = Array.from({ length: VIEWERS }, (_, i) => viewer(serving, i));
    await sleep(2000);
    const bytesBefore = viewers.map((v) => v.bytes());
    const watched = await sample(pid);
    const streamBytesPerViewerPerS = Math.round(
      median(viewers.map((v, i) => v.bytes() - bytesBefore[i]!)) / (SAMPLE_MS / 1000),
    );
    for (const v of viewers) v.stop();
    await sleep(1000);
    const gatheringNoViewer = await sample(pid, SAMPLE_MS / 2);

    // event to screen, on a live page that has its history
    const live = await load(browser, url, n);
    const historyWait = Date.now();
    await live.page
      .waitForFunction('window.__history !== undefined', undefined, { timeout: 30_000 })
      .catch(() => process.stderr.write(`N=${n}: the page had no history after 30 s\n`));
    const historyAfterMs = Date.now() - historyWait;
    const browserThreadsReniced = BROWSER_NICE === undefined ? undefined : reniceBrowser(BROWSER_NICE);
    // --fetch-probe: a second reader of the stream in the page, fetch() and a ReadableStream
    // reader: when a watched text reached the page's network stack apart from EventSource's
    // dispatching (it adds a viewer, so it is off in the figures' runs)
    if (FETCH_PROBE)
      await live.page.evaluate(`(() => {
        window.__fetched = {};
        fetch('/console/stream').then(async (r) => {
          const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
          let tail = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return;
            const t = Date.now();
            const text = tail + value;
            for (const [name, needle] of Object.entries(window.__needles))
              if (window.__fetched[name] === undefined && window.__armed && text.includes(needle)) window.__fetched[name] = t;
            tail = text.slice(-300);
          }
        });
      })()`);
    const members = (await serving.getJson<ClusterView>('/cluster'))!.members;
    const keyOf = (node: CliNode) => {
      const m = members.find((x) => x.address === node.address)!;
      return `${m.address}#${m.uid}`;
    };
    const killed = nodes[n - 1]!;
    const leaver = nodes[n - 2]!;
    const kKey = keyOf(killed);
    const lKey = keyOf(leaver);
    await watch(
      live.page,
      'leave',
      `document.querySelector('[data-testid=member][data-key="${lKey}"]') === null || document.querySelector('[data-testid=member][data-key="${lKey}"][data-status=up]') === null`,
    );
    // a cell still red from an earlier flap (a loaded host) would read as the kill shown at once
    await live.page
      .waitForFunction(
        `document.querySelector('[data-testid=matrix-cell][data-subject="${kKey}"][data-state=unreachable]') === null`,
        undefined,
        { timeout: 10_000 },
      )
      .catch(() => {});
    await live.page.evaluate('window.__seen = {}');
    await live.page.evaluate(
      `window.__arrived = {}; window.__fetched = {}; window.__armed = true; Object.assign(window.__needles, ${JSON.stringify(
        {
          kill: `"subject":"${kKey}","status":"unreachable"`,
          leave: `"key":"${lKey}","address":"${leaver.address}","status":"leaving"`,
        },
      )}); window.__long.length = 0; window.__stream.frames = 0; window.__stream.bytes = 0;`,
    );
    await watch(
      live.page,
      'kill',
      `document.querySelector('[data-testid=matrix-cell][data-subject="${kKey}"][data-state=unreachable]') !== null`,
    );
    const firstLogged = (event: string, address: string, since: number) =>
      Math.min(
        ...nodes.flatMap((x) =>
          x
            .events()
            .filter((e) => e.event === event && e.member?.address === address && (e.time as number) >= since)
            .map((e) => e.time as number),
        ),
      );
    // the scheduler's side: run-queue waits of the nodes and Chromium's processes over each
    // event's way to the screen, and a trace of the main threads on its path (console-sched.ts)
    const chrome = descendants(process.pid, /chrom/i);
    const nodeProcesses = (except: CliNode) =>
      nodes
        .filter((x) => x !== except && x.pid !== undefined && x.exitStatus() === undefined)
        .map((x) => ({ pid: x.pid!, kind: x === serving ? 'serving' : 'members' }));
    const onPath: Record<string, number> = { serving: pid };
    chrome
      .filter((p) => p.kind === 'renderer' || p.kind.startsWith('utility:network'))
      .forEach((p, i) => {
        onPath[`${p.kind === 'renderer' ? 'renderer' : 'network'}${i}`] = p.pid;
      });
    const idleIncident = await (await prepareIncident(nodes, serving, killed, new Map())).start(() => {});
    const killPrep = await prepareIncident(nodes, serving, killed, inspectors);
    const trace = mainThreadTrace(onPath);
    const killWindow = schedWindow([...chrome, ...nodeProcesses(killed)]);
    const killAt = Date.now();
    const killLoad = killPrep.start(() => killed.kill9());
    const killShown = await seenAt(live.page, 'kill', async () => ({
      onServing: (await memberOn(serving, killed.address)) ?? 'not a member',
      onPage: await live.page.evaluate(
        `document.querySelector('[data-testid=matrix-cell][data-subject="${kKey}"][data-state=unreachable]') !== null`,
      ),
    }));
    const killSched = killWindow.end();
    // on a loaded host the serving node may have taken the member for unreachable already (a
    // flap before the kill) and log nothing new: then the time is the first node's that did
    const killLogged = await loggedAt(serving, 'member.unreachable', killed.address, killAt, 5_000).catch(
      () => {
        const first = firstLogged('member.unreachable', killed.address, killAt);
        if (!Number.isFinite(first))
          throw new Error(`no node logged member.unreachable for ${killed.address}`);
        process.stderr.write(
          `N=${n}: the serving node logged no member.unreachable; timed from the first node's\n`,
        );
        return first;
      },
    );
    const killIncident = await killLoad;
    await sleep(1000);
    const leavePrep = await prepareIncident(nodes, serving, killed, inspectors);
    const leaveWindow = schedWindow([...chrome, ...nodeProcesses(killed)]);
    const leaveAt = Date.now();
    let left: Promise<Response | undefined> = Promise.resolve(undefined);
    const leaveLoad = leavePrep.start(() => {
      left = fetch(`http://127.0.0.1:${leaver.httpPort}/cluster/leave`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{}',
      });
    });
    const leaveAnswer = await left;
    const statusOf = async (node: CliNode) =>
      (await memberOn(node, leaver.address))?.status ?? 'not a member';
    const leaveShown = await seenAt(live.page, 'leave', async () => ({
      leaveAnswer: leaveAnswer?.status,
      onServing: await statusOf(serving),
      onLeaver: await statusOf(leaver).catch(() => 'unreachable'),
      onPage: await live.page.evaluate(
        `document.querySelector('[data-testid=member][data-key="${lKey}"]')?.dataset.status ?? 'no row'`,
      ),
    }));
    const leaveSched = leaveWindow.end();
    const traced = trace.stop();
    const leaveIncident = await leaveLoad;
    const leaveLogged = await loggedAt(serving, 'member.leaving', leaver.address, leaveAt);
    const pageSide = (await live.page.evaluate(
      '({ arrived: window.__arrived, fetched: window.__fetched ?? {}, carrier: window.__carrier, stream: window.__stream, long: window.__long })',
    )) as {
      arrived: { kill?: number; leave?: number };
      fetched: { kill?: number; leave?: number };
      carrier: Record<'kill' | 'leave', { key?: string; builtAt?: number; sentAt?: number } | undefined>;
      stream: { frames: number; bytes: number };
      long: [number, number][];
    };
    await live.page.context().close();
    // the stages of event → screen: logged → the frame holding it reached the page → DOM showing it
    const stage = (logged: number, arrived: number | undefined, shown: number) => ({
      toPageMs: arrived === undefined ? null : arrived - logged,
      pageMs: arrived === undefined ? null : shown - arrived,
    });
    // the finer stages, from the first node that logged it: → the view carrying it was built on
    // its node → the serving node wrote the frame → it reached the page → the DOM showed it
    const chain = (
      observed: number,
      logged: number,
      carrier: { key?: string; builtAt?: number; sentAt?: number } | undefined,
      arrived: number | undefined,
      shown: number,
    ) => ({
      firstLoggedMs: Number.isFinite(observed) ? observed - logged : null,
      carrier: carrier?.key === undefined ? null : carrier.key === keyOf(serving) ? 'serving' : 'member',
      toViewBuiltMs: carrier?.builtAt === undefined ? null : carrier.builtAt - observed,
      toFrameSentMs:
        carrier?.sentAt === undefined || carrier.builtAt === undefined
          ? null
          : carrier.sentAt - carrier.builtAt,
      toPageMs:
        arrived === undefined || carrier?.builtAt === undefined
          ? null
          : arrived - (carrier.sentAt ?? carrier.builtAt),
      onPageMs: arrived === undefined ? null : shown - arrived,
      totalFromFirstMs: shown - observed,
    });
    const names = Object.keys(onPath);
    const schedOf = (
      logged: number,
      carrier: { builtAt?: number; sentAt?: number } | undefined,
      arrived: number | undefined,
      shown: number,
      window: ReturnType<typeof killWindow.end>,
    ) => {
      const built = carrier?.builtAt ?? logged;
      const sent = carrier?.sentAt ?? built;
      const renderers = names.filter((x) => x.startsWith('renderer'));
      const toSent = traceBetween(traced, names, logged, sent);
      const toShown = traceBetween(traced, names, sent, shown);
      return {
        // of event → screen, ms the path's main threads were runnable and not running: the
        // serving node's until it wrote the frame, the page's renderers' after (sampled every
        // 4 ms, each stage widened to whole samples: an upper bound)
        runQueueWaitMs: {
          serving: Math.max(0, toSent.serving?.waitMs ?? 0),
          renderer: renderers.reduce((sum, r) => sum + Math.max(0, toShown[r]?.waitMs ?? 0), 0),
        },
        loggedToBuilt: traceBetween(traced, names, logged, built),
        builtToSent: traceBetween(traced, names, built, sent),
        sentToPage: traceBetween(traced, names, sent, arrived ?? shown),
        onPage: traceBetween(traced, names, arrived ?? shown, shown),
        window,
      };
    };
    // the serving node's own share: its log line → the frame carrying the event written to the
    // page (when the serving node's own view carried it; a member's view is timed on its node)
    const servingShare = (logged: number, carrier: { key?: string; sentAt?: number } | undefined) =>
      carrier?.key === keyOf(serving) && carrier.sentAt !== undefined ? carrier.sentAt - logged : null;
    const stages = {
      loggedToFrameOnServingMs: {
        kill: servingShare(killLogged, pageSide.carrier.kill),
        leave: servingShare(leaveLogged, pageSide.carrier.leave),
      },
      ...(BROWSER_NICE !== undefined ? { browserNice: BROWSER_NICE, browserThreadsReniced } : {}),
      kill: stage(killLogged, pageSide.arrived.kill, killShown),
      leave: stage(leaveLogged, pageSide.arrived.leave, leaveShown),
      killChain: chain(
        firstLogged('member.unreachable', killed.address, killAt),
        killLogged,
        pageSide.carrier.kill,
        pageSide.arrived.kill,
        killShown,
      ),
      leaveChain: chain(
        firstLogged('member.leaving', leaver.address, leaveAt),
        leaveLogged,
        pageSide.carrier.leave,
        pageSide.arrived.leave,
        leaveShown,
      ),
      // run-queue waits (ms) of the main threads on the path over each chain's stages, and of
      // every process (all threads) from the kill / the leave request to the screen
      sched: {
        onPath: Object.keys(onPath),
        kill: schedOf(killLogged, pageSide.carrier.kill, pageSide.arrived.kill, killShown, killSched),
        leave: schedOf(leaveLogged, pageSide.carrier.leave, pageSide.arrived.leave, leaveShown, leaveSched),
      },
      // --fetch-probe: the watched text in a fetch() reader of the stream, ms after (−: before) EventSource's handler
      ...(FETCH_PROBE
        ? {
            fetchVsEventSourceMs: {
              kill: diffOf(pageSide.fetched.kill, pageSide.arrived.kill),
              leave: diffOf(pageSide.fetched.leave, pageSide.arrived.leave),
            },
          }
        : {}),
      streamFrames: pageSide.stream.frames,
      streamBytes: pageSide.stream.bytes,
      pageLongTasksMs: pageSide.long.map(([, d]) => d),
      // how long after the first paint the live page waited for its history before the kill
      historyAfterPaintMs: historyAfterMs,
    };

    const cold = loads[0]!;
    const warm = loads.slice(1);
    return {
      nodes: n,
      firstPaintMs: {
        coldReady: cold.readyMs,
        coldAllViews: cold.completeMs,
        // the cold load's requests: [sent, first byte, last byte] ms from navigation start
        coldStages: cold.stages,
        warmReadyMedian: round(median(warm.map((l) => l.readyMs))),
        warmAllViewsMedian: warm.some((l) => l.completeMs === null)
          ? null
          : round(median(warm.map((l) => l.completeMs!))),
        loads,
      },
      eventToScreenMs: { kill: killShown - killLogged, leave: leaveShown - leaveLogged },
      eventToScreenStages: stages,
      // the whole cluster's CPU and wire messages in the second after each (console open)
      incidentLoad: { idle: idleIncident, kill: killIncident, leave: leaveIncident },
      servingNode: {
        untouched,
        fiveViewers: watched,
        gatheringNoViewer,
        extraCpuPctWithViewers: +(watched.cpuPct - untouched.cpuPct).toFixed(2),
        extraRssMbWithViewers: +(watched.rssMb - untouched.rssMb).toFixed(1),
        streamBytesPerViewerPerS,
        snapshotBytesPerViewer: Math.round(median(bytesBefore)),
      },
    };
  } finally {
    await killCliNodes(nodes);
  }
}

if (!existsSync(CHROMIUM)) {
  console.error(`no Chromium at ${CHROMIUM} (install it with bash .ci/chromium.sh, or set DOYEN_CHROMIUM)`);
  process.exit(2);
}
const nodesArg = process.argv.find((a) => a.startsWith('--nodes='));
const sizes = nodesArg
  ? nodesArg.slice('--nodes='.length).split(',').map(Number)
  : process.argv.includes('--quick')
    ? [5]
    : [5, 50];
if (NO_CONSOLE) {
  // no page, no viewer: the cluster's own reaction to the same kill and leave
  const bare: Awaited<ReturnType<typeof runBare>>[] = [];
  for (const n of sizes) {
    const r = await runBare(n);
    process.stderr.write(`N=${n} (no console): ${JSON.stringify(r)}\n`);
    bare.push(r);
  }
  printResult({
    bench: 'console',
    noConsole: true,
    incidentLoad: Object.fromEntries(bare.map((r) => [r.nodes, r.incidentLoad])),
  });
  process.exit(0);
}
const weight = pageWeight();
process.stderr.write(`page weight: ${JSON.stringify(weight)}\n`);
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const results: Awaited<ReturnType<typeof runSize>>[] = [];
try {
  for (const n of sizes) {
    const r = await runSize(browser, n);
    process.stderr.write(`N=${n}: ${JSON.stringify(r)}\n`);
    results.push(r);
  }
} finally {
  await browser.close();
}
const at = (n: number) => results.find((r) => r.nodes === n);
const at50 = at(50) ?? results.at(-1)!;
const worstEvent = Math.max(...results.flatMap((r) => [r.eventToScreenMs.kill, r.eventToScreenMs.leave]));
process.stderr.write(
  [
    `page weight: ${weight.total.raw} B raw, ${weight.total.gzip} B gzip`,
    ...results.map(
      (r) =>
        `N=${r.nodes}: first paint cold ${r.firstPaintMs.coldReady} ms (all views ${r.firstPaintMs.coldAllViews} ms), warm ${r.firstPaintMs.warmReadyMedian} ms (all views ${r.firstPaintMs.warmAllViewsMedian} ms)` +
        ` · event→screen kill ${r.eventToScreenMs.kill} ms (to the page ${r.eventToScreenStages.kill.toPageMs} ms, on it ${r.eventToScreenStages.kill.pageMs} ms), leave ${r.eventToScreenMs.leave} ms (${r.eventToScreenStages.leave.toPageMs} + ${r.eventToScreenStages.leave.pageMs} ms)` +
        ` · waiting for a CPU meanwhile: kill ${JSON.stringify(r.eventToScreenStages.sched.kill.runQueueWaitMs)}, leave ${JSON.stringify(r.eventToScreenStages.sched.leave.runQueueWaitMs)} ms` +
        ` · serving node CPU ${r.servingNode.untouched.cpuPct}% → ${r.servingNode.fiveViewers.cpuPct}% with ${VIEWERS} viewers (${r.servingNode.gatheringNoViewer.cpuPct}% gathering, none watching), RSS ${r.servingNode.untouched.rssMb} → ${r.servingNode.fiveViewers.rssMb} MB`,
    ),
    `targets: first paint ≤ ${TARGETS.firstPaintMsAt50} ms at 50 nodes, updates ≤ ${TARGETS.eventToScreenMs} ms after the event`,
    '',
  ].join('\n'),
);
printResult({
  bench: 'console',
  pageWeight: weight,
  results,
  targets: TARGETS,
  firstPaintWarmVsTarget: `${at50.firstPaintMs.warmReadyMedian} ms / ${TARGETS.firstPaintMsAt50} ms at ${at50.nodes} nodes`,
  firstPaintColdVsTarget: `${at50.firstPaintMs.coldReady} ms / ${TARGETS.firstPaintMsAt50} ms at ${at50.nodes} nodes`,
  eventToScreenWorstVsTarget: `${worstEvent} ms / ${TARGETS.eventToScreenMs} ms`,
  // of event → screen, the serving node's log line → the frame written (null: a member's view carried it)
  loggedToFrameOnServingMs: Object.fromEntries(
    results.map((r) => [r.nodes, r.eventToScreenStages.loggedToFrameOnServingMs]),
  ),
  ...(BROWSER_NICE !== undefined ? { browserNice: BROWSER_NICE } : {}),
  // every node's CPU (ms, summed) in the second after the kill / the leave, console open
  // (`--no-console` for the same without it), and the wire messages they sent meanwhile
  incidentClusterCpuMs: Object.fromEntries(
    results.map((r) => [
      r.nodes,
      {
        idle: r.incidentLoad.idle.cpu.totalMs,
        kill: r.incidentLoad.kill.cpu.totalMs,
        leave: r.incidentLoad.leave.cpu.totalMs,
        messages: { kill: r.incidentLoad.kill.messages.byLane, leave: r.incidentLoad.leave.messages.byLane },
      },
    ]),
  ),
  // how much of each event → screen the serving node and the page's renderer spent runnable and
  // not running (a 2-core machine shared with the N node processes; see console-sched.ts)
  eventToScreenRunQueueWaitMs: Object.fromEntries(
    results.map((r) => [
      r.nodes,
      {
        kill: r.eventToScreenStages.sched.kill.runQueueWaitMs,
        leave: r.eventToScreenStages.sched.leave.runQueueWaitMs,
      },
    ]),
  ),
});
