// `pnpm bench scale [N,N,…]`: N real `doyen node` processes (the compiled CLI) on this machine,
// for N = 10, 25, 50 by default (or SCALE_SIZES=10,25). For each N, in one cluster:
//  1. a rolling start of all N at one per 200 ms: time from the last start to all up (the last
//     member.up that completed a node's view, from the logs, then checked once on /cluster), false
//     downings (any sbr.decision or member.downed while nothing failed: the optimum is 0) and
//     false suspicions (any node's own detector finding a peer unreachable: fd.peer-unreachable);
//  2. idle CPU (% of one core) and RSS per node over 10 s right after convergence, and again over
//     20 s once the processes settled (SCALE_SETTLE_S after convergence, 120 by default, 0 skips
//     it: V8 keeps compiling the heartbeat path for about two minutes, and those compiles are most
//     of the early figure), beside one lone node measured first and beside N bare ws + msgpackr
//     processes sending the same heartbeat frames (raw-heartbeat-peer.mjs), measured the same way;
//  3. kill -9 of the coordinator: time until every survivor agrees on the next one (from the logs,
//     then checked once on /cluster);
//  4. a 2|8-shaped partition (the youngest fifth cut off), then a 50/50 one of what is left,
//     through the nodes' fault-injection routes: time from the resolver's decision to the last
//     process of the losing side gone (`--on-downed exit`).
// First, a lone node's start-up: spawn → up (compile cache warm, and off), beside a bare ws +
// msgpackr process's spawn → listening.
// Then steps 1, 3 and 4 in the deterministic simulation at 100 and 250 members (SCALE_SIM_SIZES;
// empty skips it: `SCALE_SIM_SIZES= pnpm bench scale 50` runs only the real 50, without the ~5
// minutes the simulated 250 take),
// in simulated ms, with the messages each member sends per second while idle (test/support/scale-scenario.ts).
// The last line is one JSON object; each figure sits beside its target or baseline as a ratio.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_HEARTBEAT_INTERVAL_MS, heartbeatPeers } from '../packages/cluster/src/index.js';
import { freePorts } from '../packages/testkit/src/index.js';
import { type SimulatedScale, simulatedScale } from '../test/support/scale-scenario.js';
import {
  agreedAt,
  allUp,
  allUpAt,
  type CliNode,
  clusterView,
  killCliNodes,
  spawnCliNode,
} from './lib/cli-nodes.js';
import { installSignalCleanup, liveProcesses, OwnedProcess } from './lib/node-processes.js';
import { median, printResult } from './lib/stats.js';
import { waitFor } from './lib/timeout.js';

const SECRET = 'scale-bench-secret-0123456789abcdef';
const TOKEN = 'scale-bench-token-0123456789abcdef';
const STAGGER_MS = 200;
const IDLE_SAMPLE_MS = 10_000;
const SETTLED_SAMPLE_MS = 20_000;
/** When the settled idle figure is taken, counted from the first idle sample's start. */
const SETTLE_MS = Number(process.env.SCALE_SETTLE_S ?? 120) * 1000;
const TARGETS = {
  convergeMs: 5000,
  agreementMs: 3000,
  losingDownAfterDecisionMs: 1000,
  cpuAt5: 1.5,
  cpuAt50: 3,
  rssMb: 70,
  startUpMs: 300,
};

type Node = CliNode;

const address = (n: Node) => n.address;

function spawnNode(
  _index: number,
  port: number,
  httpPort: number,
  seeds: readonly number[],
  env: Readonly<Record<string, string>> = {},
): Node {
  return spawnCliNode(
    {
      cluster: 'scale',
      host: '127.0.0.1',
      port,
      httpPort,
      args: [
        '--seeds',
        seeds.map((p) => `127.0.0.1:${p}`).join(','),
        '--partitions',
        '0',
        '--on-downed',
        'exit',
        '--enable-fault-injection',
      ],
    },
    { DOYEN_SECRET: SECRET, DOYEN_HTTP_TOKEN: TOKEN, ...env },
  );
}

const view = clusterView;

async function post(n: Node, path: string, body: unknown): Promise<void> {
  await fetch(`http://127.0.0.1:${n.httpPort}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** CPU time (ms) of a process so far, from /proc (utime + stime, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Handshakes the nodes completed (outbound, both lanes), summed from their /metrics: a full mesh
 * is N × (N − 1); what the rolling start cost in connections, which load does not distort.
 */
async function handshakesOf(nodes: readonly Node[]): Promise<number> {
  const counts = await Promise.all(
    nodes.map(async (x) => {
      try {
        const text = await (
          await fetch(`http://${x.host}:${x.httpPort}/metrics`, { signal: AbortSignal.timeout(2000) })
        ).text();
        let sum = 0;
        for (const m of text.matchAll(/^doyen_wire_handshake_duration_seconds_count\{[^}]*\} (\d+)/gm))
          sum += Number(m[1]);
        return sum;
      } catch {
        return 0;
      }
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return kb / 1024;
}

type IdleFigures = { cpuPct: number; cpuPctMax: number; rssMb: number };

async function idle(
  nodes: readonly { readonly pid: number | undefined }[],
  sampleMs = IDLE_SAMPLE_MS,
): Promise<IdleFigures> {
  const pids = nodes.map((n) => n.pid!);
  const before = pids.map(cpuMs);
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, sampleMs));
  const elapsed = Date.now() - t0;
  const pct = pids.map((pid, i) => ((cpuMs(pid) - before[i]!) / elapsed) * 100);
  return {
    cpuPct: +median(pct).toFixed(2),
    cpuPctMax: +Math.max(...pct).toFixed(2),
    rssMb: +median(pids.map(rssMb)).toFixed(1),
  };
}

/**
 * The idle figures right away, and (unless SCALE_SETTLE_S=0) again SETTLE_MS later over a longer
 * sample: what an idle cluster costs once V8 stopped compiling, the same wait for doyen and raw.
 */
async function idleEarlyAndSettled(
  nodes: readonly { readonly pid: number | undefined }[],
): Promise<{ early: IdleFigures; settled: IdleFigures | undefined }> {
  const t0 = Date.now();
  const early = await idle(nodes);
  if (SETTLE_MS === 0) return { early, settled: undefined };
  await new Promise((r) => setTimeout(r, Math.max(0, t0 + SETTLE_MS - Date.now())));
  return { early, settled: await idle(nodes, SETTLED_SAMPLE_MS) };
}

const round = (x: number) => Math.round(x);
const ratio = (x: number, y: number) => +(x / y).toFixed(2);

/** One cut's figures under `key` (twoEight, simFifty, …): cut → decision, decision → losing side down, and that beside its target. */
const cutFigures = (key: string, n: number, cut: CutOutcome) =>
  'error' in cut
    ? { [`${key}Error@${n}`]: cut.error }
    : {
        [`${key}CutToDecisionMs@${n}`]: round(cut.cutToDecisionMs),
        [`${key}LosingDownAfterDecisionMs@${n}`]: round(cut.decisionToLosingDownMs),
        [`${key}VsTarget@${n}`]: ratio(cut.decisionToLosingDownMs, TARGETS.losingDownAfterDecisionMs),
      };

/** A cut's figures, or what went wrong (the winning side lost members, …): the other figures still print. */
type CutOutcome = { cutToDecisionMs: number; decisionToLosingDownMs: number } | { error: string };

async function measuredCut(name: string, run: () => Promise<CutOutcome>): Promise<CutOutcome> {
  try {
    return await run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${name}: ${message}\n`);
    return { error: message.slice(0, 600) };
  }
}

/**
 * The figures the real and the simulated scenario share (convergence, false downings and
 * suspicions, crash agreement, both cuts), under `prefix` (`sim`) or none, beside their targets.
 */
const scenarioFigures = (
  prefix: '' | 'sim',
  n: number,
  r: Pick<SimulatedScale, 'convergeMs' | 'falseDownings' | 'falseSuspicions' | 'agreementMs'> & {
    readonly twoEight: CutOutcome;
    readonly fifty: CutOutcome;
  },
) => {
  const name = (figure: string) =>
    prefix ? `${prefix}${figure[0]!.toUpperCase()}${figure.slice(1)}` : figure;
  return {
    [`${name('convergeMs')}@${n}`]: r.convergeMs,
    [`${name('convergeVsTarget')}@${n}`]: ratio(r.convergeMs, TARGETS.convergeMs),
    [`${name('falseDownings')}@${n}`]: r.falseDownings,
    [`${name('falseSuspicions')}@${n}`]: r.falseSuspicions,
    [`${name('crashAgreementMs')}@${n}`]: r.agreementMs,
    [`${name('crashAgreementVsTarget')}@${n}`]: ratio(r.agreementMs, TARGETS.agreementMs),
    ...cutFigures(name('twoEight'), n, r.twoEight),
    ...cutFigures(name('fifty'), n, r.fifty),
  };
};

/** Blackholes traffic between the two sides, both ways, at once. */
async function cut(a: readonly Node[], b: readonly Node[]): Promise<number> {
  const t = Date.now();
  await Promise.all([
    ...a.map((n) => post(n, '/fault/blackhole', { peers: b.map(address) })),
    ...b.map((n) => post(n, '/fault/blackhole', { peers: a.map(address) })),
  ]);
  return t;
}

/**
 * Lets one fault's decision age before the next. For one detection time (~1.2 s) after a side
 * downed members it could not reach, keep-majority counts them on the other side (they may have
 * crossed over: README, Split brain), so a second cut that soon takes the counted-smaller side
 * down: that is the resolver's price for never running two singletons, not what this bench times.
 */
const separate = () => new Promise((r) => setTimeout(r, 3000));

/** Cuts `losers` off from `winners`; the time from the first decision to the last loser gone. */
async function partition(winners: readonly Node[], losers: readonly Node[]) {
  const cutAt = await cut(winners, losers);
  await waitFor(() => losers.every((n) => n.exitedAt !== undefined), 60_000, 'the losing side down', 50);
  const decisions = [...winners, ...losers]
    .flatMap((n) => n.events())
    .filter((e) => e.event === 'sbr.decision' && e.time >= cutAt)
    .map((e) => e.time);
  const decidedAt = decisions.length > 0 ? Math.min(...decisions) : cutAt;
  const lastDown = Math.max(...losers.map((n) => n.exitedAt!));
  // the winners must still be up, and no more of them went
  await waitFor(
    () => allUp(winners, winners.length),
    30_000,
    'the winning side agreeing',
    100,
    async () => {
      const views = await Promise.all(winners.map(clusterView));
      const ups = views.map((v) =>
        v ? `${v.status}:${v.members.filter((m) => m.status === 'up').length}` : 'gone',
      );
      const decided = [...winners, ...losers]
        .flatMap((n) => n.events())
        .filter((e) => e.event === 'sbr.decision' && e.time >= cutAt)
        .map((e) => ({ node: e.node, at: e.time - cutAt, decision: e.decision, reason: e.reason, by: e.by }));
      return `winners (want up:${winners.length}) ${ups.join(' ')}; decisions ${JSON.stringify(decided.slice(0, 8))}`;
    },
  );
  return { cutToDecisionMs: decidedAt - cutAt, decisionToLosingDownMs: lastDown - decidedAt };
}

/** With SCALE_LOG_DIR set, each node's JSON events are left in SCALE_LOG_DIR/N (one file a node). */
async function scenario(n: number) {
  const nodes: Node[] = [];
  try {
    return await steps(n, nodes);
  } finally {
    const dir = process.env.SCALE_LOG_DIR && `${process.env.SCALE_LOG_DIR}/${n}`;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      for (const x of nodes) {
        writeFileSync(
          `${dir}/${x.port}.jsonl`,
          `${x
            .events()
            .map((e) => JSON.stringify(e))
            .join('\n')}\n`,
        );
      }
      process.stderr.write(`N=${n}: node events in ${dir}\n`);
    }
  }
}

async function steps(n: number, nodes: Node[]) {
  const ports = await freePorts(2 * n);
  const seeds = [ports[0]!, ports[1]!, ports[2]!];
  const startedAt = Date.now();
  for (let i = 0; i < n; i++) {
    nodes.push(spawnNode(i, ports[i]!, ports[n + i]!, seeds));
    if (i < n - 1) await new Promise((r) => setTimeout(r, STAGGER_MS));
  }
  const lastStart = Date.now();
  await waitFor(
    () => allUpAt(nodes, n) !== undefined,
    120_000,
    `${n} nodes up`,
    50,
    async () => {
      const views = await Promise.all(nodes.map(clusterView));
      const seen = views.map((v) =>
        v ? `${v.status}:${v.members.filter((m) => m.status === 'up').length}` : '-',
      );
      const exited = nodes.filter((x) => x.exitedAt !== undefined).length;
      const events = nodes
        .flatMap((x) => x.events())
        .filter((e) => /sbr|downed|join-failed|restart/.test(e.event));
      return `${seen.join(' ')}; exited ${exited}; ${events.length} downing events, first ${JSON.stringify(events.slice(0, 3))}`;
    },
  );
  const convergeMs = round(allUpAt(nodes, n)! - lastStart);
  // the CPU the whole rolling start took, summed over the N processes (start-up included): less
  // distorted by a loaded host than the wall time
  const rollingStartCpuS = +(nodes.reduce((sum, x) => sum + cpuMs(x.pid!), 0) / 1000).toFixed(1);
  const rollingStartHandshakes = await handshakesOf(nodes);
  // what the logs said, the views say too
  if (!(await allUp(nodes, n))) throw new Error(`${n} nodes logged all up, but /cluster disagrees`);
  const falseDownings = nodes
    .flatMap((x) => x.events())
    .filter((e) => e.time >= startedAt && (e.event === 'member.downed' || e.event === 'sbr.decision')).length;
  // one node's own detector finding a live peer unreachable (fd.peer-unreachable): the optimum is 0
  const falseSuspicions = nodes
    .flatMap((x) => x.events())
    .filter((e) => e.time >= startedAt && e.event === 'fd.peer-unreachable').length;
  await new Promise((r) => setTimeout(r, 2000));
  const idleFigures = await idleEarlyAndSettled(nodes);

  // kill -9 of the coordinator (the oldest member: not always the first started, as joins race)
  const before = (await view(nodes[nodes.length - 1]!))!;
  const byAge = [...before.members].sort((a, b) => a.age - b.age).map((m) => m.address);
  const coordinator = nodes.find((x) => address(x) === before.coordinator)!;
  // oldest first, so the youngest can be cut off below
  const survivors = byAge
    .filter((a) => a !== before.coordinator)
    .map((a) => nodes.find((x) => address(x) === a)!);
  const next = byAge.find((a) => a !== before.coordinator)!;
  const agreesOnNext = (v: Awaited<ReturnType<typeof view>>) =>
    v?.coordinator === next &&
    !v.members.some((m) => m.address === address(coordinator) && m.status === 'up');
  const killedAt = Date.now();
  coordinator.kill9();
  await waitFor(
    () => agreedAt(survivors, address(coordinator), next, killedAt) !== undefined,
    60_000,
    'survivors agreeing on the next coordinator',
    50,
    async () => {
      const views = await Promise.all(survivors.map(view));
      const agree = views.filter(agreesOnNext).length;
      const exited = survivors.filter((x) => x.exitedAt !== undefined).length;
      const decisions = survivors
        .flatMap((x) => x.events())
        .filter((e) => e.event === 'sbr.decision' && e.time >= killedAt)
        .map((e) => ({
          node: e.node,
          decision: e.decision,
          reason: e.reason,
          down: (e.down as string[]).length,
        }));
      return `next ${next}: ${agree} of ${survivors.length} agree, ${exited} exited; decisions ${JSON.stringify(decisions.slice(0, 5))}; ${JSON.stringify(
        views.slice(0, 3).map((v) => ({
          coordinator: v?.coordinator,
          members: v?.members.map((m) => `${m.address}:${m.status}`).slice(0, 4),
        })),
      )}`;
    },
  );
  const agreementMs = round(agreedAt(survivors, address(coordinator), next, killedAt)! - killedAt);
  // what the logs said, the views say too
  const agreeing = await Promise.all(survivors.map(view));
  if (!agreeing.every(agreesOnNext))
    throw new Error('the survivors logged agreement, but /cluster disagrees');
  await waitFor(() => allUp(survivors, survivors.length), 30_000, 'survivors settled', 100);

  // 2|8: the youngest fifth cut off
  const small = Math.max(1, Math.round(survivors.length / 5));
  const minority = survivors.slice(survivors.length - small);
  const majority = survivors.slice(0, survivors.length - small);
  await separate();
  const twoEight = await measuredCut('2|8 cut', () => partition(majority, minority));
  await separate();
  // 50/50 of what is left (keep-majority on a tie: the half with the lowest address stays); only
  // of a side the first cut left whole
  const byAddress = [...majority].sort((a, b) => a.port - b.port);
  const half = Math.floor(byAddress.length / 2);
  const fifty: CutOutcome =
    'error' in twoEight
      ? { error: 'not run: the 2|8 cut failed' }
      : await measuredCut('50/50 cut', () =>
          partition(byAddress.slice(0, byAddress.length - half), byAddress.slice(byAddress.length - half)),
        );

  await killCliNodes(nodes);
  return {
    n,
    convergeMs,
    rollingStartCpuS,
    rollingStartHandshakes,
    falseDownings,
    falseSuspicions,
    ...idleFigures,
    agreementMs,
    twoEight,
    fifty,
  };
}

const RAW_PEER = fileURLToPath(new URL('./lib/raw-heartbeat-peer.mjs', import.meta.url));

/**
 * The floor under the idle figures: N processes of bare ws + msgpackr, each sending the targets
 * doyen's heartbeat ring gives it one heartbeat-shaped frame per interval. Every peer must report
 * heartbeats received, or the baseline measured nothing.
 */
async function rawIdle(n: number): Promise<{ early: IdleFigures; settled: IdleFigures | undefined }> {
  const ports = await freePorts(n);
  const members = ports.map((port, i) => ({ address: `127.0.0.1:${port}`, uid: `raw${i}` }));
  const received: number[] = [];
  const peers = members.map((self, i) => {
    const targets = heartbeatPeers(self, members).targets.map((t) => t.address.split(':')[1]);
    return OwnedProcess.spawn({
      args: [RAW_PEER, String(ports[i]), targets.join(','), String(DEFAULT_HEARTBEAT_INTERVAL_MS)],
      keepLogs: false,
      onLine: ({ text }) => {
        const report = /^\{"received":(\d+)\}$/.exec(text);
        if (report) received.push(Number(report[1]));
        else if (text !== LISTENING) process.stderr.write(`[raw peer] ${text}\n`);
      },
    });
  });
  await new Promise((r) => setTimeout(r, 3000));
  const figures = await idleEarlyAndSettled(peers);
  await Promise.all(peers.map((p) => p.stop(5000)));
  if (received.length !== n || received.some((r) => r === 0)) {
    throw new Error(
      `raw baseline: peers reported ${JSON.stringify(received)} heartbeats received (want ${n} reports, none 0)`,
    );
  }
  return figures;
}

const LISTENING = '{"listening":true}';
const START_UP_RUNS = 5;

/**
 * Spawn → `node.started` (the node is up and its HTTP answers) of a lone `doyen node`, beside
 * spawn → listening of a bare ws + msgpackr process: medians of START_UP_RUNS, one at a time.
 * The bin's compile cache is warm (lone() wrote it); `coldMs` is the same with it off.
 */
async function startUp(): Promise<{ doyenMs: number; coldMs: number; rawMs: number }> {
  const doyen: number[] = [];
  const cold: number[] = [];
  const raw: number[] = [];
  const startOne = async (env: Record<string, string>) => {
    const [port, httpPort] = await freePorts(2);
    const t0 = Date.now();
    const node = spawnNode(0, port!, httpPort!, [port!], env);
    if (!(await node.waitForEvent('node.started', 30_000))) throw new Error('a lone node did not start');
    const ms = Date.now() - t0;
    await killCliNodes([node]);
    return { ms, cache: node.events().find((e) => e.event === 'node.compile-cache')?.status };
  };
  for (let i = 0; i < START_UP_RUNS; i++) {
    const warm = await startOne({});
    if (warm.cache !== 'hit') throw new Error(`a lone node's compile cache: ${warm.cache}, want hit`);
    doyen.push(warm.ms);
    cold.push((await startOne({ DOYEN_COMPILE_CACHE: 'off' })).ms);
    const [port] = await freePorts(1);
    const t1 = Date.now();
    const peer = OwnedProcess.spawn({ args: [RAW_PEER, String(port), '', '1000'], keepLogs: false });
    if (!(await peer.waitForLine((l) => l.text === LISTENING, 30_000)))
      throw new Error('a raw peer did not listen');
    raw.push(Date.now() - t1);
    await peer.stop(5000);
  }
  return { doyenMs: round(median(doyen)), coldMs: round(median(cold)), rawMs: round(median(raw)) };
}

async function lone() {
  const [port, httpPort] = await freePorts(2);
  const node = spawnNode(0, port!, httpPort!, [port!]);
  await waitFor(() => allUp([node], 1), 30_000, 'the lone node up', 50);
  await new Promise((r) => setTimeout(r, 2000));
  const figures = await idle([node]);
  await killCliNodes([node]);
  return figures;
}

installSignalCleanup();
const sizes = (process.argv[2] ?? process.env.SCALE_SIZES ?? '10,25,50').split(',').map(Number);
const base = await lone();
process.stderr.write(`lone node: ${JSON.stringify(base)}\n`);
const started = await startUp();
process.stderr.write(`start-up: ${JSON.stringify(started)}\n`);
const result: Record<string, unknown> = {
  bench: 'scale',
  startUpMs: started.doyenMs,
  startUpNoCompileCacheMs: started.coldMs,
  rawStartUpMs: started.rawMs,
  startUpVsRaw: ratio(started.doyenMs, Math.max(started.rawMs, 1)),
  startUpVsTarget: ratio(started.doyenMs, TARGETS.startUpMs),
  loneCpuPct: base.cpuPct,
  loneRssMb: base.rssMb,
};
for (const n of sizes) {
  const raw = await rawIdle(n);
  process.stderr.write(`N=${n} raw ws + msgpackr heartbeats: ${JSON.stringify(raw)}\n`);
  const r = await scenario(n);
  process.stderr.write(`N=${n}: ${JSON.stringify(r)}\n`);
  const cpuTarget = n <= 5 ? TARGETS.cpuAt5 : TARGETS.cpuAt50;
  const { early, settled } = r;
  Object.assign(result, {
    ...scenarioFigures('', n, r),
    [`idleCpuPctPerNode@${n}`]: early.cpuPct,
    [`idleCpuVsLone@${n}`]: ratio(early.cpuPct, Math.max(base.cpuPct, 0.01)),
    [`rawIdleCpuPctPerNode@${n}`]: raw.early.cpuPct,
    [`idleCpuVsRaw@${n}`]: ratio(early.cpuPct, Math.max(raw.early.cpuPct, 0.01)),
    [`idleCpuVsTarget@${n}`]: ratio(early.cpuPct, cpuTarget),
    ...(settled && raw.settled
      ? {
          [`settledIdleCpuPctPerNode@${n}`]: settled.cpuPct,
          [`settledIdleCpuPctMax@${n}`]: settled.cpuPctMax,
          [`rawSettledIdleCpuPctPerNode@${n}`]: raw.settled.cpuPct,
          [`settledIdleCpuVsRaw@${n}`]: ratio(settled.cpuPct, Math.max(raw.settled.cpuPct, 0.01)),
          [`settledIdleCpuVsTarget@${n}`]: ratio(settled.cpuPct, cpuTarget),
          [`settledRssMbPerNode@${n}`]: settled.rssMb,
          [`settledRssVsTarget@${n}`]: ratio(settled.rssMb, TARGETS.rssMb),
        }
      : {}),
    [`rollingStartCpuS@${n}`]: r.rollingStartCpuS,
    [`rollingStartHandshakes@${n}`]: r.rollingStartHandshakes,
    [`rssMbPerNode@${n}`]: early.rssMb,
    [`rssVsLone@${n}`]: ratio(early.rssMb, base.rssMb),
    [`rawRssMbPerNode@${n}`]: raw.early.rssMb,
    [`rssVsRaw@${n}`]: ratio(early.rssMb, raw.early.rssMb),
    [`rssVsTarget@${n}`]: ratio(early.rssMb, TARGETS.rssMb),
  });
}
for (const n of (process.env.SCALE_SIM_SIZES ?? '100,250').split(',').filter(Boolean).map(Number)) {
  // the protocol code's CPU alone, in one process: what load on the machine barely changes
  // (the same seeded scenario does the same work), so an A/B of two commits can rest on it
  const cpu0 = process.cpuUsage();
  const r = await simulatedScale(n);
  const cpu = process.cpuUsage(cpu0);
  process.stderr.write(`simulated N=${n}: ${JSON.stringify(r)}\n`);
  Object.assign(result, {
    ...scenarioFigures('sim', n, r),
    [`simMessagesPerNodePerSec@${n}`]: r.messagesPerNodePerSec,
    [`simScenarioCpuS@${n}`]: Math.round((cpu.user + cpu.system) / 1e4) / 100,
  });
}
result.leftRunning = liveProcesses();
printResult(result);
