// N doyen nodes in this one process (WsTransport + Cluster each, as test/support/cluster-nodes.ts does), all
// started at once with the first as the only seed: how long until they all agree, and how much heartbeat
// traffic the converged cluster then sends.
import { Cluster, type ClusterConfig } from '../../packages/cluster/src/index.js';
import { type Envelope, type Lane, type UniqueNodeAddress, WsTransport } from './doyen.js';
import { MEMBERSHIP_CLUSTER, MEMBERSHIP_SECRET } from './membership-messages.js';
import { waitFor, withTimeout } from './timeout.js';

export interface JoinOutcome {
  readonly n: number;
  /** Start of the first transport to every node seeing N members `up` at one version. */
  readonly convergeMs: number;
  /** Membership version the nodes agreed on. */
  readonly version: number;
  /** `member.unreachable` / `member.downed` events published by any node, from start to the end. */
  readonly unreachableEvents: number;
  readonly downedEvents: number;
  /**
   * Whether they still agreed (N up, one version, none unreachable) after the traffic window, or after
   * `holdMs` without one: converging and falling apart a moment later is not converging. undefined when
   * they never converged.
   */
  readonly stable: boolean | undefined;
  /** `member.unreachable` events published after convergence (during the window or hold). */
  readonly unreachableAfter: number;
  /** Why the nodes did not converge (then `convergeMs` is NaN); what they each saw, grouped, if not stable. */
  readonly failure: string | undefined;
  readonly views: string | undefined;
  readonly traffic: TrafficOutcome | undefined;
}

export interface TrafficOutcome {
  readonly seconds: number;
  /** `heartbeat.ping` messages handed to the transport, per node per second. */
  readonly pingsPerNodePerSec: number;
  readonly pongsPerNodePerSec: number;
  /** `doyen_wire_messages_sent_total{lane="system"}` delta, per node per second (pings, pongs, pulls, …). */
  readonly systemMessagesPerNodePerSec: number;
}

interface Node {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
  readonly sent: Map<string, number>;
}

const CONVERGE_TIMEOUT_MS = 12_000;

export interface JoinOptions {
  /** Measure heartbeat traffic for this long after convergence. */
  readonly trafficMs?: number;
  /** Without a traffic window: how long the nodes must still agree after converging (default 2 s). */
  readonly holdMs?: number;
  /** Cluster config overrides (defaults otherwise). */
  readonly cluster?: Partial<Omit<ClusterConfig, 'seeds'>>;
}

/** Starts `n` nodes, times their convergence, optionally measures traffic, closes them all. */
export async function joinConvergence(n: number, options: JoinOptions = {}): Promise<JoinOutcome> {
  const transports: WsTransport[] = [];
  const nodes: Node[] = [];
  let unreachableEvents = 0;
  let downedEvents = 0;
  try {
    const t0 = performance.now();
    const start = () =>
      WsTransport.start({
        cluster: MEMBERSHIP_CLUSTER,
        host: '127.0.0.1',
        port: 0,
        wire: { secret: MEMBERSHIP_SECRET },
      }).then((t) => {
        transports.push(t);
        return t;
      });
    // The seed binds first (port 0: the OS picks), since everyone else needs its address.
    const seedTransport = await start();
    const rest = await Promise.all(Array.from({ length: n - 1 }, start));
    const seeds = [{ host: '127.0.0.1', port: seedTransport.port }];
    for (const transport of [seedTransport, ...rest]) {
      const sent = countSends(transport);
      const cluster = Cluster.start(
        transport.system,
        { ...options.cluster, seeds },
        { onMemberRemoved: (x) => transport.forget(x) },
      );
      cluster.subscribe((e) => {
        if (e.type === 'member.unreachable') unreachableEvents++;
        if (e.type === 'member.downed') downedEvents++;
      });
      nodes.push({ transport, cluster, sent });
    }

    let version = 0;
    try {
      await waitFor(
        () => {
          // A node that was downed (or gave up joining) stays out: convergence can no longer happen.
          const out = nodes.filter((x) =>
            ['down', 'join-failed', 'removed'].includes(x.cluster.state().status),
          );
          if (out.length > 0)
            throw new Error(`${out.length} of ${n} nodes are out (downed or failed to join)`);
          const v = agreedVersion(nodes);
          if (v !== undefined) version = v;
          return v !== undefined;
        },
        CONVERGE_TIMEOUT_MS,
        `convergence of ${n} nodes`,
        2,
      );
    } catch (error) {
      const failure = `${(error as Error).message} (${Math.round(performance.now() - t0)} ms from start)`;
      return {
        n,
        convergeMs: Number.NaN,
        version: 0,
        unreachableEvents,
        downedEvents,
        stable: undefined,
        unreachableAfter: 0,
        failure,
        views: describe(nodes),
        traffic: undefined,
      };
    }
    const convergeMs = performance.now() - t0;
    const unreachableBefore = unreachableEvents;

    let traffic: TrafficOutcome | undefined;
    const { trafficMs } = options;
    if (trafficMs === undefined) {
      await new Promise((r) => setTimeout(r, options.holdMs ?? 2_000));
    } else {
      const snapshot = () => ({
        t: performance.now(),
        pings: sum(nodes, (x) => x.sent.get('heartbeat.ping') ?? 0),
        pongs: sum(nodes, (x) => x.sent.get('heartbeat.pong') ?? 0),
        system: sum(nodes, (x) =>
          x.transport.system.metrics.value('doyen_wire_messages_sent_total', { lane: 'system' }),
        ),
      });
      const a = snapshot();
      await new Promise((r) => setTimeout(r, trafficMs));
      const b = snapshot();
      const perNodePerSec = (d: number) => d / n / ((b.t - a.t) / 1_000);
      traffic = {
        seconds: (b.t - a.t) / 1_000,
        pingsPerNodePerSec: perNodePerSec(b.pings - a.pings),
        pongsPerNodePerSec: perNodePerSec(b.pongs - a.pongs),
        systemMessagesPerNodePerSec: perNodePerSec(b.system - a.system),
      };
    }
    const stable = agreedVersion(nodes) !== undefined && unreachableEvents === unreachableBefore;
    return {
      n,
      convergeMs,
      version,
      unreachableEvents,
      downedEvents,
      stable,
      unreachableAfter: unreachableEvents - unreachableBefore,
      failure: undefined,
      views: stable ? undefined : describe(nodes),
      traffic,
    };
  } finally {
    for (const node of nodes) node.cluster.stop();
    const closing = Promise.allSettled(transports.map((t) => t.close()));
    await withTimeout(closing, 10_000, `closing ${transports.length} transports`);
  }
}

/** The version every node holds when all see exactly `nodes.length` members, all `up`; else undefined. */
function agreedVersion(nodes: readonly Node[]): number | undefined {
  let version: number | undefined;
  for (const { cluster } of nodes) {
    const m = cluster.state().membership;
    if (!m || m.members.length !== nodes.length || m.unreachable.length > 0) return undefined;
    if (version !== undefined && m.version !== version) return undefined;
    if (!m.members.every((x) => x.status === 'up')) return undefined;
    version = m.version;
  }
  return version;
}

/** Counts, by message type, every message this node's actor system hands to its transport. */
function countSends(transport: WsTransport): Map<string, number> {
  const sent = new Map<string, number>();
  const send = transport.send.bind(transport);
  transport.send = (node: UniqueNodeAddress, envelope: Envelope, lane: Lane) => {
    const type = envelope.message.type;
    sent.set(type, (sent.get(type) ?? 0) + 1);
    send(node, envelope, lane);
  };
  return sent;
}

function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  let total = 0;
  for (const x of xs) total += f(x);
  return total;
}

/** What the nodes see, grouped: for the error message when they do not converge. */
function describe(nodes: readonly Node[]): string {
  const views = new Map<string, number>();
  for (const { cluster } of nodes) {
    const s = cluster.state();
    const m = s.membership;
    const statuses = new Map<string, number>();
    for (const x of m?.members ?? []) statuses.set(x.status, (statuses.get(x.status) ?? 0) + 1);
    const view = `${s.status} v${m?.version ?? 0} [${[...statuses].map(([k, v]) => `${k}:${v}`).join(' ')}] unreachable:${m?.unreachable.length ?? 0}`;
    views.set(view, (views.get(view) ?? 0) + 1);
  }
  return [...views].map(([view, count]) => `${count}× ${view}`).join('; ');
}
