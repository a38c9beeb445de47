// The parent side of the singleton bench's failover measurement: N node processes (singleton-node.ts); kill -9
// the oldest and time until the next oldest logs `singleton.started` for the partition allocator; restart the
// killed node at the same address (a new incarnation, now the youngest) and do it again. node-processes.ts
// makes sure no node process outlives the bench.

import { fileURLToPath } from 'node:url';
import { memberKey } from '../../packages/cluster/src/index.js';
import { optimalMoves } from '../../packages/partitions/src/index.js';
import { freePorts } from './free-ports.js';
import {
  allUpAtOneVersion,
  installSignalCleanup,
  liveProcesses,
  NodeProcessBase,
  type OwnedProcess,
  spawnNodeProcess,
  startedOrClosed,
  startNodeProcesses,
} from './node-processes.js';
import {
  type NodeCommand,
  type NodeEvent,
  type NodeLog,
  type NodeState,
  type NodeUp,
  wallMs,
} from './singleton-messages.js';
import { waitFor, withTimeout } from './timeout.js';

export { installSignalCleanup, liveProcesses };

const script = fileURLToPath(new URL('./singleton-node.ts', import.meta.url));
const processWarnings = new Map<string, number>();

/** Warn-or-worse lines the node processes logged, by event. */
export function processWarningCounts(): ReadonlyMap<string, number> {
  return processWarnings;
}

export class NodeProcess extends NodeProcessBase<NodeUp, NodeState, NodeLog | NodeEvent, NodeCommand> {
  readonly logs: NodeLog[] = [];
  readonly events: NodeEvent[] = [];
  private current: { readonly address: string; readonly uid: string } | undefined;

  private constructor(port: number, child: OwnedProcess) {
    super(port, child, { upMs: 30_000, stateMs: 3_000 });
  }

  /** Spawns a node on 127.0.0.1:`port` joining through `seeds` (`host:port` list). */
  static spawn(port: number, seeds: readonly string[]): NodeProcess {
    return new NodeProcess(port, spawnNodeProcess(script, port, seeds));
  }

  /** The current incarnation's key: from the last state answer (a downed node restarts in its process). */
  override get key(): string {
    return this.current ? memberKey(this.current) : super.key;
  }

  protected override onState(state: NodeState): void {
    this.current = { address: state.address, uid: state.uid };
  }

  protected onReport(report: NodeLog | NodeEvent): void {
    if (report.kind === 'event') {
      this.events.push(report);
      return;
    }
    this.logs.push(report);
    if (report.level >= 40) processWarnings.set(report.event, (processWarnings.get(report.event) ?? 0) + 1);
  }
}

/** One kill -9 of the oldest, timed from the kill (wall clock in the bench) to lines in the survivors. */
export interface FailoverSample {
  readonly n: number;
  readonly victim: string;
  /** The survivor expected to take over: the oldest (lowest age) up member after the victim. */
  readonly successor: string;
  /** Kill → `singleton.started` (partition-allocator) logged by the successor. */
  readonly failoverMs: number;
  /** Kill → first `member.unreachable` for the victim in any survivor (NaN when none was published). */
  readonly unreachableMs: number;
  /** Kill → `member.downed` for the victim in the successor. */
  readonly downedMs: number;
  /** Kill → `singleton.taking-over` in the successor (start of the down-removal margin wait). */
  readonly takingOverMs: number;
  /** Kill → the first `partitions.allocated` of the successor's allocator, and the partitions it moved. */
  readonly allocatedMs: number;
  readonly moved: number | undefined;
  /**
   * optimalMoves from the last table before the kill to the members of that allocation: the survivors (less
   * any live member downed meanwhile), so the victim's partitions.
   */
  readonly optimum: number;
  /** `singleton.started` lines for the allocator in survivors other than the successor (should be 0). */
  readonly elsewhere: number;
  /** Live members downed while this failover was measured (false suspicions), and restarts they caused. */
  readonly otherDowned: number;
  readonly restarts: number;
}

/**
 * One graceful leave of the oldest (`shutdown()`), timed from the request to `singleton.started` on the next
 * oldest.
 */
export interface HandOverSample {
  readonly n: number;
  /** shutdown() → `singleton.started` (partition-allocator) on the successor. */
  readonly handOverMs: number;
  /** shutdown() → `singleton.hand-over-requested` on the successor (it saw the oldest leaving). */
  readonly requestedMs: number;
  /** shutdown() → `singleton.handed-over` on the leaving oldest; NaN when it never handed over. */
  readonly handedOverMs: number;
  /** Why the leaving oldest stopped its instance (`handed over`, `node left the cluster`, …). */
  readonly stopReason: string;
  /** The successor went through `singleton.taking-over` (waited the down-removal margin). */
  readonly tookOver: boolean;
  /** ms the successor's instance started before the leaving oldest's stopped (> 0: two at once). */
  readonly overlapMs: number;
  /** `singleton.started` lines for the allocator in nodes other than the successor (should be 0). */
  readonly elsewhere: number;
}

const CONVERGE_TIMEOUT_MS = 30_000;
const FAILOVER_TIMEOUT_MS = 30_000;
const QUIET_AFTER_RESTART_MS = 2_000;
const ALLOCATOR = 'partition-allocator';

export class ProcessCluster {
  private constructor(private readonly nodes: NodeProcess[]) {}

  /** Starts `n` node processes on free ports; resolves once they agree on an all-up membership and table. */
  static async start(n: number): Promise<ProcessCluster> {
    const nodes: NodeProcess[] = [];
    const cluster = new ProcessCluster(nodes);
    return startedOrClosed(cluster, async () => {
      await startNodeProcesses(nodes, await freePorts(n), NodeProcess.spawn, 60_000);
      await cluster.settled();
    });
  }

  get size(): number {
    return this.nodes.length;
  }

  /** The node processes, in slot order (for diagnostics). */
  get processes(): readonly NodeProcess[] {
    return this.nodes;
  }

  /**
   * Waits until every node sees every current incarnation `up` at one membership version, none unreachable,
   * and holds the same partition table, whose owners are exactly those members; returns one node's state.
   */
  async settled(timeoutMs = CONVERGE_TIMEOUT_MS): Promise<NodeState> {
    let agreed: NodeState | undefined;
    let last: NodeState[] = [];
    await waitFor(
      async () => {
        const states = await Promise.all(this.nodes.map((n) => n.state()));
        const keys = new Set(states.map(memberKey));
        last = states;
        const first = states[0]!;
        const ok =
          allUpAtOneVersion(states, keys) &&
          states.every((s) => s.tableVersion === first.tableVersion && s.tableVersion > 0);
        const owners = new Set(first.owners);
        const tableOk = owners.size === keys.size && [...owners].every((o) => keys.has(o));
        const running = states.flatMap((s) => s.running.filter((x) => x === ALLOCATOR)).length;
        if (ok && tableOk && running === 1) agreed = first;
        return agreed !== undefined;
      },
      timeoutMs,
      'cluster and partition table agreement',
      50,
      () =>
        last
          .map(
            (s, i) =>
              `:${this.nodes[i]!.port} ${s.status} v${s.version} members ${s.members.length} table v${s.tableVersion} running [${s.running}]`,
          )
          .join('; '),
    );
    return agreed!;
  }

  /**
   * After a node process restarted: settled, then settled again after a quiet period. A freshly started node
   * process is sometimes suspected (and downed) a few seconds after it joined; that should not fall into the
   * next measurement.
   */
  private async settledAfterRestart(): Promise<void> {
    await this.settled();
    await new Promise((r) => setTimeout(r, QUIET_AFTER_RESTART_MS));
    await this.settled();
  }

  /**
   * Kills the oldest member with SIGKILL, waits for the allocator singleton to start on the next oldest,
   * then (with `restart`) restarts the killed node, a new incarnation joining through the survivors, and waits
   * until all agree again; without, the killed node's slot is dropped.
   */
  async killOldest(restart = true): Promise<FailoverSample> {
    const before = await this.settled();
    const up = [...before.members].sort((a, b) => a.age - b.age);
    const victim = this.nodes.find((n) => n.key === memberKey(up[0]!))!;
    const successor = this.nodes.find((n) => n.key === memberKey(up[1]!))!;
    const victimKey = victim.key;
    const survivors = this.nodes.filter((n) => n !== victim);
    const survivorKeys = survivors.map((n) => n.key);
    const logMarks = new Map(survivors.map((n) => [n, n.logs.length]));
    const eventMarks = new Map(survivors.map((n) => [n, n.events.length]));
    const logsSince = (n: NodeProcess) => n.logs.slice(logMarks.get(n));
    const eventsSince = (n: NodeProcess) => n.events.slice(eventMarks.get(n));
    const started = (l: NodeLog) => l.event === 'singleton.started' && l.singleton === ALLOCATOR;

    const tKill = victim.kill9();
    await waitFor(
      () => logsSince(successor).some(started),
      FAILOVER_TIMEOUT_MS,
      `allocator on ${successor.address} after killing ${victim.address}`,
      5,
    );
    // a moment for the allocation and for any second instance elsewhere to show up
    await new Promise((r) => setTimeout(r, 300));
    const about = (e: NodeEvent, type: string) => e.type === type && memberKey(e) === victimKey;
    const firstLog = (match: (l: NodeLog) => boolean) => logsSince(successor).find(match)?.t ?? Number.NaN;
    const unreachableAt = survivors.flatMap((n) =>
      eventsSince(n)
        .filter((e) => about(e, 'member.unreachable'))
        .map((e) => e.t),
    );
    const allocated = logsSince(successor).find((l) => l.event === 'partitions.allocated');
    // live members downed meanwhile (a false suspicion) leave the allocation too, before or with the victim
    const otherDownedAt = new Map<string, number>();
    for (const n of survivors)
      for (const e of eventsSince(n))
        if (e.type === 'member.downed' && survivorKeys.includes(memberKey(e)))
          otherDownedAt.set(memberKey(e), Math.min(e.t, otherDownedAt.get(memberKey(e)) ?? e.t));
    const allocatedAt = allocated?.t ?? Number.POSITIVE_INFINITY;
    const members = survivorKeys.filter(
      (k) => !((otherDownedAt.get(k) ?? Number.POSITIVE_INFINITY) <= allocatedAt),
    );
    const optimum = optimalMoves(
      tableOf(before),
      members.map((key) => ({ key, roles: [] })),
      { partitionCount: before.owners.length },
    );
    const sample: FailoverSample = {
      n: this.nodes.length,
      victim: victim.address,
      successor: successor.address,
      failoverMs: firstLog(started) - tKill,
      unreachableMs: unreachableAt.length > 0 ? Math.min(...unreachableAt) - tKill : Number.NaN,
      downedMs: (eventsSince(successor).find((e) => about(e, 'member.downed'))?.t ?? Number.NaN) - tKill,
      takingOverMs: firstLog((l) => l.event === 'singleton.taking-over' && l.singleton === ALLOCATOR) - tKill,
      allocatedMs: (allocated?.t ?? Number.NaN) - tKill,
      moved: allocated?.moved,
      optimum,
      elsewhere: survivors.filter((n) => n !== successor && logsSince(n).some(started)).length,
      otherDowned: otherDownedAt.size,
      restarts: survivors.reduce(
        (k, n) => k + logsSince(n).filter((l) => l.event === 'node.restart').length,
        0,
      ),
    };

    await withTimeout(victim.exited, 5_000, `exit of killed node ${victim.address}`);
    const slot = this.nodes.indexOf(victim);
    if (!restart) {
      this.nodes.splice(slot, 1);
      return sample;
    }
    // Seeds: the survivors, the new oldest first, so the restarted node joins rather than forms.
    const seeds = [successor, ...survivors.filter((n) => n !== successor)].map((n) => n.address);
    this.nodes[slot] = NodeProcess.spawn(victim.port, seeds);
    await this.nodes[slot]!.whenUp();
    await this.settledAfterRestart();
    return sample;
  }

  /**
   * Asks the oldest to leave gracefully (IPC `leave`: shutdown(), then exit) and times the allocator's
   * hand-over to the next oldest; then restarts the node that left (a new incarnation, now the youngest).
   */
  async leaveOldest(): Promise<HandOverSample> {
    const before = await this.settled();
    const up = [...before.members].sort((a, b) => a.age - b.age);
    const oldest = this.nodes.find((n) => n.key === memberKey(up[0]!))!;
    const successor = this.nodes.find((n) => n.key === memberKey(up[1]!))!;
    const marks = new Map(this.nodes.map((n) => [n, n.logs.length]));
    const since = (n: NodeProcess, event: string) =>
      n.logs.slice(marks.get(n)).filter((l) => l.event === event && l.singleton === ALLOCATOR);
    const t0 = wallMs();
    oldest.send({ cmd: 'leave' });
    await waitFor(
      () => since(successor, 'singleton.started').length > 0,
      FAILOVER_TIMEOUT_MS,
      `allocator on ${successor.address} after ${oldest.address} left`,
      5,
    );
    await withTimeout(oldest.exited, 20_000, `exit of leaving node ${oldest.address}`);
    const started = since(successor, 'singleton.started')[0]!.t;
    const stopped = since(oldest, 'singleton.stopped')[0];
    const survivors = this.nodes.filter((n) => n !== oldest);
    const sample: HandOverSample = {
      n: this.nodes.length,
      handOverMs: started - t0,
      requestedMs: (since(successor, 'singleton.hand-over-requested')[0]?.t ?? Number.NaN) - t0,
      handedOverMs: (since(oldest, 'singleton.handed-over')[0]?.t ?? Number.NaN) - t0,
      stopReason: stopped?.reason ?? 'never stopped',
      tookOver: since(successor, 'singleton.taking-over').length > 0,
      overlapMs: stopped ? stopped.t - started : Number.POSITIVE_INFINITY,
      elsewhere: survivors.filter((n) => n !== successor && since(n, 'singleton.started').length > 0).length,
    };
    const seeds = [successor, ...survivors.filter((n) => n !== successor)].map((n) => n.address);
    const slot = this.nodes.indexOf(oldest);
    this.nodes[slot] = NodeProcess.spawn(oldest.port, seeds);
    await this.nodes[slot]!.whenUp();
    await this.settledAfterRestart();
    return sample;
  }

  /** Stops every node process (SIGTERM, then SIGKILL), in parallel. */
  async close(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.stop()));
  }
}

/** The table a node reported (the allocator runs with no backups: backupCount defaults to 0). */
export function tableOf(state: NodeState) {
  return {
    version: state.tableVersion,
    partitionCount: state.owners.length,
    owners: state.owners,
    backups: state.owners.map(() => []),
  };
}
