// `doyen node` processes for the singleton bench: the real CLI (packages/doyen/src/cli.ts, run by tsx with the
// @doyen/source condition, so the measured code is the working tree's and no build is needed), on 127.0.0.1 or
// in a network namespace (singleton-netns.ts). Everything is read from what the nodes log (pino JSON lines, each
// with its `time`, on this machine's one clock) and from their management HTTP (GET /cluster, /singletons,
// /partitions). Every process is the testkit's NodeProcess, so none outlives the bench.
import { randomBytes } from 'node:crypto';
import type {
  ClusterView,
  MemberView,
  PartitionsView,
  SingletonView,
} from '../../packages/doyen/src/management-http.js';
import { optimalMoves } from '../../packages/partitions/src/index.js';
import {
  findInstanceOverlaps,
  type InstanceOverlap,
  instanceIntervals,
  type ProcessFate,
} from '../../packages/testkit/src/instance-overlaps.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { freePorts } from './free-ports.js';
import { sourceCliArgs } from './source-cli.js';
import { waitFor, withTimeout } from './timeout.js';

export { installSignalCleanup, liveNodeProcesses } from '../../packages/testkit/src/node-process.js';

/** The singleton every node registers by default (startNode's partition allocator). */
export const ALLOCATOR = 'partition-allocator';
/** This run's cluster secret: random, handed over in the environment, never on argv. */
const SECRET_ENV = { DOYEN_SECRET: randomBytes(16).toString('hex'), DOYEN_LOG_LEVEL: 'info' };
const UP_TIMEOUT_MS = 60_000;
const SETTLE_TIMEOUT_MS = 45_000;
const FAILOVER_TIMEOUT_MS = 30_000;
/** After the singleton is back: how long the survivors get to log member.downed too (else the figure is NaN). */
const DOWNED_TIMEOUT_MS = 15_000;
/** A fresh process is sometimes suspected a few seconds after it joined: that must not fall into the next sample. */
const QUIET_AFTER_RESTART_MS = 2_000;

const warnings = new Map<string, number>();

/** Warn-or-worse lines the node processes logged, by event. */
export function cliWarningCounts(): ReadonlyMap<string, number> {
  return warnings;
}

/** Where one node runs: its cluster address, how `doyen node` starts there, how its management HTTP is asked. */
export interface CliHost {
  readonly name: string;
  /** `host:port` of its cluster port. */
  readonly address: string;
  spawn(seeds: readonly string[]): NodeProcess;
  getJson<T>(node: NodeProcess, path: string): Promise<T | undefined>;
}

/** `doyen node` flags for one member with management HTTP on its own host. */
export function nodeCliArgs(o: {
  cluster: string;
  host: string;
  port: number;
  httpPort: number;
  seeds: readonly string[];
  name: string;
}): string[] {
  return [
    'node',
    ...['--cluster', o.cluster, '--host', o.host, '--port', String(o.port)],
    ...['--seeds', o.seeds.join(','), '--http-port', String(o.httpPort), '--http-host', o.host],
    ...['--name', o.name],
  ];
}

/** Spawns a CLI node (`command` + `args`, secrets in the environment) whose odd lines go to stderr, prefixed. */
export function spawnCli(
  name: string,
  command: string,
  args: readonly string[],
  http?: { host: string; port: number },
) {
  return NodeProcess.spawn({
    command,
    args,
    env: SECRET_ENV,
    ...(http ? { http } : {}),
    onLine: ({ json, text }) => {
      const level = typeof json?.level === 'number' ? json.level : undefined;
      if (level !== undefined && level >= 40) {
        const event = typeof json?.event === 'string' ? json.event : 'other';
        warnings.set(event, (warnings.get(event) ?? 0) + 1);
      }
      // not JSON (a crash, a loader message) or error-level: worth seeing; the rest is read from events()
      if (json === undefined || (level ?? 0) >= 50) process.stderr.write(`[${name}] ${text}\n`);
    },
  });
}

/** `n` hosts on 127.0.0.1, a cluster port and an HTTP port each, picked at run time. */
export async function loopbackHosts(n: number, cluster: string): Promise<CliHost[]> {
  const ports = await freePorts(2 * n);
  return Array.from({ length: n }, (_, i) => {
    const port = ports[2 * i]!;
    const httpPort = ports[2 * i + 1]!;
    const address = `127.0.0.1:${port}`;
    return {
      name: address,
      address,
      spawn: (seeds) =>
        spawnCli(
          address,
          process.execPath,
          sourceCliArgs(nodeCliArgs({ cluster, host: '127.0.0.1', port, httpPort, seeds, name: address })),
          { host: '127.0.0.1', port: httpPort },
        ),
      getJson: (node, path) => node.getJson(path),
    };
  });
}

type LogLine = Record<string, any>;

/** One kill -9 of the oldest, timed from the kill to lines the survivors logged (ms; NaN when never logged). */
export interface FailoverSample {
  readonly n: number;
  readonly victim: string;
  /** The survivor expected to take over (the next oldest) and the one that did (first `singleton.started`). */
  readonly successor: string;
  readonly startedOn: string;
  /** Kill → `singleton.started` (partition-allocator) in a survivor. */
  readonly failoverMs: number;
  /** Kill → the first `member.unreachable` about the victim, any survivor. */
  readonly unreachableMs: number;
  /** Kill → `member.downed` about the victim in the successor, and in every survivor (the latest). */
  readonly downedMs: number;
  readonly downedAllMs: number;
  /** Kill → `singleton.taking-over` in the successor (NaN when its manager did not log one). */
  readonly takingOverMs: number;
  /** Partitions the successor's first allocation moved, and the optimum for the survivors. */
  readonly moved: number;
  readonly optimum: number;
  /** Survivors other than the first that also started the allocator (should be 0). */
  readonly elsewhere: number;
  /** Live members downed meanwhile (false suspicions), and `node.restart` lines they caused. */
  readonly otherDowned: number;
  readonly restarts: number;
}

/** One graceful leave of the oldest (SIGTERM: `doyen node` leaves, then exits). */
export interface HandOverSample {
  readonly n: number;
  /** Leave asked → `singleton.started` (partition-allocator) on the successor. */
  readonly handOverMs: number;
  /** → `singleton.hand-over-requested` on the successor (it saw the oldest leaving). */
  readonly requestedMs: number;
  /** → `singleton.handed-over` on the leaving oldest; NaN when it never handed over. */
  readonly handedOverMs: number;
  /** Why the leaving oldest stopped its instance (`handed over`, `node left the cluster`, …). */
  readonly stopReason: string;
  /** The successor went through `singleton.taking-over` (waited the down-removal margin). */
  readonly tookOver: boolean;
  /** ms the successor's instance started before the leaving oldest's stopped (> 0: two at once). */
  readonly overlapMs: number;
  /** Nodes other than the successor that started the allocator (should be 0). */
  readonly elsewhere: number;
}

/** The oldest cut off from the others by `cut`: time from the cut (every rule in place) to the other side. */
export interface CutOffSample {
  readonly n: number;
  readonly victim: string;
  readonly startedOn: string;
  /** Cut in place → `singleton.started` (partition-allocator) on the majority side. */
  readonly failoverMs: number;
  /** How long putting the cut in place took (the figure starts when it is done). */
  readonly cutTookMs: number;
  /** Cut → the cut-off oldest's `singleton.stopped` (it fenced itself); NaN when it logged none. */
  readonly victimStoppedMs: number;
  /** Cut → `member.downed` about the victim in every majority node. */
  readonly downedAllMs: number;
  /** Majority nodes other than the first that also started the allocator (should be 0). */
  readonly elsewhere: number;
}

interface Slot {
  readonly host: CliHost;
  node: NodeProcess;
  label: string;
}

export interface Settled {
  /** Oldest first. */
  readonly members: readonly MemberView[];
  readonly partitions: PartitionsView | undefined;
}

/**
 * A cluster of CLI nodes, one per host, kept at its size: a killed or departed node is started again on its
 * host (a new process, a new incarnation, the youngest member).
 */
export class SingletonCliCluster {
  private readonly everyProcess: { readonly label: string; readonly node: NodeProcess }[] = [];
  private readonly fates: ProcessFate[] = [];
  private spawned = 0;

  private constructor(
    private readonly slots: Slot[],
    /** Poll interval of the management HTTP (slower in namespaces, where each request is a process). */
    private readonly pollMs: number,
  ) {}

  /** Starts one node per host (the first forms the cluster) and waits until they agree; closes on failure. */
  static async start(hosts: readonly CliHost[], pollMs = 100): Promise<SingletonCliCluster> {
    const cluster = new SingletonCliCluster([], pollMs);
    try {
      const seeds = hosts.slice(0, 2).map((h) => h.address);
      for (const host of hosts) cluster.slots.push(cluster.spawnOn(host, seeds));
      await Promise.all(cluster.slots.map((s) => cluster.whenUp(s)));
      await cluster.settled();
      return cluster;
    } catch (error) {
      await cluster.close();
      throw error;
    }
  }

  get size(): number {
    return this.slots.length;
  }

  private spawnOn(host: CliHost, seeds: readonly string[]): Slot {
    const node = host.spawn(seeds);
    const label = `${host.name}#${++this.spawned}`;
    this.everyProcess.push({ label, node });
    void node.exited.then(() =>
      this.fates.push({ node: label, kind: 'exited', t: node.exitedAt ?? Date.now() }),
    );
    return { host, node, label };
  }

  private async whenUp(slot: Slot): Promise<void> {
    const up = await slot.node.waitForEvent('node.started', UP_TIMEOUT_MS);
    if (up) return;
    const status = slot.node.exitStatus();
    throw new Error(
      status
        ? `${slot.host.name} exited (code ${status.code}, signal ${status.signal}) before node.started`
        : `${slot.host.name} did not log node.started within ${UP_TIMEOUT_MS} ms`,
    );
  }

  private kill(slot: Slot): number {
    const t = slot.node.kill9();
    this.fates.push({ node: slot.label, kind: 'killed', t });
    return t;
  }

  /**
   * Waits until every node sees the same all-up, all-reachable membership of exactly the current processes at
   * one version, and exactly one runs the allocator; with `table`, also one node's partition table.
   */
  async settled(table = false, timeoutMs = SETTLE_TIMEOUT_MS): Promise<Settled> {
    let seen = '';
    let result: Settled | undefined;
    await waitFor(
      async () => {
        const views = await Promise.all(
          this.slots.map((s) => s.host.getJson<ClusterView>(s.node, '/cluster')),
        );
        seen = views
          .map((v, i) =>
            v ? `${v.self} ${v.status} v${v.version} up ${upCount(v)}` : `${this.slots[i]!.host.name} -`,
          )
          .join('; ');
        const first = views[0];
        if (!first) return false;
        const addresses = new Set(this.slots.map((s) => s.host.address));
        const agreed = views.every(
          (v) =>
            v !== undefined &&
            v.status === 'up' &&
            v.version === first.version &&
            v.members.length === addresses.size &&
            v.members.every((m) => m.status === 'up' && m.reachable && addresses.has(m.address)),
        );
        if (!agreed) return false;
        const singletons = await Promise.all(
          this.slots.map((s) => s.host.getJson<SingletonView[]>(s.node, '/singletons')),
        );
        const running = singletons.filter((xs) => xs?.some((x) => x.name === ALLOCATOR && x.runsHere)).length;
        seen += `; allocator running on ${running}`;
        if (running !== 1) return false;
        const partitions = table
          ? await this.slots[0]!.host.getJson<PartitionsView>(this.slots[0]!.node, '/partitions')
          : undefined;
        if (table && !(partitions && partitions.version > 0 && sameSet(partitions.owners, addresses)))
          return false;
        result = { members: [...first.members].sort((a, b) => a.age - b.age), partitions };
        return true;
      },
      timeoutMs,
      'cluster agreement',
      this.pollMs,
      () => seen,
    );
    return result!;
  }

  /** settled, a quiet moment, settled again: a restart's aftermath stays out of the next sample. */
  private async settledAfterRestart(): Promise<void> {
    await this.settled();
    await sleep(QUIET_AFTER_RESTART_MS);
    await this.settled();
  }

  /** Restarts `slot` on its host, joining through the other nodes (`first` first), and waits for agreement. */
  private async restart(slot: Slot, first: Slot): Promise<void> {
    const seeds = [first, ...this.slots.filter((s) => s !== first && s !== slot)].map((s) => s.host.address);
    const next = this.spawnOn(slot.host, seeds);
    slot.node = next.node;
    slot.label = next.label;
    await this.whenUp(slot);
    await this.settledAfterRestart();
  }

  private roles(before: Settled): { victim: Slot; successor: Slot } {
    const by = (m: MemberView | undefined) => this.slots.find((s) => s.host.address === m?.address);
    const victim = by(before.members[0]);
    const successor = by(before.members[1]);
    if (!victim || !successor) throw new Error('the oldest two members are not nodes of this cluster');
    return { victim, successor };
  }

  /**
   * kill -9 of the oldest; waits for the allocator to start in a survivor and (bounded) for every survivor to
   * down the victim, then starts the victim's host again and waits for agreement.
   */
  async killOldest(): Promise<FailoverSample> {
    const before = await this.settled(true);
    const { victim, successor } = this.roles(before);
    const victimUid = before.members[0]!.uid;
    const survivors = this.slots.filter((s) => s !== victim);
    const since = marks(survivors);
    const about = (l: LogLine, event: string) => l.event === event && l.member?.uid === victimUid;
    const table = before.partitions;
    // the fewest owner changes from the table before the kill to one over the survivors (owners are addresses)
    const optimum = table
      ? optimalMoves(
          { ...table, backups: table.owners.map(() => []) },
          survivors.map((s) => ({ key: s.host.address, roles: [] })),
          { partitionCount: table.partitionCount },
        )
      : Number.NaN;

    const tKill = this.kill(victim);
    await waitFor(
      () => survivors.some((s) => since(s).some(allocatorStarted)),
      FAILOVER_TIMEOUT_MS,
      `allocator started in a survivor after killing ${victim.host.name}`,
    );
    await waitFor(
      () => survivors.every((s) => since(s).some((l) => about(l, 'member.downed'))),
      DOWNED_TIMEOUT_MS,
      `member.downed about ${victim.host.name} in every survivor`,
    ).catch(() => undefined); // the figure says NaN; the failover itself is measured
    await sleep(300); // a moment for a second instance elsewhere to show
    const firstAt = (s: Slot, match: (l: LogLine) => boolean) => since(s).find(match)?.time ?? Number.NaN;
    const startedAt = survivors.map((s) => firstAt(s, allocatorStarted));
    const first = survivors[startedAt.indexOf(finiteMin(startedAt))]!;
    const unreachable = survivors.map((s) => firstAt(s, (l) => about(l, 'member.unreachable')));
    const downed = survivors.map((s) => firstAt(s, (l) => about(l, 'member.downed')));
    const survivorUids = new Set(before.members.slice(1).map((m) => m.uid));
    const allocated = since(first).find((l) => l.event === 'partitions.allocated');
    const sample: FailoverSample = {
      n: this.slots.length,
      victim: victim.host.name,
      successor: successor.host.name,
      startedOn: first.host.name,
      failoverMs: finiteMin(startedAt) - tKill,
      unreachableMs: finiteMin(unreachable) - tKill,
      downedMs: firstAt(successor, (l) => about(l, 'member.downed')) - tKill,
      downedAllMs: Math.max(...downed) - tKill,
      takingOverMs:
        firstAt(successor, (l) => l.event === 'singleton.taking-over' && l.singleton === ALLOCATOR) - tKill,
      moved: typeof allocated?.moved === 'number' ? allocated.moved : Number.NaN,
      optimum,
      elsewhere: startedAt.filter(Number.isFinite).length - 1,
      otherDowned: new Set(
        survivors.flatMap((s) =>
          since(s)
            .filter((l) => l.event === 'member.downed' && survivorUids.has(l.member?.uid))
            .map((l) => l.member.uid as string),
        ),
      ).size,
      restarts: survivors.reduce((k, s) => k + since(s).filter((l) => l.event === 'node.restart').length, 0),
    };
    await withTimeout(victim.node.exited, 5_000, `exit of killed node ${victim.host.name}`);
    await this.restart(victim, first);
    return sample;
  }

  /** SIGTERM to the oldest (`doyen node` leaves gracefully, then exits): the allocator's hand-over, timed. */
  async leaveOldest(): Promise<HandOverSample> {
    const before = await this.settled();
    const { victim: oldest, successor } = this.roles(before);
    const since = marks(this.slots);
    const of = (s: Slot, event: string) =>
      since(s).filter((l) => l.event === event && l.singleton === ALLOCATOR);
    const t0 = Date.now();
    oldest.node.signal('SIGTERM');
    await waitFor(
      () => of(successor, 'singleton.started').length > 0,
      FAILOVER_TIMEOUT_MS,
      `allocator on ${successor.host.name} after ${oldest.host.name} left`,
    );
    await withTimeout(oldest.node.exited, 20_000, `exit of leaving node ${oldest.host.name}`);
    const started = of(successor, 'singleton.started')[0]!.time as number;
    const stopped = of(oldest, 'singleton.stopped')[0];
    const sample: HandOverSample = {
      n: this.slots.length,
      handOverMs: started - t0,
      requestedMs: (of(successor, 'singleton.hand-over-requested')[0]?.time ?? Number.NaN) - t0,
      handedOverMs: (of(oldest, 'singleton.handed-over')[0]?.time ?? Number.NaN) - t0,
      stopReason: typeof stopped?.reason === 'string' ? stopped.reason : 'never stopped',
      tookOver: of(successor, 'singleton.taking-over').length > 0,
      overlapMs: stopped ? (stopped.time as number) - started : Number.POSITIVE_INFINITY,
      elsewhere: this.slots.filter(
        (s) => s !== successor && s !== oldest && of(s, 'singleton.started').length > 0,
      ).length,
    };
    await this.restart(oldest, successor);
    return sample;
  }

  /**
   * Cuts the oldest off with `cut(oldest host, the other hosts)`, times the allocator's start on the other side,
   * then `heal()`s and waits until the cluster agrees again (restarting the cut-off node if its process ended).
   */
  async cutOffOldest(
    cut: (victim: CliHost, others: readonly CliHost[]) => Promise<void>,
    heal: () => Promise<void>,
  ): Promise<CutOffSample> {
    const before = await this.settled();
    const { victim } = this.roles(before);
    const victimUid = before.members[0]!.uid;
    const majority = this.slots.filter((s) => s !== victim);
    const since = marks(this.slots);
    const tAsked = Date.now();
    await cut(
      victim.host,
      majority.map((s) => s.host),
    );
    const tCut = Date.now();
    try {
      await waitFor(
        () => majority.some((s) => since(s).some(allocatorStarted)),
        FAILOVER_TIMEOUT_MS,
        `allocator started on the majority side after cutting off ${victim.host.name}`,
      );
      await waitFor(
        () =>
          majority.every((s) =>
            since(s).some((l) => l.event === 'member.downed' && l.member?.uid === victimUid),
          ),
        DOWNED_TIMEOUT_MS,
        'member.downed about the cut-off oldest on the majority side',
      ).catch(() => undefined);
      await sleep(300);
    } finally {
      await heal();
    }
    const startedAt = majority.map((s) => since(s).find(allocatorStarted)?.time ?? Number.NaN);
    const downed = majority.map(
      (s) =>
        since(s).find((l) => l.event === 'member.downed' && l.member?.uid === victimUid)?.time ?? Number.NaN,
    );
    const stopped = since(victim).find((l) => l.event === 'singleton.stopped' && l.singleton === ALLOCATOR);
    const first = majority[startedAt.indexOf(finiteMin(startedAt))]!;
    const sample: CutOffSample = {
      n: this.slots.length,
      victim: victim.host.name,
      startedOn: first.host.name,
      failoverMs: finiteMin(startedAt) - tCut,
      cutTookMs: tCut - tAsked,
      victimStoppedMs: (stopped?.time ?? Number.NaN) - tCut,
      downedAllMs: Math.max(...downed) - tCut,
      elsewhere: startedAt.filter(Number.isFinite).length - 1,
    };
    // downed, the cut-off node restarts as a new incarnation in its process and rejoins once healed
    if (victim.node.running) await this.settledAfterRestart();
    else await this.restart(victim, first);
    return sample;
  }

  /**
   * Every two allocator (or other singleton) instances alive at one instant, from every process's log lines
   * and the kills and exits seen here (the testkit's shared checker), up to now.
   */
  overlaps(): { overlaps: InstanceOverlap[]; instances: number } {
    const lines = this.everyProcess.flatMap(({ label, node }) =>
      node.events().map((line) => ({ node: label, line })),
    );
    const intervals = instanceIntervals(lines, this.fates, Date.now());
    return { overlaps: findInstanceOverlaps(intervals), instances: intervals.length };
  }

  /** `node.restart` lines (a live node downed and restarted in its process) logged so far, all processes. */
  restartLines(): number {
    return this.everyProcess.reduce(
      (k, p) => k + p.node.events().filter((l) => l.event === 'node.restart').length,
      0,
    );
  }

  /** kill -9 of every node process; resolves once all have exited (bounded). */
  async close(): Promise<void> {
    const running = this.everyProcess.map((p) => p.node).filter((n) => n.running);
    for (const n of running) n.kill9();
    await withTimeout(Promise.all(running.map((n) => n.exited)), 10_000, 'exit of the node processes').catch(
      () => undefined,
    );
  }
}

const allocatorStarted = (l: LogLine) => l.event === 'singleton.started' && l.singleton === ALLOCATOR;

/** For each slot, its current process's log lines logged from now on. */
function marks(slots: readonly Slot[]): (s: Slot) => LogLine[] {
  const at = new Map(slots.map((s) => [s, { node: s.node, k: s.node.events().length }]));
  return (s) => {
    const m = at.get(s)!;
    return m.node.events().slice(m.k);
  };
}

function upCount(v: ClusterView): number {
  return v.members.filter((m) => m.status === 'up').length;
}

function sameSet(xs: readonly string[], set: ReadonlySet<string>): boolean {
  const own = new Set(xs);
  return own.size === set.size && [...own].every((x) => set.has(x));
}

function finiteMin(xs: readonly number[]): number {
  const finite = xs.filter(Number.isFinite);
  return finite.length > 0 ? Math.min(...finite) : Number.NaN;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
