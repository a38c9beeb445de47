// One run of each split-brain scenario on five in-process nodes over real WebSockets (see
// split-brain-partition.ts for how links are cut). The sides are always the two oldest members (the
// coordinator and the next) against the three youngest: the majority must take over coordination itself.
import {
  defaultClusterConfig,
  memberKey,
  type SbrLease,
  type SbrSettings,
} from '../../packages/cluster/src/index.js';
import { EtcdLease, type Lease } from '../../packages/lease/src/index.js';
import { InMemoryLeaseArbiter } from '../../packages/testkit/src/simulated-stores.js';
import {
  type BenchNode,
  type ClusterOptions,
  closeAll,
  converged,
  describeAll,
  sleep,
  startCluster,
} from './split-brain-nodes.js';
import { heal, partition } from './split-brain-partition.js';
import { waitFor } from './timeout.js';

export type Strategy = 'keep-majority' | 'static-quorum' | 'keep-oldest' | 'down-all' | 'lease-majority';
export type Side = 'majority' | 'minority';

const NODES = 5;
const MINORITY = 2;
/** Heartbeat history before the cut, so the detectors have learnt the link. */
const WARM_MS = 1_000;
const DECIDE_TIMEOUT_MS = 15_000;
/** After settling, the outcome must still hold this long (no second decision undoing it). */
const HOLD_MS = 500;
const LEASE = { ttlMs: 5_000, timeoutMs: 2_000 };

/** The side expected to keep running after this partition (two oldest | three youngest). */
export function expectedSurvivors(strategy: Strategy): Side | 'none' {
  switch (strategy) {
    case 'keep-majority':
    case 'static-quorum':
    case 'lease-majority': // the majority tries the lease at once, the minority 2 s later
      return 'majority';
    case 'keep-oldest':
      return 'minority';
    case 'down-all':
      return 'none';
  }
}

export interface SideDecision {
  readonly ms: number;
  readonly decision: string;
  readonly reason: string;
}

export interface StrategySample {
  readonly strategy: Strategy;
  /** Partition to the first `sbr.decision` logged by any node. */
  readonly decisionMs: number;
  /** Partition to the first `member.downed` event published by any node. */
  readonly downedMs: number;
  /** Partition to the later of the two sides' first `sbr.decision`: both sides have acted. */
  readonly bothDecidedMs: number;
  /**
   * Partition to the surviving side's nodes all seeing exactly the survivors up (none unreachable, a
   * coordinator among them); with no survivors (down-all), to every node being down.
   */
  readonly convergeMs: number;
  /** Partition to every node of the other side being down. */
  readonly othersDownMs: number;
  readonly survivors: Side | 'none';
  /** The survivors were the expected side and stayed so for HOLD_MS. */
  readonly correct: boolean;
  readonly decisions: Partial<Record<Side, SideDecision>>;
  /**
   * `sbr.decision` lines logged per side. A side that downs itself needs one: its decider's update downs
   * the others. More means they did not hear it and decided again later, by themselves.
   */
  readonly decisionLines: Record<Side, number>;
}

/** Warn-level log lines the nodes wrote during the runs, by event (`sbr.decision`, `dead-letter`, …). */
export const warnings: Record<string, number> = {};

export interface LeaseBackend {
  readonly kind: 'etcd' | 'in-memory';
  /** One lease client per node, all on one lease name (fresh for each run). */
  readonly leases: (run: number) => {
    forNode: (port: number) => Lease;
    /** Releases what is held (`ownerOf(port)`: the owner that node acquired as) and closes every client. */
    close: (ownerOf: (port: number) => string | undefined) => Promise<void>;
  };
}

export function leaseBackend(endpoints: string[] | undefined): LeaseBackend {
  if (endpoints) {
    return {
      kind: 'etcd',
      leases: (run) => {
        // A cluster name no earlier run used, so no run sees another's key.
        const cluster = `bench-sbr-${process.pid}-${run}-${Date.now().toString(36)}`;
        const made: { lease: EtcdLease; port: number }[] = [];
        return {
          forNode: (port) => {
            const lease = new EtcdLease({ endpoints, cluster, name: 'sbr', ...LEASE });
            made.push({ lease, port });
            return lease;
          },
          close: async (ownerOf) => {
            // The holder gives the key back at once rather than leaving it to lapse after the TTL.
            await Promise.allSettled(
              made.map(async ({ lease, port }) => {
                const owner = ownerOf(port);
                if (owner) await lease.release(owner).catch(() => undefined);
                await lease.close();
              }),
            );
          },
        };
      },
    };
  }
  return {
    kind: 'in-memory',
    leases: () => {
      const arbiter = new InMemoryLeaseArbiter();
      const made: Lease[] = [];
      return {
        forNode: () => {
          const lease = arbiter.lease('sbr', LEASE);
          made.push(lease);
          return lease;
        },
        close: async () => {
          await Promise.allSettled(made.map((lease) => lease.close()));
        },
      };
    },
  };
}

/** The sides of the cut: the two oldest members and the three youngest, by member age. */
function sidesByAge(nodes: readonly BenchNode[]): Record<Side, BenchNode[]> {
  const m = nodes[0]!.node.cluster.state().membership!;
  const age = (x: BenchNode) => m.members.find((y) => memberKey(y) === x.key)!.age;
  const byAge = [...nodes].sort((a, b) => age(a) - age(b));
  return { minority: byAge.slice(0, MINORITY), majority: byAge.slice(MINORITY) };
}

/**
 * Starts five nodes with `strategy` (defaults otherwise, static-quorum with quorumSize 3), cuts the two
 * oldest off from the three youngest, and times the decisions until both sides have settled.
 */
export async function strategyRun(
  strategy: Strategy,
  run: number,
  backend: LeaseBackend,
): Promise<StrategySample> {
  const leases = strategy === 'lease-majority' ? backend.leases(run) : undefined;
  const sbr = (port: number): SbrSettings => ({
    ...defaultClusterConfig.sbr,
    ...(strategy === 'static-quorum' ? { quorumSize: 3 } : {}),
    ...(leases ? { lease: leases.forNode(port) as SbrLease } : {}),
  });
  let nodes: BenchNode[] = [];
  try {
    // A downed node exits (rather than restarting into a partition it cannot cross).
    nodes = await startCluster(NODES, (port) => ({ downing: strategy, sbr: sbr(port) }), 'exit');
    await sleep(WARM_MS);
    if (!converged(nodes)) throw new Error(`not converged before the cut: ${describeAll(nodes)}`);
    const sides = sidesByAge(nodes);
    const logMark = new Map(nodes.map((x) => [x, x.logged.length]));
    const eventMark = new Map(nodes.map((x) => [x, x.events.length]));
    const survivors = expectedSurvivors(strategy);
    const keep = survivors === 'none' ? [] : sides[survivors];
    const others = nodes.filter((x) => !keep.includes(x));
    const keepKeys = new Set(keep.map((x) => x.key));

    const t0 = performance.now();
    partition(
      sides.minority.map((x) => x.port),
      sides.majority.map((x) => x.port),
    );
    let convergedAt: number | undefined;
    let othersDownAt: number | undefined;
    const settled = () => {
      const now = performance.now();
      if (convergedAt === undefined) {
        const done = keep.length > 0 ? keep.every((x) => x.sees(keepKeys)) : others.every(isDown);
        if (done) convergedAt = now;
      }
      if (othersDownAt === undefined && others.every(isDown)) othersDownAt = now;
      return convergedAt !== undefined && othersDownAt !== undefined;
    };
    await waitFor(settled, DECIDE_TIMEOUT_MS, `${strategy}: both sides settled`, 2, () => describeAll(nodes));
    await sleep(HOLD_MS);
    const correct = (keep.length === 0 || keep.every((x) => x.sees(keepKeys))) && others.every(isDown);

    const firstDecision = (side: BenchNode[]): SideDecision | undefined => {
      const lines = side.flatMap((x) => {
        const line = x.firstLogged('sbr.decision', logMark.get(x));
        return line ? [line] : [];
      });
      const first = lines.sort((a, b) => a.t - b.t)[0];
      return first
        ? {
            ms: first.t - t0,
            decision: String(first.fields.decision),
            reason: String(first.fields.reason),
          }
        : undefined;
    };
    const decisions: Partial<Record<Side, SideDecision>> = {};
    for (const side of ['majority', 'minority'] as const) {
      const d = firstDecision(sides[side]);
      if (d) decisions[side] = d;
    }
    const decisionLines = (side: BenchNode[]) =>
      side.reduce(
        (n, x) => n + x.logged.slice(logMark.get(x)).filter((l) => l.event === 'sbr.decision').length,
        0,
      );
    const decided = Object.values(decisions).map((d) => d.ms);
    const downed = nodes.flatMap((x) => {
      const e = x.firstEvent('member.downed', eventMark.get(x));
      return e ? [e.t - t0] : [];
    });
    return {
      strategy,
      decisionMs: decided.length > 0 ? Math.min(...decided) : Number.NaN,
      downedMs: downed.length > 0 ? Math.min(...downed) : Number.NaN,
      bothDecidedMs: decided.length === 2 ? Math.max(...decided) : Number.NaN,
      convergeMs: convergedAt! - t0,
      othersDownMs: othersDownAt! - t0,
      survivors,
      correct,
      decisions,
      decisionLines: { majority: decisionLines(sides.majority), minority: decisionLines(sides.minority) },
    };
  } finally {
    heal();
    try {
      await closeAll(nodes);
    } finally {
      await leases?.close((port) => nodes.find((x) => x.port === port)?.firstKey);
      countWarnings(nodes, warnings);
    }
  }
}

function isDown(x: BenchNode): boolean {
  return x.status === 'down';
}

export interface MergeSample {
  /** Partition to both sides each seeing only their own members up, with their own coordinator. */
  readonly splitMs: number;
  /** How long the two clusters ran side by side before the heal. */
  readonly apartMs: number;
  /** Heal to the first `split-brain.merge` logged (a coordinator decided to merge). */
  readonly mergeStartMs: number;
  /** Heal to all five seeing the same five current incarnations up and the same coordinator. */
  readonly mergeMs: number;
  /** New incarnations started by the merge (the smaller side's members rejoining). */
  readonly restarts: number;
  /**
   * `split-brain.merge` lines with role `initiator`: 1 when the smaller side's coordinator told its members
   * and they followed (role `member`); more when a member missed that and merged later on its own.
   */
  readonly initiators: number;
  /** Still one cluster of five HOLD_MS later. */
  readonly stable: boolean;
}

/**
 * `auto` downing: cuts the two oldest off from the three youngest, waits until each side runs as a cluster of
 * its own (each coordinator downed the other side), lets them run apart for `apartMs`, heals, and times the
 * merge back into one cluster.
 */
export async function mergeRun(apartMs: number): Promise<MergeSample> {
  let nodes: BenchNode[] = [];
  try {
    const auto: ClusterOptions = { downing: 'auto' };
    nodes = await startCluster(NODES, () => auto, 'restart');
    await sleep(WARM_MS);
    if (!converged(nodes)) throw new Error(`not converged before the cut: ${describeAll(nodes)}`);
    const sides = sidesByAge(nodes);
    const keysOf = (side: BenchNode[]) => new Set(side.map((x) => x.key));
    const minorityKeys = keysOf(sides.minority);
    const majorityKeys = keysOf(sides.majority);
    const incarnationsBefore = nodes.reduce((s, x) => s + x.node.incarnations, 0);

    const t0 = performance.now();
    partition(
      sides.minority.map((x) => x.port),
      sides.majority.map((x) => x.port),
    );
    const splitAt = await waitFor(
      () =>
        sides.minority.every((x) => x.sees(minorityKeys)) &&
        sides.majority.every((x) => x.sees(majorityKeys)),
      DECIDE_TIMEOUT_MS,
      'auto: two clusters of their own',
      2,
      () => describeAll(nodes),
    );
    await sleep(apartMs);
    if (
      !(
        sides.minority.every((x) => x.sees(minorityKeys)) && sides.majority.every((x) => x.sees(majorityKeys))
      )
    )
      throw new Error(`the two sides did not stay apart: ${describeAll(nodes)}`);
    const logMark = new Map(nodes.map((x) => [x, x.logged.length]));

    const t1 = performance.now();
    heal();
    const mergedAt = await waitFor(
      () => converged(nodes),
      20_000,
      'auto: merge after heal',
      2,
      () => describeAll(nodes),
    );
    const mergeLogs = nodes.flatMap((x) => {
      const line = x.firstLogged('split-brain.merge', logMark.get(x));
      return line ? [line.t - t1] : [];
    });
    const initiators = nodes
      .flatMap((x) => x.logged.slice(logMark.get(x)))
      .filter((l) => l.event === 'split-brain.merge' && l.fields.role === 'initiator').length;
    await sleep(HOLD_MS);
    return {
      splitMs: splitAt - t0,
      apartMs: t1 - splitAt,
      mergeStartMs: mergeLogs.length > 0 ? Math.min(...mergeLogs) : Number.NaN,
      mergeMs: mergedAt - t1,
      restarts: nodes.reduce((s, x) => s + x.node.incarnations, 0) - incarnationsBefore,
      initiators,
      stable: converged(nodes),
    };
  } finally {
    heal();
    await closeAll(nodes);
    countWarnings(nodes, warnings);
  }
}

/** Warn-level log lines of the nodes, by event name, added to `into` (for the report). */
function countWarnings(nodes: readonly BenchNode[], into: Record<string, number>): void {
  for (const x of nodes) for (const l of x.logged) into[l.event] = (into[l.event] ?? 0) + 1;
}
