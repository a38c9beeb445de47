// Five (or N) doyen nodes in this process, each a real `startNode` (WsTransport on 127.0.0.1 + Cluster, with
// the node runner that restarts incarnations), for the split-brain bench. Every node has its own logger whose
// warn-level lines (`sbr.decision`, `split-brain.merge`, `node.restart`, …) are kept with the time they were
// written, and the cluster events of its first incarnation are kept too. Nothing is printed.
import { type ClusterConfig, type ClusterEvent, memberKey } from '../../packages/cluster/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { createLogger } from './doyen.js';
import { freePorts } from './free-ports.js';
import { logLineSink } from './log-lines.js';
import { waitFor, withTimeout } from './timeout.js';

export const SBR_BENCH_CLUSTER = 'bench-split-brain';
const SECRET = 'bench-split-brain-secret';

/** A warn-or-worse log line of one node: its `event`, the time it was written, its fields. */
export interface LoggedLine {
  readonly t: number;
  readonly event: string;
  readonly fields: Record<string, unknown>;
}

/** A cluster event of the node's first incarnation, flattened. */
export interface SeenEvent {
  readonly t: number;
  readonly type: ClusterEvent['type'];
  /** `host:port#uid` of the member the event is about ('' for a coordinator change to none). */
  readonly key: string;
}

export type ClusterOptions = Partial<Omit<ClusterConfig, 'seeds' | 'name' | 'roles'>>;

export class BenchNode {
  readonly logged: LoggedLine[] = [];
  readonly events: SeenEvent[] = [];
  private runner: DoyenNode | undefined;

  constructor(readonly port: number) {}

  get node(): DoyenNode {
    if (!this.runner) throw new Error(`node :${this.port} has not started`);
    return this.runner;
  }

  /** The first incarnation's key. */
  firstKey: string | undefined;

  /** The current incarnation's key, `127.0.0.1:port#uid`. */
  get key(): string {
    return this.node.cluster.self.key;
  }

  /** @internal */
  async start(seed: number, options: ClusterOptions, onDowned: 'exit' | 'restart'): Promise<void> {
    const destination = logLineSink(
      () => performance.now(),
      ({ event, ...fields }, t) => this.logged.push({ t, event: event ?? 'other', fields }),
      (line, t) => this.logged.push({ t, event: 'unparsed', fields: { line } }),
    );
    this.runner = await startNode(
      {
        cluster: SBR_BENCH_CLUSTER,
        host: '127.0.0.1',
        port: this.port,
        seeds: [{ host: '127.0.0.1', port: seed }],
        secret: SECRET,
        clusterOptions: options,
        onDowned,
      },
      { logger: createLogger({ level: 'warn', destination }), waitUntilUp: false },
    );
    this.firstKey = this.runner.cluster.self.key;
    this.runner.cluster.subscribe((event) => {
      const member = 'member' in event ? event.member : event.coordinator;
      this.events.push({
        t: performance.now(),
        type: event.type,
        key: member ? memberKey(member) : '',
      });
    });
  }

  /** The first line logged with `event` at or after index `from`. */
  firstLogged(event: string, from = 0): LoggedLine | undefined {
    for (let i = from; i < this.logged.length; i++)
      if (this.logged[i]!.event === event) return this.logged[i];
    return undefined;
  }

  firstEvent(type: SeenEvent['type'], from = 0): SeenEvent | undefined {
    for (let i = from; i < this.events.length; i++) if (this.events[i]!.type === type) return this.events[i];
    return undefined;
  }

  /** `up` or `down` or …: where this node's current incarnation is in its life as a member. */
  get status(): string {
    return this.node.cluster.state().status;
  }

  /**
   * Whether this node is up and sees exactly `keys` as members, all `up`, none unreachable, and a coordinator
   * among them.
   */
  sees(keys: ReadonlySet<string>): boolean {
    const s = this.node.cluster.state();
    const m = s.membership;
    if (s.status !== 'up' || !m || m.members.length !== keys.size || m.unreachable.length > 0) return false;
    if (!m.members.every((x) => x.status === 'up' && keys.has(memberKey(x)))) return false;
    return s.coordinator !== undefined && keys.has(memberKey(s.coordinator));
  }

  /** One line: status, version, members by status, unreachable count, coordinator port. */
  describe(): string {
    const s = this.node.cluster.state();
    const m = s.membership;
    const members = (m?.members ?? []).map((x) => `${x.address.split(':')[1]}:${x.status}`).join(',');
    return `:${this.port} ${s.status} v${m?.version ?? 0} [${members}] unreachable ${m?.unreachable.length ?? 0} coordinator :${s.coordinator?.address.split(':')[1] ?? '-'}`;
  }
}

/**
 * Starts `n` nodes on free ports: the first forms the cluster, the rest join through it. `optionsFor` gives
 * each node's cluster options (each may need its own lease client). Resolves once every node agrees on an
 * all-up membership of all `n`; on failure closes what it started and rejects.
 */
export async function startCluster(
  n: number,
  optionsFor: (port: number) => ClusterOptions,
  onDowned: 'exit' | 'restart',
  timeoutMs = 20_000,
): Promise<BenchNode[]> {
  const ports = await freePorts(n);
  const nodes = ports.map((port) => new BenchNode(port));
  try {
    const seed = ports[0]!;
    await nodes[0]!.start(seed, optionsFor(seed), onDowned);
    await nodes[0]!.node.cluster.whenUp();
    await Promise.all(nodes.slice(1).map((x) => x.start(seed, optionsFor(x.port), onDowned)));
    await waitFor(
      () => converged(nodes),
      timeoutMs,
      `convergence of ${n} nodes`,
      10,
      () => describeAll(nodes),
    );
    return nodes;
  } catch (error) {
    await closeAll(nodes);
    throw error;
  }
}

/** Every node sees every node's current incarnation up, and they agree on the coordinator. */
export function converged(nodes: readonly BenchNode[]): boolean {
  const keys = new Set(nodes.map((x) => x.key));
  if (!nodes.every((x) => x.sees(keys))) return false;
  const coordinators = new Set(nodes.map((x) => x.node.cluster.state().coordinator?.uid));
  return coordinators.size === 1;
}

export function describeAll(nodes: readonly BenchNode[]): string {
  return nodes.map((x) => x.describe()).join('; ');
}

/** Closes every node at once, without leaving (what a crash looks like to the others). */
export async function closeAll(nodes: readonly BenchNode[]): Promise<void> {
  const closing = Promise.allSettled(
    nodes.map((x) => {
      try {
        return x.node.close();
      } catch {
        return Promise.resolve(); // never started
      }
    }),
  );
  await withTimeout(closing, 10_000, `closing ${nodes.length} nodes`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
