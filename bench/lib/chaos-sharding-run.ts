// One run of the sharding chaos runner: five hosting `doyen node` processes and one sender node (no
// role: it only routes), each a host of its own in a network namespace (test/support/netns.ts's
// topology), the built CLI (or its TypeScript sources under tsx, `fromSource`) with the chaos app
// (chaos-sharding-app.ts).
// The sender sends sequence-numbered asks to every entity while the seeded plan plays its faults
// (kill -9 + restart, SIGSTOP and symmetric and one-way nftables cuts until the cluster has decided
// them, graceful leaves + joins), each followed, once the cluster is whole and every partition is
// active again on one node, by a quiet period of load; at the end (healed, whole, quiet) the sender
// probes every entity once, and the checker reads the logs. Nothing waits a fixed time that a
// condition can tell (the kill's seeded down time and the quiet periods are the load's own).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { detectionTimeMs } from '../../packages/cluster/src/failure-detector/detector.js';
import { defaultClusterConfig } from '../../packages/cluster/src/model/config.js';
import type { ShardRegionsView } from '../../packages/sharding/src/index.js';
import { UNSAFE_SKIP_FENCE_ENV } from '../../packages/sharding/src/partition-keeper/unsafe-skip-fence.js';
import { perEntityLines } from '../../packages/sharding/src/region/entity-log-lines.js';
import { DEFAULT_HOST_LEASE } from '../../packages/singleton/src/host-lease/host-lease-settings.js';
import type { ProcessFate } from '../../packages/testkit/src/instance-overlaps.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { secretEnv } from '../../test/support/cli-process.js';
import type { Topology } from '../../test/support/netns.js';
import { builtCliArgs } from './built-cli.js';
import {
  type ChaosFaultWindow,
  type ChaosLine,
  type ChaosPause,
  type ChaosVerdict,
  checkChaosRun,
  IN_FLIGHT_SLACK_MS,
} from './chaos-sharding-checker.js';
import {
  CHAOS_ASK_TIMEOUT_ENV,
  CHAOS_ENTITIES_ENV,
  CHAOS_LEASE_ENV,
  CHAOS_PROBE_DONE_EVENT,
  CHAOS_SEND_EVERY_ENV,
  CHAOS_SENDER_ENV,
  PROBE_ROUNDS,
  PROBE_SIGNAL,
  START_LOAD_SIGNAL,
} from './chaos-sharding-protocol.js';
import {
  type ChaosFault,
  type ChaosFaultLength,
  chaosPlan,
  DECISION_CAP_MS,
  describeChaosFault,
  HOSTING_SLOTS,
  isPlanned,
  MIN_CHECKED_QUIET_MS,
  type PlannedChaosFault,
} from './chaos-sharding-schedule.js';
import { sourceCliArgs } from './source-cli.js';

const CHAOS_APP = fileURLToPath(new URL('./chaos-sharding-app.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PORT = 2552;
const HTTP_PORT = 8558;

/** The hosts of a chaos topology: five hosting nodes, then the sender. */
export const CHAOS_HOSTS = ['n1', 'n2', 'n3', 'n4', 'n5', 'sender'] as const;
const SENDER = HOSTING_SLOTS;

export interface ChaosRunOptions {
  readonly topo: Topology;
  readonly seed: number;
  /** Faults per run (the seed picks them). */
  readonly faults: number;
  readonly entities: number;
  /** Whether the hosting nodes run the keeper without its fence (the positive control). */
  readonly unsafeSkipFence: boolean;
  readonly sendEveryMs?: number;
  /** Play these faults instead of the seed's (the positive control picks its own). */
  readonly plan?: readonly PlannedChaosFault[];
  /** The nodes' lease length (`hostLease.leaseMs`), ms; default the node's own. */
  readonly leaseMs?: number;
  /** More environment for the process of one host slot (0-4 hosting, 5 the sender). */
  readonly envOf?: (slot: number) => Readonly<Record<string, string>>;
  readonly askTimeoutMs?: number;
  /** How long to wait for the cluster to be whole again after a fault, ms. */
  readonly wholeTimeoutMs?: number;
  readonly log: (line: string) => void;
  /** Where to write every process's log lines (JSON lines with `proc`), for a failing run's evidence. */
  readonly logFile?: string;
  /** Run the CLI from its TypeScript sources under tsx (no build needed; ~3× the CPU per node start). */
  readonly fromSource?: boolean;
}

export interface ChaosRunResult {
  readonly seed: number;
  readonly verdict: ChaosVerdict;
  readonly played: readonly string[];
  readonly runMs: number;
  /** Wall-clock ms of each phase of the run, in order (form, settle, faults, heal, probe, stop, check). */
  readonly phases: Readonly<Record<string, number>>;
  /** Why the run could not be completed (not a verdict: the cluster never formed, a probe hung). */
  readonly error: string | undefined;
  /**
   * Log lines that never reached the runner, per process that lost any (numbers skipped in their
   * `logSeq`): the checker reads only lines, so a violation beside a loss may be a line gone missing.
   */
  readonly linesLost: Readonly<Record<string, number>>;
}

interface Proc {
  readonly name: string;
  readonly slot: number;
  readonly process: NodeProcess;
  killedAt?: number;
}

/** Log lines that say the cluster is not settled yet. */
const UNSETTLING = new Set(['member.unreachable', 'member.downed', 'node.restart', 'sharding.lease-lost']);
/**
 * How long nothing unsettling may be logged before the load starts, and before the probe: a
 * member silent since before the window began is found unreachable inside it (the detector's
 * detection time, ~1 s), and an owner lease lost inside it has lapsed (one default lease), plus
 * half a second for the lines to reach the runner. It only decides when to start the load and the
 * probe: a window too short can fail a run, never pass a bad one (the checker reads everything).
 */
const SETTLE_QUIET_MS = Math.ceil(
  detectionTimeMs(defaultClusterConfig.failureDetector, defaultClusterConfig.heartbeatIntervalMs) +
    DEFAULT_HOST_LEASE.leaseMs +
    500,
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How often the runner asks whether the cluster is whole or settled: each poll is a curl in a namespace. */
const POLL_MS = 100;
/** After a fault, how long the cluster may take to be settled again (every partition active once). */
const RESETTLE_TIMEOUT_MS = 30_000;
/** Load on the settled cluster before the first fault: as each quiet period, some of it checked. */
const WARM_MS = IN_FLIGHT_SLACK_MS + MIN_CHECKED_QUIET_MS;
/**
 * Two asks to one entity per tick: 200 a second. Twice session 37's rate: the quiet periods are
 * shorter, and the load messages the `lost` rule checks (sent outside every fault window) stay as
 * many per run.
 */
const SEND_EVERY_MS = 10;

/**
 * The newest table a process's current incarnation logged (`partitions.table`), or undefined. An
 * incarnation begins with no table: what a downed incarnation held (say a table it allocated alone
 * as it was downed, numbered past the cluster's) is not the process's table now.
 */
export function currentTable(
  events: readonly Record<string, unknown>[],
): { version: number; partitionCount: number } | undefined {
  let table: { version: number; partitionCount: number } | undefined;
  for (const e of events) {
    if (e.event === 'node.restart' || e.event === 'node.setup') table = undefined;
    else if (e.event === 'partitions.table' && (!table || Number(e.version) > table.version))
      table = { version: Number(e.version), partitionCount: Number(e.partitionCount) };
  }
  return table;
}

/** Everything one run started, and what the checker needs of it. */
class ChaosCluster {
  readonly procs: Proc[] = [];
  readonly current: (Proc | undefined)[] = CHAOS_HOSTS.map(() => undefined);
  readonly pauses: ChaosPause[] = [];
  readonly faults: ChaosFaultWindow[] = [];
  private readonly started = CHAOS_HOSTS.map(() => 0);

  constructor(
    private readonly o: ChaosRunOptions,
    private readonly cluster: string,
  ) {}

  private host(slot: number) {
    return this.o.topo.host(CHAOS_HOSTS[slot]!);
  }

  start(slot: number): Proc {
    const h = this.host(slot);
    const sender = slot === SENDER;
    const seeds = CHAOS_HOSTS.slice(0, HOSTING_SLOTS).map((n) => `${this.o.topo.host(n).ip}:${PORT}`);
    const name = `${CHAOS_HOSTS[slot]}.p${++this.started[slot]!}`;
    const process = NodeProcess.spawn({
      command: 'ip',
      args: [
        ...['netns', 'exec', h.ns, globalThis.process.execPath],
        ...(this.o.fromSource ? sourceCliArgs : builtCliArgs)([
          ...['node', '--cluster', this.cluster, '--host', h.ip, '--port', String(PORT)],
          ...['--seeds', seeds.join(','), '--http-port', String(HTTP_PORT), '--http-host', h.ip],
          ...['--name', CHAOS_HOSTS[slot]!, '--app', CHAOS_APP],
        ]),
      ],
      cwd: ROOT,
      env: {
        ...secretEnv(),
        DOYEN_LOG_LEVEL: 'info',
        [CHAOS_ENTITIES_ENV]: String(this.o.entities),
        [CHAOS_ASK_TIMEOUT_ENV]: String(this.o.askTimeoutMs ?? 8_000),
        [CHAOS_SEND_EVERY_ENV]: String(this.o.sendEveryMs ?? SEND_EVERY_MS),
        ...(this.o.leaseMs !== undefined ? { [CHAOS_LEASE_ENV]: String(this.o.leaseMs) } : {}),
        ...(sender ? { [CHAOS_SENDER_ENV]: '1' } : {}),
        ...(this.o.unsafeSkipFence && !sender ? { [UNSAFE_SKIP_FENCE_ENV]: '1' } : {}),
        ...this.o.envOf?.(slot),
      },
      onLine: ({ json, text }) => {
        if (json === undefined && text.trim()) this.o.log(`[${name}] ${text}`);
      },
    });
    const proc: Proc = { name, slot, process };
    this.procs.push(proc);
    this.current[slot] = proc;
    return proc;
  }

  view(slot: number): Promise<any> {
    const h = this.host(slot);
    return this.o.topo.getJson(h.name, `http://${h.ip}:${HTTP_PORT}/cluster`, 3_000);
  }

  /** Every slot runs, and the sender sees all six up and reachable. */
  async whole(): Promise<boolean> {
    if (!this.current.every((p) => p?.process.running)) return false;
    const v = await this.view(SENDER);
    const up = (v?.members ?? []).filter((m: any) => m.status === 'up' && m.reachable);
    return v?.status === 'up' && up.length === CHAOS_HOSTS.length && v.members.length === CHAOS_HOSTS.length;
  }

  async waitWhole(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await this.whole()) return true;
      await sleep(POLL_MS);
    }
    return false;
  }

  /**
   * Whole, every process at the same (newest) table, nothing unsettling logged anywhere for
   * `quietMs` (no member unreachable or downed, no restart in place, no owner lease lost), and
   * every partition of that table active on exactly one hosting node: the load then meets running
   * partitions, not ones still waiting for a lease or a hand-off.
   */
  async settled(quietMs: number): Promise<boolean> {
    const since = Date.now() - quietMs;
    const versions = new Set<number>();
    const held: string[] = [];
    let partitionCount = 0;
    for (const p of this.current) {
      if (!p) return this.unsettled('a slot has no process');
      const events = p.process.events();
      for (const e of events)
        if (UNSETTLING.has(String(e.event)) && (e.time as number) >= since)
          return this.unsettled(`${p.name} logged ${e.event}`);
      const table = currentTable(events);
      if (table) partitionCount = table.partitionCount;
      versions.add(table?.version ?? -1);
      held.push(`${p.name} v${table?.version ?? -1}`);
    }
    if (versions.size !== 1 || versions.has(-1)) return this.unsettled(`tables ${held.join(', ')}`);
    const [version] = versions;
    if (!(await this.partitionsActive(version!, partitionCount))) return false;
    return (await this.whole()) || this.unsettled('not whole');
  }

  /** Why the last `settled` said no (printed when a wait for it runs out). */
  private notSettled = '';

  private unsettled(why: string): false {
    this.notSettled = why;
    return false;
  }

  /** Each of the table's `count` partitions active on exactly one hosting node, all at `version`. */
  private async partitionsActive(version: number, count: number): Promise<boolean> {
    const views: (ShardRegionsView | undefined)[] = await Promise.all(
      Array.from({ length: HOSTING_SLOTS }, (_, slot) => {
        const h = this.host(slot);
        return this.o.topo.getJson(h.name, `http://${h.ip}:${HTTP_PORT}/cluster/shards`, 3_000);
      }),
    );
    const active = new Set<number>();
    let total = 0;
    for (const [slot, v] of views.entries()) {
      if (v?.tableVersion !== version)
        return this.unsettled(`${this.host(slot).name}'s shards at v${v?.tableVersion} (table v${version})`);
      for (const partition of v.activePartitions) active.add(partition);
      total += v.activePartitions.length;
    }
    return (
      (active.size === count && total === count) ||
      this.unsettled(
        `${active.size} of ${count} partitions active, ${total} activations (per slot ${views.map((v) => v?.activePartitions.length).join('/')})`,
      )
    );
  }

  async waitSettled(quietMs: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await this.settled(quietMs)) return true;
      // six curls a poll: half as often as `whole`
      await sleep(2 * POLL_MS);
    }
    this.o.log(`not settled within ${timeoutMs} ms: ${this.notSettled}`);
    return false;
  }

  kill(slot: number): Promise<unknown> {
    const p = this.current[slot];
    if (!p?.process.running) return Promise.resolve();
    p.killedAt = p.process.kill9();
    return p.process.exited;
  }

  async leave(slot: number): Promise<void> {
    const p = this.current[slot];
    if (!p?.process.running) return;
    const timer = setTimeout(() => (p.killedAt = Date.now()), 30_000);
    await p.process.stop(30_000);
    clearTimeout(timer);
  }

  /**
   * Resolves true once every running process but `frozen` has logged a `member.downed` from now on
   * (every side has decided the fault under way: the majority downed the cut-off or paused node, a
   * cut-off node downed itself; a one-way cut can make its victim decide seconds before the
   * majority does), false after `timeoutMs`.
   */
  private decided(timeoutMs: number, frozen?: Proc): Promise<boolean> {
    return new Promise((resolve) => {
      const waiting = new Set(this.current.filter((p) => p?.process.running && p !== frozen));
      const done = (decided: boolean) => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        resolve(decided);
      };
      const stops = [...waiting].map((p) =>
        p!.process.onLine((l) => {
          if (l.json?.event !== 'member.downed') return;
          waiting.delete(p);
          if (waiting.size === 0) done(true);
        }),
      );
      const timer = setTimeout(() => done(false), timeoutMs);
    });
  }

  /**
   * Waits out a pause's or a cut's length (the fault is in place); says how long it lasted, and
   * whether the cluster decided it.
   */
  private async last(length: ChaosFaultLength, since: number, frozen?: Proc): Promise<string> {
    if ('ms' in length) {
      await sleep(length.ms);
      return '';
    }
    const decided = await this.decided(DECISION_CAP_MS, frozen);
    const decidedAfter = Date.now() - since;
    if (!decided) return `; NOT decided in ${(DECISION_CAP_MS / 1000).toFixed(0)} s`;
    await sleep(length.afterDownedMs);
    return `; decided after ${(decidedAfter / 1000).toFixed(1)} s, held ${((Date.now() - since) / 1000).toFixed(1)} s`;
  }

  /** Plays one fault to its end (healed, resumed or restarted); says how a pause or cut lasted. */
  async play(fault: ChaosFault): Promise<string> {
    const names = (slots: readonly number[]) => slots.map((s) => CHAOS_HOSTS[s]!);
    const topo = this.o.topo;
    const since = Date.now();
    switch (fault.kind) {
      case 'kill':
        await this.kill(fault.slot);
        await sleep(fault.downMs);
        this.start(fault.slot);
        return '';
      case 'leave':
        await this.leave(fault.slot);
        this.start(fault.slot);
        return '';
      case 'pause': {
        const p = this.current[fault.slot];
        if (!p?.process.running) return '; not running';
        const stoppedAt = Date.now();
        p.process.pause();
        const lasted = await this.last(fault.length, stoppedAt, p);
        p.process.resume();
        this.pauses.push({ proc: p.name, stoppedAt, continuedAt: Date.now() });
        return lasted;
      }
      case 'partition': {
        const rest = CHAOS_HOSTS.filter((_, i) => !fault.side.includes(i));
        await topo.partition(names(fault.side), rest);
        const lasted = await this.last(fault.length, since);
        await topo.heal();
        return lasted;
      }
      case 'one-way': {
        await topo.dropOneWay(names(fault.from), names(fault.to));
        const lasted = await this.last(fault.length, since);
        await topo.heal();
        return lasted;
      }
    }
  }

  /** Every line every process logged, by process, in its order (a partition's stops as one line per entity). */
  lines(): ChaosLine[] {
    return this.procs.flatMap((p) =>
      p.process.events().flatMap((json) => perEntityLines(json).map((one) => ({ proc: p.name, json: one }))),
    );
  }

  fates(): ProcessFate[] {
    return this.procs.flatMap((p): ProcessFate[] => {
      if (p.killedAt !== undefined) return [{ node: p.name, kind: 'killed', t: p.killedAt }];
      if (p.process.exitedAt !== undefined) return [{ node: p.name, kind: 'exited', t: p.process.exitedAt }];
      return [];
    });
  }

  async killAll(): Promise<void> {
    await Promise.all(
      this.procs.map(async (p) => {
        if (!p.process.running) return;
        p.process.kill9();
        await Promise.race([p.process.exited, sleep(5_000)]);
      }),
    );
  }
}

/** One seeded run; tears down its processes (the topology stays, healed, for the next run). */
export async function runChaos(o: ChaosRunOptions): Promise<ChaosRunResult> {
  const t0 = Date.now();
  const cluster = new ChaosCluster(o, `chaos-${o.seed}`);
  const played: string[] = [];
  const wholeTimeoutMs = o.wholeTimeoutMs ?? 45_000;
  const askTimeoutMs = o.askTimeoutMs ?? 8_000;
  let error: string | undefined;
  let until = Date.now();
  const phases: Record<string, number> = {};
  let phaseStart = t0;
  /** When each phase ended, for the evidence file (a run's timeline beside the nodes' lines). */
  const phaseEnds: { phase: string; time: number }[] = [];
  const phase = (name: string) => {
    const now = Date.now();
    phases[name] = (phases[name] ?? 0) + now - phaseStart;
    phaseStart = now;
    phaseEnds.push({ phase: name, time: now });
  };
  try {
    // all six at once: only n1 (the first seed) may form the cluster, the others' join attempts
    // retry until it has (starting n1 alone first cost one more process start, ~3 s, per run)
    for (let slot = 0; slot < CHAOS_HOSTS.length; slot++) cluster.start(slot);
    if (!(await cluster.waitWhole(90_000))) throw new Error('the six nodes did not form a cluster');
    phase('form');
    if (!(await cluster.waitSettled(SETTLE_QUIET_MS, 60_000)))
      o.log(`seed ${o.seed}: the cluster did not settle after forming (load started anyway)`);
    phase('settle');
    cluster.current[SENDER]!.process.signal(START_LOAD_SIGNAL);
    await sleep(WARM_MS);
    phase('warm');
    for (const { fault, quietMs } of o.plan ?? chaosPlan(o.seed, o.faults)) {
      const what = describeChaosFault(fault);
      const start = Date.now();
      o.log(`seed ${o.seed}: ${what}`);
      const lasted = await cluster.play(fault);
      phase('fault-play');
      const whole = await cluster.waitWhole(wholeTimeoutMs);
      phase('fault-whole');
      const end = Date.now();
      cluster.faults.push({ what, planned: isPlanned(fault), start, end });
      if (!whole) o.log(`seed ${o.seed}: not whole ${wholeTimeoutMs} ms after ${what}`);
      // the next fault starts on a settled cluster: every partition active again on exactly one
      // node (the hand-backs done, under load and checked), then the plan's quiet load
      const settled = await cluster.waitSettled(0, RESETTLE_TIMEOUT_MS);
      phase('fault-settle');
      played.push(
        `${what}${lasted}: whole again after ${((end - start) / 1000).toFixed(1)} s${whole ? '' : ' (NOT whole)'}, ` +
          `settled after ${((Date.now() - start) / 1000).toFixed(1)} s${settled ? '' : ' (NOT settled)'}`,
      );
      await sleep(quietMs);
      phase('fault-quiet');
    }
    await o.topo.heal();
    for (let slot = 0; slot < CHAOS_HOSTS.length; slot++)
      if (!cluster.current[slot]?.process.running) cluster.start(slot);
    if (!(await cluster.waitSettled(SETTLE_QUIET_MS, wholeTimeoutMs)))
      error = 'not settled at the end (probe sent anyway)';
    phase('heal-settle');
    const sender = cluster.current[SENDER]!.process;
    sender.signal(PROBE_SIGNAL);
    const done = await sender.waitForEvent(CHAOS_PROBE_DONE_EVENT, PROBE_ROUNDS * askTimeoutMs + 10_000);
    if (!done) error = 'the probe did not finish';
    phase('probe');
    // the last acks and log lines of the entities
    await sleep(500);
    phase('tail');
  } catch (e) {
    error = (e as Error).message;
  } finally {
    until = Date.now();
    await cluster.killAll();
    await o.topo.heal().catch(() => {});
    phase('stop');
  }
  const lines = cluster.lines();
  if (o.logFile) {
    // the runner's own lines: where each phase ended, each fault's window, each pause
    const runner = [
      ...phaseEnds.map((p) => ({ event: 'chaos.phase-end', ...p })),
      ...cluster.faults.map((f) => ({ event: 'chaos.fault', time: f.start, ...f })),
      ...cluster.pauses.map((p) => ({ event: 'chaos.pause', time: p.stoppedAt, ...p })),
    ].map((json) => JSON.stringify({ proc: 'runner', ...json }));
    writeFileSync(
      o.logFile,
      [...lines.map((l) => JSON.stringify({ proc: l.proc, ...l.json })), ...runner].join('\n') + '\n',
    );
  }
  const verdict = checkChaosRun({
    lines,
    fates: cluster.fates(),
    faults: cluster.faults,
    pauses: cluster.pauses,
    until,
    askTimeoutMs,
  });
  phase('check');
  const linesLost = Object.fromEntries(
    cluster.procs.filter((p) => p.process.linesLost > 0).map((p) => [p.name, p.process.linesLost]),
  );
  return { seed: o.seed, verdict, played, runMs: until - t0, phases, error, linesLost };
}
