// N doyen nodes in this process (startNode, defaults: the partition-allocator singleton over 271 partitions),
// for the singleton bench's graceful hand-over and partition-movement figures. Every node logs at info into its
// own stream; its singleton.* and partitions.allocated lines (and anything at warn or worse) are kept with the
// time they were written (performance.now(), one clock for every node here). Nothing is printed.
import { memberKey } from '../../packages/cluster/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { movedPartitions, optimalMoves, type PartitionTable } from '../../packages/partitions/src/index.js';
import { createLogger } from './doyen.js';
import { freePorts } from './free-ports.js';
import { logLineSink } from './log-lines.js';
import type { HandOverSample } from './singleton-cli-nodes.js';
import { waitFor, withTimeout } from './timeout.js';

const CLUSTER = 'bench-singleton-inprocess';
const SECRET = 'bench-singleton-inprocess-secret';
const ALLOCATOR = 'partition-allocator';
const SETTLE_TIMEOUT_MS = 20_000;

export interface LoggedLine {
  readonly t: number;
  readonly event: string;
  readonly level: number;
  readonly fields: Record<string, unknown>;
}

let restarts = 0;

/** `node.restart` lines of every in-process node so far: nodes downed while alive, restarted as new incarnations. */
export function localRestarts(): number {
  return restarts;
}

const kept = (event: string, level: number) =>
  event.startsWith('singleton.') || event === 'partitions.allocated' || level >= 40;

export class LocalNode {
  readonly logged: LoggedLine[] = [];
  private runner: DoyenNode | undefined;

  constructor(readonly port: number) {}

  get node(): DoyenNode {
    if (!this.runner) throw new Error(`node :${this.port} has not started`);
    return this.runner;
  }

  get key(): string {
    return this.node.cluster.self.key;
  }

  /** This node's age in its own view of the membership (lower is older). */
  get age(): number {
    const m = this.node.cluster.state().membership;
    return m?.members.find((x) => memberKey(x) === this.key)?.age ?? Number.POSITIVE_INFINITY;
  }

  async start(seedPort: number): Promise<void> {
    const destination = logLineSink(
      () => performance.now(),
      ({ event, level, ...fields }, t) => {
        const e = event ?? 'other';
        if (e === 'node.restart') restarts++;
        if (kept(e, level ?? 30)) this.logged.push({ t, event: e, level: level ?? 30, fields });
      },
      (line, t) => this.logged.push({ t, event: 'unparsed', level: 50, fields: { line } }),
    );
    this.runner = await startNode(
      {
        cluster: CLUSTER,
        host: '127.0.0.1',
        port: this.port,
        seeds: [{ host: '127.0.0.1', port: seedPort }],
        secret: SECRET,
      },
      { logger: createLogger({ level: 'info', destination }), waitUntilUp: false },
    );
  }

  /** Lines with `event` (for `singleton`, when given) logged at or after index `from`. */
  lines(event: string, from: number, singleton?: string): LoggedLine[] {
    return this.logged
      .slice(from)
      .filter((l) => l.event === event && (singleton === undefined || l.fields.singleton === singleton));
  }

  runsAllocator(): boolean {
    return this.node.singletons.list().some((x) => x.name === ALLOCATOR && x.runsHere);
  }
}

/** One membership change, its partition table before and after as the real cluster published them. */
export interface MovementSample {
  readonly change: string;
  readonly from: number;
  readonly to: number;
  /** Owners that differ between the settled tables before and after (movedPartitions). */
  readonly moved: number;
  /** Sum of `moved` over the `partitions.allocated` lines of this change, and how many lines. */
  readonly logged: number;
  readonly allocations: number;
  /** optimalMoves(before, members after). */
  readonly optimum: number;
}

export class LocalCluster {
  private constructor(readonly nodes: LocalNode[]) {}

  /** Starts `n` nodes: the first forms the cluster, the rest join through it; resolves once settled. */
  static async start(n: number): Promise<LocalCluster> {
    const ports = await freePorts(n);
    const nodes = ports.map((port) => new LocalNode(port));
    const cluster = new LocalCluster([]);
    try {
      await nodes[0]!.start(ports[0]!);
      cluster.nodes.push(nodes[0]!);
      await nodes[0]!.node.cluster.whenUp();
      for (const x of nodes.slice(1)) {
        await x.start(ports[0]!);
        cluster.nodes.push(x);
      }
      await cluster.settled();
      return cluster;
    } catch (error) {
      await cluster.close();
      throw error;
    }
  }

  /** Nodes by age, oldest first (in the first node's view). */
  byAge(): LocalNode[] {
    const m = this.nodes[0]!.node.cluster.state().membership;
    const age = new Map((m?.members ?? []).map((x) => [memberKey(x), x.age]));
    return [...this.nodes].sort(
      (a, b) => (age.get(a.key) ?? Number.POSITIVE_INFINITY) - (age.get(b.key) ?? Number.POSITIVE_INFINITY),
    );
  }

  private agreement(): PartitionTable | undefined {
    const keys = new Set(this.nodes.map((x) => x.key));
    let version: number | undefined;
    let table: PartitionTable | undefined;
    for (const x of this.nodes) {
      const s = x.node.cluster.state();
      const m = s.membership;
      if (s.status !== 'up' || !m || m.members.length !== keys.size || m.unreachable.length > 0) return;
      if (!m.members.every((y) => y.status === 'up' && keys.has(memberKey(y)))) return;
      if (version !== undefined && m.version !== version) return;
      version = m.version;
      const t = x.node.partitions?.table();
      if (!t || (table && t.version !== table.version)) return;
      table = t;
    }
    if (!table) return;
    const owners = new Set(table.owners);
    if (owners.size !== keys.size || ![...owners].every((o) => keys.has(o))) return;
    const running = this.nodes.filter((x) => x.runsAllocator());
    if (running.length !== 1 || running[0] !== this.byAge()[0]) return;
    return table;
  }

  /**
   * Waits until every node sees exactly the live nodes up at one version, all hold one partition table
   * whose owners are exactly those nodes, the allocator runs on the oldest only, and that table is still
   * the newest 300 ms later. Returns the table.
   */
  async settled(timeoutMs = SETTLE_TIMEOUT_MS): Promise<PartitionTable> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      let table: PartitionTable | undefined;
      await waitFor(
        () => (table = this.agreement()) !== undefined,
        Math.max(1, deadline - performance.now()),
        `agreement of ${this.nodes.length} nodes`,
        5,
        () => this.describe(),
      );
      await sleep(300);
      if (this.agreement()?.version === table!.version) return table!;
    }
  }

  describe(): string {
    return this.nodes
      .map((x) => {
        const s = x.node.cluster.state();
        const m = s.membership;
        return `:${x.port} ${s.status} v${m?.version ?? 0} [${(m?.members ?? []).map((y) => y.status).join(',')}] table v${x.node.partitions?.table()?.version ?? 0}${x.runsAllocator() ? ' allocator' : ''}`;
      })
      .join('; ');
  }

  private marks(): Map<LocalNode, number> {
    return new Map(this.nodes.map((x) => [x, x.logged.length]));
  }

  /** Table changes since `marks`: the `partitions.allocated` lines of every node. */
  private allocations(marks: Map<LocalNode, number>): { logged: number; allocations: number } {
    const lines = [...marks].flatMap(([x, from]) => x.lines('partitions.allocated', from));
    return { logged: lines.reduce((s, l) => s + Number(l.fields.moved ?? 0), 0), allocations: lines.length };
  }

  private movement(
    change: string,
    before: PartitionTable,
    after: PartitionTable,
    from: number,
    marks: Map<LocalNode, number>,
  ): MovementSample {
    const members = this.nodes.map((x) => ({ key: x.key, roles: [] as string[] }));
    return {
      change,
      from,
      to: this.nodes.length,
      moved: movedPartitions(before, after).length,
      ...this.allocations(marks),
      optimum: optimalMoves(before, members, { partitionCount: before.partitionCount }),
    };
  }

  /** Starts one more node (joining through the oldest) and measures the partitions that moved. */
  async join(): Promise<MovementSample> {
    const before = await this.settled();
    const from = this.nodes.length;
    const marks = this.marks();
    const [port] = await freePorts(1);
    const x = new LocalNode(port!);
    await x.start(this.byAge()[0]!.port);
    this.nodes.push(x);
    marks.set(x, 0);
    const after = await this.settled();
    return this.movement('join', before, after, from, marks);
  }

  /** Gracefully shuts a node down (its leave, then close) and measures the partitions that moved. */
  async leave(x: LocalNode, change = 'leave'): Promise<MovementSample> {
    const before = await this.settled();
    const from = this.nodes.length;
    const marks = this.marks();
    await withTimeout(x.node.shutdown(), 15_000, `shutdown of :${x.port}`);
    this.nodes.splice(this.nodes.indexOf(x), 1);
    const after = await this.settled();
    return this.movement(change, before, after, from, marks);
  }

  /**
   * Gracefully shuts the oldest down and times the allocator's hand-over to the next oldest; then measures the
   * partitions that moved (the `oldest leave` change) and starts a replacement so the size stays the same (a
   * `join` change).
   */
  async handOver(): Promise<{ sample: HandOverSample; moves: MovementSample[] }> {
    const before = await this.settled();
    const n = this.nodes.length;
    const [oldest, successor] = this.byAge();
    const marks = this.marks();
    const since = (x: LocalNode, event: string) => x.lines(event, marks.get(x)!, ALLOCATOR);
    const t0 = performance.now();
    const leaving = oldest!.node.shutdown();
    await waitFor(
      () => since(successor!, 'singleton.started').length > 0,
      15_000,
      `allocator on :${successor!.port} after :${oldest!.port} left`,
      2,
      () => this.describe(),
    );
    const started = since(successor!, 'singleton.started')[0]!.t;
    await withTimeout(leaving, 15_000, `shutdown of :${oldest!.port}`);
    this.nodes.splice(this.nodes.indexOf(oldest!), 1);
    const stopped = since(oldest!, 'singleton.stopped')[0];
    const sample: HandOverSample = {
      n,
      handOverMs: started - t0,
      requestedMs: (since(successor!, 'singleton.hand-over-requested')[0]?.t ?? Number.NaN) - t0,
      handedOverMs: (since(oldest!, 'singleton.handed-over')[0]?.t ?? Number.NaN) - t0,
      stopReason: String(stopped?.fields.reason ?? 'never stopped'),
      tookOver: since(successor!, 'singleton.taking-over').length > 0,
      overlapMs: stopped ? stopped.t - started : Number.POSITIVE_INFINITY,
      elsewhere: this.nodes.filter((x) => x !== successor && since(x, 'singleton.started').length > 0).length,
    };
    const afterLeave = await this.settled();
    const moves = [this.movement('oldest leave', before, afterLeave, n, marks)];
    moves.push(await this.join());
    return { sample, moves };
  }

  /** Closes every node at once, without leaving. */
  async close(): Promise<void> {
    const closing = Promise.allSettled(this.nodes.map((x) => x.node.close()));
    await withTimeout(closing, 10_000, `closing ${this.nodes.length} nodes`);
    this.nodes.length = 0;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
