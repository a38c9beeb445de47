// One run of the sharding bench: the scenarios on real `doyen node` processes (ShardingProcesses)
// with the load generator's node, and the in-process memory / local cold activation child.
// Each scenario returns raw figures; bench/sharding.ts takes medians over runs and sets targets.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { DEFAULT_RESTARTS_PER_SECOND, EtcdRememberStore } from '../../packages/sharding/src/index.js';
import {
  findInstanceOverlaps,
  instanceIntervals,
  type ProcessFate,
} from '../../packages/testkit/src/instance-overlaps.js';
import { etcdEndpoints } from '../../test/support/etcd.js';
import { ETCD_MISSING, etcdInstalled, startThrowawayEtcd } from '../../test/support/throwaway-etcd.js';
import { freePorts } from './free-ports.js';
import { type GroupTimes, timedByGroup } from './proc-schedstat.js';
import { startRawAskBaseline } from './raw-relay-baseline.js';
import { type ColdTraceSummary, summarizeColdTrace } from './sharding-cold-trace.js';
import type { ColdTrace } from './sharding-load.js';
import { COUNTED_EVENTS, CPU_PROF_DIR, type EntityLine, ShardingProcesses } from './sharding-nodes.js';
import {
  COLD_WARMUP_TYPE,
  entityId,
  REMEMBER_CLUSTER_ENV,
  REMEMBER_ETCD_ENV,
  REMEMBER_RATE_ENV,
  REMEMBERED_COUNTER_TYPE,
  rememberedId,
} from './sharding-protocol.js';
import { busiestWindow, median, percentile } from './stats.js';

export const PARTITIONS = 271;
const HOSTING_SLOTS = 6;
/** Entities of the sharded tell, and plain actors of its same-fan-out baseline. */
const TELL_ENTITIES = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ShardingRunOptions {
  /** Hosting nodes of the rolling restart and the kills (the issue's figure: 5). */
  readonly nodes: number;
  /** Rolling restart orders: 1 (oldest last) or 2 (then oldest first). */
  readonly orders: number;
  /** The population under steady load through the rolling restarts. */
  readonly entities: number;
  /** Steady load, asks per second (round robin over the population). */
  readonly rate: number;
  /** Entities whose added latency the kill -9 of the oldest is measured on. */
  readonly measured: number;
  /** Entities of the killed owner probed for their first answer. */
  readonly probed: number;
  /** Cold activations per measurement (local and from another node), at `coldRate`/s. */
  readonly cold: number;
  readonly coldRate: number;
  /**
   * Unmeasured cold asks from another node before the measured ones, at `coldRate`/s (and as many
   * raw asks each way before the raw baseline's): the first asks of a fresh cluster run code V8 has
   * not optimised yet on every process they cross (the local figure's child warms up on 500).
   */
  readonly coldWarmup: number;
  /** Entities activated in one node for the memory figure. */
  readonly memoryEntities: number;
  /** Tells per round of the throughput comparison, and rounds. */
  readonly tells: number;
  readonly tellRounds: number;
  /** The quiet steady load before a fault whose median latency is the baseline. */
  readonly baselineMs: number;
  /** How long after the kill -9 of the oldest the added latency is measured. */
  readonly killWindowMs: number;
  /** How long after each restart the table must be active everywhere and balanced (else it is noted). */
  readonly settleMs: number;
  /** Skip the 3 → 6 scale-out (it needs a fresh cluster). */
  readonly skipScale: boolean;
  /** Only the hot path's figures (cold activation, tell throughput): no fault scenario. */
  readonly hotPathOnly?: boolean;
  /** Run only the rolling restart (no memory child, cold activation, tell, kills or scale-out). */
  readonly onlyRolling?: boolean;
  /** The nodes run the CLI from its TypeScript sources under tsx, not the built bundle. */
  readonly fromSource?: boolean;
  /** Remembered ids on the owner the remembered-entities scenario kills (0: no such scenario). */
  readonly remembered?: number;
  /** The nodes' `restartsPerSecond` (undefined: sharding's default, 100). */
  readonly rememberRate?: number;
  readonly log: (line: string) => void;
}

export interface ShardingRunFigures {
  /** A scenario that failed: its figures are missing (null in the JSON), the others stand. */
  errors: string[];
  rolling?: {
    addedP99Ms: number;
    addedMaxMs: number;
    baselineP50Ms: number;
    samples: number;
    failedAsks: number;
    durationS: number;
    lost: number;
    duplicated: number;
    outOfOrder: number;
    unanswered: number;
    /** Entities whose state was lost: restarted without their snapshot (a recovery, not a hand-off). */
    stateResets: number;
    overlaps: number;
    overlapExamples: string[];
    /**
     * Log lines lost between the nodes and the bench (numbers skipped in `logSeq`), over the run's
     * processes: overlaps are read from lines, so with any lost they may be stop lines gone missing.
     */
    linesLost: number;
    /** Restarts after which the table was not active everywhere and balanced within `settleMs`. */
    unbalanced: string[];
    /** Why the restarts stopped early (a node that could not rejoin), when they did. */
    aborted?: string;
    /** Over the restarts, lines of bench/lib/sharding-nodes.ts's COUNTED_EVENTS (lease lapses, retires given up, …). */
    events: Record<string, number>;
  };
  killNonOwner?: {
    addedP99Ms: number;
    addedMaxMs: number;
    baselineP50Ms: number;
    samples: number;
    failedAsks: number;
  };
  killOwner?: {
    recoveryP50Ms: number;
    recoveryP99Ms: number;
    recoveryMaxMs: number;
    probed: number;
    unrecovered: number;
  };
  scale?: { balancedAfterUpMs: number; movedMoreThanOnce: number; moves: number };
  /** kill -9 of the owner of `ids` remembered entities (etcd store): their restarts on the survivors. */
  remembered?: RememberedFigures;
  /** Absent with `onlyRolling`, as are `memory` and `tell`. */
  cold?: {
    localP50Ms: number;
    localP99Ms: number;
    remoteP50Ms: number;
    remoteP99Ms: number;
    remoteFailed: number;
    /** p99 of the warm-up's cold asks from another node (the first of a fresh cluster, not measured). */
    warmupP99Ms: number;
    /** The warm-up's entities still active when the measured asks begin (passivated by then: 0). */
    warmupLeftActive: number;
    /** p99 of asks from another node to the same ids once active (the round trip, no activation). */
    activeP99Ms: number;
    activeP50Ms: number;
    /** p99 of asks from another node at the same rate to plain actors there (no sharding). */
    plainAskP99Ms: number;
    plainAskP50Ms: number;
    /**
     * The optimum, same rate and pacing, in the same run: raw ws + msgpackr child processes (see
     * raw-relay-baseline.ts), generator → echo (doyen's topology) and generator → relay → echo; with
     * more than one hosting node also generator → one echo per hosting node by the id's hash (doyen's
     * fan-out: each owner wakes for its share of the asks).
     */
    raw: {
      directP50Ms: number;
      directP99Ms: number;
      relayedP50Ms: number;
      relayedP99Ms: number;
      spreadP50Ms?: number;
      spreadP99Ms?: number;
      failed: number;
    };
    /** The cold asks from another node split at the process boundaries (see sharding-cold-trace.ts). */
    remoteSplit?: ColdTraceSummary;
  };
  memory?: {
    entities: number;
    rssBytes: number;
    heapBytes: number;
    bytesPerEntity: number;
    entitiesPerGB: number;
  };
  tell?: {
    shardedPerS: number;
    /** Plain remote tell to one actor per hosting node (the wire's best case). */
    plainPerS: number;
    /** Sharded against `plainPerS`. */
    ratio: number;
    /** Plain remote tell to as many actors as the sharded tell's entities (the same fan-out). */
    plainFanoutPerS: number;
    /** Sharded against `plainFanoutPerS`: what sharding adds alone. */
    ratioFanout: number;
    deliveredSharded: number;
    deliveredPlain: number;
    deliveredPlainFanout: number;
  };
}

export interface RememberedFigures {
  /** Remembered ids, all on the killed owner (asked once each, in the store before the kill). */
  ids: number;
  /** Of them, started again on a survivor after the kill (nothing was sent to them meanwhile). */
  restarted: number;
  /** Ids started more than once after the kill. */
  startedTwice: number;
  /** Overlapping activations of the remembered ids (the rolling figure's checker). */
  overlaps: number;
  survivors: number;
  /** The nodes' restartsPerSecond. */
  rate: number;
  /** The most starts one survivor made in any 1 s window. */
  busiestSecond: number;
  /** The kill → the first and the last id started again. */
  firstStartMs: number;
  lastStartMs: number;
}

interface Samples {
  next: number;
  t: number[];
  ms: (number | null)[];
  /** The entity index of each sample (steady load only). */
  e?: number[];
  errors: Record<string, number>;
}

/**
 * The `count` slowest asks sent in the window: entity, its partition, send and answer time (wall
 * clock ms, the nodes' log clock), to align with the keepers' hand-offs and activations.
 */
function slowestAsks(
  s: Samples,
  window: { from: number; to: number },
  count: number,
): { entity: number; partition: number; sentAt: number; answeredAt: number | null; ms: number }[] {
  const rows: { entity: number; partition: number; sentAt: number; answeredAt: number | null; ms: number }[] =
    [];
  s.t.forEach((t, k) => {
    const ms = s.ms[k];
    const entity = s.e?.[k];
    if (ms === null || ms === undefined || entity === undefined || t < window.from || t >= window.to) return;
    rows.push({
      entity,
      partition: partitionOf(entityId(entity), PARTITIONS),
      sentAt: Math.round(t),
      answeredAt: ms < 0 ? null : Math.round(t + ms),
      ms: ms < 0 ? Number.POSITIVE_INFINITY : ms,
    });
  });
  return rows.sort((a, b) => b.ms - a.ms).slice(0, count);
}

/** Added latency of the samples sent in [from, to): each latency minus the baseline's median. */
function addedLatency(
  s: Samples,
  baseline: { from: number; to: number },
  window: { from: number; to: number },
  timeoutMs: number,
) {
  const base: number[] = [];
  const during: number[] = [];
  let failed = 0;
  s.t.forEach((t, k) => {
    const ms = s.ms[k];
    if (ms === null || ms === undefined) return;
    if (t >= baseline.from && t < baseline.to && ms >= 0) base.push(ms);
    if (t >= window.from && t < window.to) {
      if (ms < 0) failed++;
      during.push(ms < 0 ? timeoutMs : ms);
    }
  });
  const baselineP50Ms = base.length ? median(base) : 0;
  const added = during.map((ms) => Math.max(0, ms - baselineP50Ms));
  return {
    addedP99Ms: added.length ? percentile(added, 99) : Number.NaN,
    addedMaxMs: added.length ? added.reduce((a, b) => Math.max(a, b)) : Number.NaN,
    baselineP50Ms,
    samples: added.length,
    failedAsks: failed,
  };
}

export async function runSharding(options: ShardingRunOptions): Promise<ShardingRunFigures> {
  const { log } = options;
  // the remembered type's store: a real etcd (Debian's etcd-server, or ETCD_ENDPOINTS)
  const wantRemembered = (options.remembered ?? 0) > 0 && !options.onlyRolling && !options.hotPathOnly;
  if (wantRemembered && !etcdInstalled() && !etcdEndpoints())
    log(`remembered entities after a kill -9: not measured, ${ETCD_MISSING}`);
  const etcd =
    wantRemembered && (etcdInstalled() || etcdEndpoints()) ? await startThrowawayEtcd() : undefined;
  // an interrupted bench exits through process.exit (the testkit's signal cleanup): etcd goes with it
  const stopEtcd = () => etcd?.stop();
  process.once('exit', stopEtcd);
  const rememberCluster = `sharding-bench-${randomBytes(4).toString('hex')}`;
  const rememberStore = etcd
    ? {
        endpoints: etcd.endpoints,
        cluster: rememberCluster,
        store: new EtcdRememberStore({ endpoints: etcd.endpoints, cluster: rememberCluster }),
        rate: options.rememberRate ?? DEFAULT_RESTARTS_PER_SECOND,
      }
    : undefined;
  const procs = await newProcesses(options);
  try {
    const startCluster = () => startHostingCluster(procs, options);
    if (options.onlyRolling) {
      await startCluster();
      const errors: string[] = [];
      const rolling = await rollingRestart(procs, options).catch((error: unknown) => {
        errors.push(`rolling restart: ${error instanceof Error ? error.message : String(error)}`);
        return undefined;
      });
      return rolling ? { errors, rolling } : { errors };
    }
    const { cold: coldLocal, ...memory } = await runMemoryChild(options);
    log(`memory: ${memory.entities} entities, RSS ${(memory.rssBytes / 2 ** 20).toFixed(0)} MB`);
    await startCluster();

    type ColdAsks = { ms: number[]; failed: number; trace: ColdTrace[] };
    // the first asks of a fresh cluster run unoptimised code on every process they cross: warmed up
    // on other ids first, as the local figure's child does (their p99 is kept, to show the gap)
    const warm = await procs.control<ColdAsks>('/cold', {
      prefix: 'warm-',
      count: options.coldWarmup,
      rate: options.coldRate,
      // a type of its own, passivated soon after (COLD_WARMUP_TYPE)
      warmup: true,
    });
    // the optimum beside them, same rate and pacing, same machine and moment: raw ws + msgpackr child
    // processes (warmed up alike), one round before doyen's asks and one after, pooled
    const doyenPids = {
      generator: [procs.load?.pid ?? -1],
      owners: procs.running().map((slot) => procs.nodes[slot]?.pid ?? -1),
    };
    const cpuPerAsk: Record<string, GroupTimes> = {};
    const phaseWindows: Record<string, [number, number]> = {};
    const timedAsks = async <T>(phase: string, ask: () => Promise<T>): Promise<T> => {
      const from = Date.now();
      const monotonicFromUs = process.hrtime.bigint() / 1000n;
      const { result, times } = await timedByGroup(doyenPids, options.cold, ask);
      cpuPerAsk[phase] = times;
      phaseWindows[phase] = [from, Date.now()];
      // a CPU profile's timestamps are this clock's µs: the window to slice each node's profile by
      if (CPU_PROF_DIR !== undefined)
        log(
          `phase ${phase}: ${monotonicFromUs}–${process.hrtime.bigint() / 1000n} µs (monotonic, as the profiles)`,
        );
      return result;
    };
    const { warmupLeftActive, coldRemote, again, plainAsks, rawFigures } = await withRawBaseline(
      options,
      cpuPerAsk,
      async () => {
        // the cluster's own background (heartbeats, gossip, timers) over as long as a phase's asks
        // take, per ask: what to subtract from the phases' CPU to see the asks' own (measured here,
        // once the warm-up's entities have been passivated)
        await timedAsks('idle', () => sleep((options.cold * 1000) / options.coldRate));
        const paced = { count: options.cold, rate: options.coldRate };
        const askColdIds = () => procs.control<ColdAsks>('/cold', { prefix: 'cold-', ...paced });
        return {
          warmupLeftActive: await activeEntities(procs, COLD_WARMUP_TYPE),
          coldRemote: await timedAsks('cold', askColdIds),
          // the same ids again at the same rate, now active: an ask's round trip without the activation
          again: await timedAsks('active', askColdIds),
          // the same round trip to plain actors on the hosting nodes: what sharding adds, isolated
          plainAsks: await timedAsks('plain', () =>
            procs.control<{ ms: number[]; failed: number }>('/plain-asks', paced),
          ),
        };
      },
    );
    const remoteSplit = summarizeColdTrace(coldRemote.trace, procs);
    const cold = {
      localP50Ms: median(coldLocal),
      localP99Ms: percentile(coldLocal, 99),
      remoteP50Ms: coldRemote.ms.length ? median(coldRemote.ms) : Number.NaN,
      remoteP99Ms: coldRemote.ms.length ? percentile(coldRemote.ms, 99) : Number.NaN,
      remoteFailed: coldRemote.failed,
      warmupP99Ms: warm.ms.length ? percentile(warm.ms, 99) : Number.NaN,
      warmupLeftActive,
      activeP50Ms: again.ms.length ? median(again.ms) : Number.NaN,
      activeP99Ms: again.ms.length ? percentile(again.ms, 99) : Number.NaN,
      plainAskP50Ms: plainAsks.ms.length ? median(plainAsks.ms) : Number.NaN,
      plainAskP99Ms: plainAsks.ms.length ? percentile(plainAsks.ms, 99) : Number.NaN,
      raw: rawFigures,
      cpuPerAsk,
      ...(remoteSplit ? { remoteSplit } : {}),
    };
    log(
      `cold activation: local p99 ${cold.localP99Ms.toFixed(2)} ms, from another node p99 ${cold.remoteP99Ms.toFixed(2)} ms (its ${options.coldWarmup} warm-up asks, the first of the cluster: p99 ${cold.warmupP99Ms.toFixed(2)} ms; the same ids again, active: p99 ${cold.activeP99Ms.toFixed(2)} ms; plain actors there: p99 ${cold.plainAskP99Ms.toFixed(2)} ms)`,
    );
    log(
      `raw ws + msgpackr asks, same rate: direct p50 ${rawFigures.directP50Ms.toFixed(2)} / p99 ${rawFigures.directP99Ms.toFixed(2)} ms, through a relay p50 ${rawFigures.relayedP50Ms.toFixed(2)} / p99 ${rawFigures.relayedP99Ms.toFixed(2)} ms, spread over ${options.nodes} echoes p50 ${rawFigures.spreadP50Ms?.toFixed(2) ?? '-'} / p99 ${rawFigures.spreadP99Ms?.toFixed(2) ?? '-'} ms (doyen: cold p50 ${cold.remoteP50Ms.toFixed(2)}, active p50 ${cold.activeP50Ms.toFixed(2)} / p99 ${cold.activeP99Ms.toFixed(2)} ms)`,
    );
    log(`CPU and run-queue wait per ask (µs), by phase and process group: ${JSON.stringify(cpuPerAsk)}`);
    // per phase, the processes' GC pauses (`bench.gc`, read from their logs by now): count and ms
    const gcPerPhase: Record<string, { generator: [number, number]; owners: [number, number] }> = {};
    for (const [phase, [from, to]] of Object.entries(phaseWindows)) {
      const gc = { generator: [0, 0] as [number, number], owners: [0, 0] as [number, number] };
      for (const g of procs.gcPauses) {
        if (g.at < from || g.at > to) continue;
        const tally = g.proc === 'load' ? gc.generator : gc.owners;
        tally[0]++;
        tally[1] = Math.round((tally[1] + g.ms) * 100) / 100;
      }
      gcPerPhase[phase] = gc;
    }
    log(`GC pauses per phase ([count, ms]; the generator's, the owners'): ${JSON.stringify(gcPerPhase)}`);
    if (remoteSplit) log(`cold from another node, split: ${JSON.stringify(remoteSplit)}`);
    const warmSplit = summarizeColdTrace(warm.trace, procs);
    if (warmSplit) log(`its warm-up, split: ${JSON.stringify(warmSplit)}`);

    const tp = await procs.control<{
      sharded: number[];
      plain: number[];
      plainFanout: number[];
      delivered: { sharded: number; plain: number; plainFanout: number };
    }>('/throughput', { entities: TELL_ENTITIES, messages: options.tells, rounds: options.tellRounds });
    const tell = {
      shardedPerS: median(tp.sharded),
      plainPerS: median(tp.plain),
      ratio: median(tp.sharded) / median(tp.plain),
      plainFanoutPerS: median(tp.plainFanout),
      ratioFanout: median(tp.sharded) / median(tp.plainFanout),
      deliveredSharded: tp.delivered.sharded,
      deliveredPlain: tp.delivered.plain,
      deliveredPlainFanout: tp.delivered.plainFanout,
    };
    log(
      `tell: sharded ${tell.shardedPerS.toFixed(0)}/s to ${TELL_ENTITIES} entities; plain remote to one actor per node ${tell.plainPerS.toFixed(0)}/s (×${tell.ratio.toFixed(2)}), to ${TELL_ENTITIES} actors ${tell.plainFanoutPerS.toFixed(0)}/s (×${tell.ratioFanout.toFixed(2)})`,
    );

    const errors: string[] = [];
    if (options.hotPathOnly) return { errors, cold, memory, tell };
    const scenario = async <T>(name: string, run: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await run();
      } catch (error) {
        const message = `${name}: ${error instanceof Error ? error.message : String(error)}`;
        errors.push(message);
        log(`FAILED ${message}`);
        return undefined;
      }
    };
    const rolling = await scenario('rolling restart', () => rollingRestart(procs, options));
    const killNonOwner = await scenario('kill -9 of the oldest', () => killOldest(procs, options));
    const killOwner = await scenario('kill -9 of an owner', () => killAnOwner(procs, options));
    await procs.killAll();
    const scale = options.skipScale ? undefined : await scenario('scale 3 → 6', () => scaleOut(procs, log));
    await procs.killAll();
    // on a cluster of its own: a remembered type lists its ids in etcd on every partition
    // activation, which the figures above (no remembered type) must not carry
    const remembered = rememberStore
      ? await scenario('remembered entities after a kill -9', async () => {
          const own = await newProcesses(options, {
            [REMEMBER_ETCD_ENV]: rememberStore.endpoints.join(','),
            [REMEMBER_CLUSTER_ENV]: rememberStore.cluster,
            ...(options.rememberRate !== undefined
              ? { [REMEMBER_RATE_ENV]: String(options.rememberRate) }
              : {}),
          });
          try {
            await startHostingCluster(own, options);
            return await rememberedAfterKill(own, options, rememberStore);
          } finally {
            await own.killAll();
          }
        })
      : undefined;
    const figures: ShardingRunFigures = { errors, cold, memory, tell };
    if (rolling) figures.rolling = rolling;
    if (killNonOwner) figures.killNonOwner = killNonOwner;
    if (killOwner) figures.killOwner = killOwner;
    if (remembered) figures.remembered = remembered;
    if (scale) figures.scale = scale;
    return figures;
  } finally {
    await procs.killAll();
    await rememberStore?.store.close();
    stopEtcd();
    process.off('exit', stopEtcd);
  }
}

/** The bench's processes on fresh ports (`env` for every one of them). */
async function newProcesses(
  options: ShardingRunOptions,
  env?: Record<string, string>,
): Promise<ShardingProcesses> {
  const ports = await freePorts(HOSTING_SLOTS * 2 + 3);
  const hostPorts = ports.slice(0, HOSTING_SLOTS);
  return new ShardingProcesses({
    cluster: 'sharding-bench',
    ports: hostPorts,
    httpPorts: ports.slice(HOSTING_SLOTS, HOSTING_SLOTS * 2),
    loadPorts: {
      port: ports[HOSTING_SLOTS * 2]!,
      httpPort: ports[HOSTING_SLOTS * 2 + 1]!,
      control: ports[HOSTING_SLOTS * 2 + 2]!,
    },
    secret: randomBytes(12).toString('hex'),
    fromSource: options.fromSource === true,
    ...(env ? { env } : {}),
  });
}

/** Active entities of `type` over the running slots (GET /cluster/shards). */
async function activeEntities(procs: ShardingProcesses, type: string): Promise<number> {
  const views = await Promise.all(procs.running().map((slot) => procs.shards(slot)));
  return views
    .flatMap((v) => v?.regions ?? [])
    .filter((r) => r.typeName === type)
    .flatMap((r) => r.shards)
    .reduce((sum, shard) => sum + shard.numEntities, 0);
}

/** `options.nodes` hosting nodes (the first forms the cluster), then the load generator's node; balanced. */
async function startHostingCluster(procs: ShardingProcesses, options: ShardingRunOptions): Promise<void> {
  const slots = Array.from({ length: options.nodes }, (_, s) => s);
  await procs.start(0);
  await Promise.all(slots.slice(1).map((slot) => procs.start(slot)));
  await procs.startLoad();
  await mustBalance(procs, slots, 90_000);
  options.log(`${options.nodes} nodes up, ${PARTITIONS} partitions active and balanced`);
}

/**
 * Polls the slots' GET /cluster/shards until every partition is active once and the slots are
 * within ±1: the time it was so, or (after `timeoutMs`) undefined and what stood in the way.
 */
async function waitBalanced(
  procs: ShardingProcesses,
  slots: readonly number[],
  timeoutMs: number,
  everyMs = 200,
): Promise<{ at: number | undefined; detail: string }> {
  const deadline = Date.now() + timeoutMs;
  const ideal = PARTITIONS / slots.length;
  for (;;) {
    const views = await Promise.all(slots.map((s) => procs.shards(s)));
    const counts = views.map((v) => v?.activePartitions.length ?? -1);
    const distinct = new Set(views.flatMap((v) => v?.activePartitions ?? []));
    if (
      distinct.size === PARTITIONS &&
      counts.reduce((a, b) => a + b, 0) === PARTITIONS &&
      counts.every((c) => Math.abs(c - ideal) <= 1)
    )
      return { at: Date.now(), detail: '' };
    if (Date.now() > deadline) {
      const table = await procs.owners(slots[0]!);
      const inactive = (table?.owners ?? []).flatMap((o, p) =>
        distinct.has(p) ? [] : [`${p}@n${procs.slotOf(o)}`],
      );
      return {
        at: undefined,
        detail:
          `not balanced within ${timeoutMs} ms: active per slot ${slots.map((s, k) => `n${s} ${counts[k]}`).join(', ')}; ` +
          `table v${table?.version}: ${inactive.length} partitions active nowhere (partition@owner) ${inactive.slice(0, 12).join(' ')}${inactive.length > 12 ? ' …' : ''}`,
      };
    }
    await sleep(everyMs);
  }
}

/** waitBalanced for set-up steps: the bench cannot go on without it. */
async function mustBalance(
  procs: ShardingProcesses,
  slots: readonly number[],
  timeoutMs: number,
): Promise<void> {
  const { at, detail } = await waitBalanced(procs, slots, timeoutMs);
  if (at === undefined) throw new Error(detail);
}

/** The hosting slots, oldest member first (as slot `asSeenBy` sees the membership). */
async function slotsByAge(procs: ShardingProcesses, asSeenBy: number): Promise<number[]> {
  const members = await procs.membersByAge(asSeenBy);
  return members
    .filter((m) => m.roles.includes('shard'))
    .map((m) => procs.slotOf(m.address))
    .filter((s) => s >= 0);
}

async function rollingRestart(
  procs: ShardingProcesses,
  options: ShardingRunOptions,
): Promise<ShardingRunFigures['rolling']> {
  const { log } = options;
  const timeoutMs = 5000;
  const act = await procs.control<{ answered: number; failed: number }>('/activate', {
    count: options.entities,
    rate: Math.max(options.coldRate, 2000),
  });
  log(`${act.answered} entities active (${act.failed} asks failed)`);
  const { next: from } = await procs.control<Samples>('/samples?from=1000000000');
  await procs.control('/steady', { count: options.entities, rate: options.rate, timeoutMs });
  const baseline = { from: Date.now(), to: 0 };
  await sleep(options.baselineMs);
  baseline.to = Date.now();
  const window = { from: Date.now(), to: 0 };
  const countsBefore = new Map(procs.eventCounts);
  const running = procs.running();
  const unbalanced: string[] = [];
  let aborted: string | undefined;
  restarts: for (const order of (['oldest last', 'oldest first'] as const).slice(0, options.orders)) {
    const byAge = await slotsByAge(procs, running[0]!);
    const sequence = order === 'oldest last' ? [...byAge].reverse() : byAge;
    for (const slot of sequence) {
      // the node to ask about the cluster must not be the one restarting
      const t0 = Date.now();
      await procs.stop(slot);
      try {
        await procs.start(slot);
      } catch (error) {
        // the cluster did not take the node back: measured as far as it went
        aborted = `${order}, n${slot}: ${error instanceof Error ? error.message : String(error)}`;
        log(`rolling restart aborted (${aborted})`);
        break restarts;
      }
      const { at, detail } = await waitBalanced(procs, running, options.settleMs);
      if (at === undefined) {
        unbalanced.push(`after ${procs.procs[slot]}: ${detail}`);
        log(`rolling restart (${order}): ${procs.procs[slot]} back, ${detail}`);
      } else log(`rolling restart (${order}): ${procs.procs[slot]} back, balanced after ${at - t0} ms`);
    }
  }
  window.to = Date.now();
  // a little load after the last restart: what was held by then shows in the samples
  await sleep(Math.min(2000, options.baselineMs));
  await procs.control('/steady/stop', { waitMs: timeoutMs * 2 });
  const samples = await procs.control<Samples>(`/samples?from=${from}`);
  const latency = addedLatency(samples, baseline, window, timeoutMs);
  for (const [error, n] of Object.entries(samples.errors)) log(`  ask failed ×${n}: ${error}`);
  // what the slowest asks waited on: their partitions, to find in the nodes' logs (SHARDING_BENCH_LOG_DIR)
  const slow = slowestAsks(samples, window, 8);
  if (slow.length > 0)
    log(
      `  slowest asks (partition p, sent → answered, wall-clock ms): ${slow
        .map(
          (r) =>
            `p${r.partition} ${r.sentAt} → ${r.answeredAt ?? 'failed'} (${Number.isFinite(r.ms) ? r.ms.toFixed(0) : '—'} ms)`,
        )
        .join('; ')}`,
    );
  const verdict = await procs.control<{
    checked: number;
    lost: number;
    duplicated: number;
    outOfOrder: number;
    unanswered: number;
    stateResets: number;
    countedBeforeReset: number;
  }>('/verify', { count: options.entities, rate: 5000 });
  const overlaps = entityOverlaps(procs.entityLines, procs.fates, Date.now());
  const linesLostByProc = procs.linesLost();
  const linesLost = Object.values(linesLostByProc).reduce((a, b) => a + b, 0);
  log(
    `rolling restart: added p99 ${latency.addedP99Ms.toFixed(1)} ms, max ${latency.addedMaxMs.toFixed(1)} ms; ` +
      `lost ${verdict.lost}, duplicated ${verdict.duplicated}, out of order ${verdict.outOfOrder}, overlaps ${overlaps.count}, ` +
      `log lines lost ${linesLost}${linesLost > 0 ? ` (${JSON.stringify(linesLostByProc)})` : ''}; ` +
      `${verdict.stateResets} entities restarted without their state (${verdict.countedBeforeReset} counts gone with it)`,
  );
  const events = Object.fromEntries(
    COUNTED_EVENTS.map((e) => [e, (procs.eventCounts.get(e) ?? 0) - (countsBefore.get(e) ?? 0)]),
  );
  log(
    `  over the restarts: ${Object.entries(events)
      .map(([e, n]) => `${e} ×${n}`)
      .join(', ')}`,
  );
  // lost / duplicated / out of order are read from the entities that answered the final check
  if (verdict.unanswered > 0)
    log(
      `  ${verdict.unanswered} of ${verdict.checked} entities did not answer the final check: the counts above cover only the others`,
    );
  return {
    ...latency,
    durationS: (window.to - window.from) / 1000,
    lost: verdict.lost,
    duplicated: verdict.duplicated,
    outOfOrder: verdict.outOfOrder,
    unanswered: verdict.unanswered,
    stateResets: verdict.stateResets,
    overlaps: overlaps.count,
    overlapExamples: overlaps.examples,
    linesLost,
    unbalanced,
    events,
    ...(aborted !== undefined ? { aborted } : {}),
  };
}

/**
 * Overlapping activations per entity id: the testkit's instance-overlaps checker, each entity id
 * taken for one "singleton", on the nodes' sharding.activated / sharding.passivated lines and the
 * processes' deaths (one machine, one clock). Grouped by id: one entity's intervals are few.
 */
export function entityOverlaps(
  lines: readonly EntityLine[],
  fates: readonly ProcessFate[],
  until: number,
): { count: number; examples: string[] } {
  const byEntity = new Map<string, EntityLine[]>();
  for (const l of lines) {
    let mine = byEntity.get(l.entityId);
    if (!mine) byEntity.set(l.entityId, (mine = []));
    mine.push(l);
  }
  let count = 0;
  const examples: string[] = [];
  for (const [id, mine] of byEntity) {
    const overlaps = findInstanceOverlaps(instanceIntervals(mine, fates, until));
    count += overlaps.length;
    for (const o of overlaps.slice(0, Math.max(0, 3 - examples.length)))
      examples.push(`${id}: ${o.a.node} and ${o.b.node} both active for ${o.overlapMs} ms`);
  }
  return { count, examples };
}

/** Entity indices (of the population) whose partition `keep` accepts in the table `slot` sees. */
async function entitiesWhere(
  procs: ShardingProcesses,
  slot: number,
  population: number,
  want: number,
  keep: (owner: string) => boolean,
) {
  const table = await procs.owners(slot);
  if (!table) throw new Error('no partition table');
  const picked: number[] = [];
  for (let i = 0; i < population && picked.length < want; i++)
    if (keep(table.owners[partitionOf(entityId(i), PARTITIONS)]!)) picked.push(i);
  return picked;
}

async function killOldest(
  procs: ShardingProcesses,
  options: ShardingRunOptions,
): Promise<ShardingRunFigures['killNonOwner']> {
  const timeoutMs = 5000;
  const byAge = await slotsByAge(procs, procs.running()[0]!);
  const oldest = byAge[0]!;
  const witness = byAge[byAge.length - 1]!;
  const measured = await entitiesWhere(
    procs,
    witness,
    options.entities,
    options.measured,
    (o) => o !== procs.address(oldest),
  );
  const { next: from } = await procs.control<Samples>('/samples?from=1000000000');
  await procs.control('/steady', { indices: measured, rate: options.rate, timeoutMs });
  const baseline = { from: Date.now(), to: 0 };
  await sleep(options.baselineMs);
  baseline.to = Date.now();
  const killedAt = await procs.kill(oldest);
  // through the detection, the downing, the allocator's failover and the new table
  await sleep(options.killWindowMs);
  const window = { from: killedAt, to: Date.now() };
  await procs.control('/steady/stop', { waitMs: timeoutMs * 2 });
  const samples = await procs.control<Samples>(`/samples?from=${from}`);
  const figures = addedLatency(samples, baseline, window, timeoutMs);
  options.log(
    `kill -9 of the oldest (${procs.procs[oldest]}), ${measured.length} entities elsewhere: added p99 ${figures.addedP99Ms.toFixed(1)} ms, max ${figures.addedMaxMs.toFixed(1)} ms`,
  );
  await procs.start(oldest);
  const settled = await waitBalanced(procs, procs.running(), options.settleMs);
  if (settled.at === undefined) options.log(`after the oldest's restart: ${settled.detail}`);
  return figures;
}

/**
 * Remembered entities after a kill -9: `options.remembered` ids of the remembered type, all in
 * partitions of the youngest hosting node, asked once each (activated there, their ids written to
 * etcd); kill -9 of that node; then nothing is sent to them, so every start on a survivor is a
 * restart from the store. Reads from the nodes' lines: all restarted, none twice, no overlap, and
 * each survivor's busiest second against the configured rate.
 */
async function rememberedAfterKill(
  procs: ShardingProcesses,
  options: ShardingRunOptions,
  remember: { readonly store: EtcdRememberStore; readonly rate: number },
): Promise<RememberedFigures> {
  const byAge = await slotsByAge(procs, procs.running()[0]!);
  if (byAge.length < 2) throw new Error(`needs two hosting nodes, found ${byAge.length}`);
  const victim = byAge[byAge.length - 1]!;
  const survivors = byAge.filter((s) => s !== victim);
  const table = await procs.owners(byAge[0]!);
  const victimAddress = procs.address(victim);
  if (!table?.owners.includes(victimAddress)) throw new Error(`${procs.procs[victim]} owns no partition`);
  const indices: number[] = [];
  for (let i = 0; indices.length < options.remembered!; i++)
    if (table.owners[partitionOf(rememberedId(i), PARTITIONS)] === victimAddress) indices.push(i);
  const wanted = new Set(indices.map(rememberedId));
  const activated = await procs.control<{ answered: number; failed: number }>('/remembered/activate', {
    indices,
    rate: 2000,
  });
  if (activated.failed > 0)
    throw new Error(`${activated.failed} of ${indices.length} remembered ids did not answer`);
  // every id in the store before the kill (the owner writes in batches)
  const partitions = [...new Set(indices.map((i) => partitionOf(rememberedId(i), PARTITIONS)))];
  const stored = async () => {
    let n = 0;
    for (const p of partitions)
      for (const id of await remember.store.list(REMEMBERED_COUNTER_TYPE, p)) if (wanted.has(id)) n++;
    return n;
  };
  const storeDeadline = Date.now() + 30_000;
  while ((await stored()) < wanted.size) {
    if (Date.now() > storeDeadline) throw new Error(`not every remembered id reached etcd within 30 s`);
    await sleep(200);
  }
  const victimProc = procs.procs[victim]!;
  const killedAt = await procs.kill(victim);
  const startsAfterKill = () =>
    procs.entityLines.filter(
      (l) =>
        wanted.has(l.entityId) && l.line.event === 'singleton.started' && Number(l.line.time) >= killedAt,
    );
  // the partitions' failover (~2 s), then the ids at the rate on each survivor, with room to spare
  const boundMs = 10_000 + (3 * 1000 * wanted.size) / (remember.rate * survivors.length);
  for (;;) {
    if (new Set(startsAfterKill().map((l) => l.entityId)).size === wanted.size) break;
    if (Date.now() - killedAt > boundMs) break;
    await sleep(200);
  }
  // a start twice would come after the first: a second longer to see one
  await sleep(1000);
  const starts = startsAfterKill();
  const perId = new Map<string, number>();
  for (const l of starts) perId.set(l.entityId, (perId.get(l.entityId) ?? 0) + 1);
  const times = starts.map((l) => Number(l.line.time));
  let busiestSecond = 0;
  for (const proc of new Set(starts.map((l) => l.node))) {
    const mine = starts.filter((l) => l.node === proc).map((l) => Number(l.line.time));
    busiestSecond = Math.max(busiestSecond, busiestWindow(mine, 1000));
  }
  const overlaps = entityOverlaps(
    procs.entityLines.filter((l) => wanted.has(l.entityId)),
    procs.fates,
    Date.now(),
  );
  const figures: RememberedFigures = {
    ids: wanted.size,
    restarted: perId.size,
    startedTwice: [...perId.values()].filter((n) => n > 1).length,
    overlaps: overlaps.count,
    survivors: survivors.length,
    rate: remember.rate,
    busiestSecond,
    firstStartMs: times.length ? Math.min(...times) - killedAt : Number.NaN,
    lastStartMs: times.length ? Math.max(...times) - killedAt : Number.NaN,
  };
  options.log(
    `remembered entities after a kill -9 of ${victimProc}: ${figures.restarted} of ${figures.ids} restarted on ${figures.survivors} survivors ` +
      `${figures.firstStartMs.toFixed(0)}–${figures.lastStartMs.toFixed(0)} ms after the kill, ${figures.startedTwice} twice, ` +
      `${figures.overlaps} overlaps${overlaps.examples.length ? ` (${overlaps.examples.join('; ')})` : ''}; busiest second of one node ${busiestSecond} starts (rate ${remember.rate}/s)`,
  );
  return figures;
}

async function killAnOwner(
  procs: ShardingProcesses,
  options: ShardingRunOptions,
): Promise<ShardingRunFigures['killOwner']> {
  const byAge = await slotsByAge(procs, procs.running()[0]!);
  // the youngest: its kill moves no singleton, only its partitions
  const victim = byAge[byAge.length - 1]!;
  const probedIdx = await entitiesWhere(
    procs,
    byAge[0]!,
    options.entities,
    options.probed,
    (o) => o === procs.address(victim),
  );
  const killedAt = await procs.kill(victim);
  const probe = await procs.control<{ recoveredMs: number[]; unrecovered: number }>('/probe', {
    indices: probedIdx,
    since: killedAt,
    everyMs: 50,
    timeoutMs: 250,
    durationMs: 30_000,
  });
  const r = probe.recoveredMs;
  const figures = {
    recoveryP50Ms: r.length ? median(r) : Number.NaN,
    recoveryP99Ms: r.length ? percentile(r, 99) : Number.NaN,
    recoveryMaxMs: r.length ? r.reduce((a, b) => Math.max(a, b)) : Number.NaN,
    probed: probedIdx.length,
    unrecovered: probe.unrecovered,
  };
  options.log(
    `kill -9 of an owner (${procs.procs[victim]}): its entities answer again after p50 ${figures.recoveryP50Ms.toFixed(0)} ms, ` +
      `p99 ${figures.recoveryP99Ms.toFixed(0)} ms (${figures.unrecovered} of ${figures.probed} never)`,
  );
  // the last scenario on this cluster: the scale-out starts a fresh one
  return figures;
}

/** A fresh cluster of 3, then 3 more started at once: balanced ±1 how long after the last is up; repeat moves. */
async function scaleOut(
  procs: ShardingProcesses,
  log: (line: string) => void,
): Promise<NonNullable<ShardingRunFigures['scale']>> {
  await procs.start(0);
  await Promise.all([1, 2].map((s) => procs.start(s)));
  await mustBalance(procs, [0, 1, 2], 90_000);
  const startedAt = Date.now();
  await Promise.all([3, 4, 5].map((s) => procs.start(s)));
  const all = [0, 1, 2, 3, 4, 5];
  let upAt: number | undefined;
  const deadline = Date.now() + 60_000;
  while (upAt === undefined) {
    const views = await Promise.all(all.map((s) => procs.membersByAge(s)));
    if (views.every((m) => m.length === 6)) upAt = Date.now();
    else if (Date.now() > deadline) throw new Error('the 6 nodes were not all up within 60 s');
    else await sleep(50);
  }
  const balanced = await waitBalanced(procs, all, 60_000, 50);
  if (balanced.at === undefined) log(`scale 3 → 6: ${balanced.detail}`);
  const balancedAt = balanced.at ?? Number.NaN;
  // moves settle: a late second move would come right after
  await sleep(2000);
  // a move is an activation on another process than the partition's previous one (a lease blip
  // re-activates a partition where it was: not a move)
  const where = new Map<number, string>();
  const perPartition = new Map<number, number>();
  for (const a of [...procs.partitionActivations].sort((x, y) => x.t - y.t)) {
    const before = where.get(a.partition);
    where.set(a.partition, a.proc);
    if (a.t < startedAt || before === undefined || before === a.proc) continue;
    perPartition.set(a.partition, (perPartition.get(a.partition) ?? 0) + 1);
  }
  const figures = {
    balancedAfterUpMs: Math.max(0, balancedAt - upAt),
    movedMoreThanOnce: [...perPartition.values()].filter((n) => n > 1).length,
    moves: [...perPartition.values()].reduce((a, b) => a + b, 0),
  };
  log(
    `scale 3 → 6: balanced ${figures.balancedAfterUpMs} ms after all were up; ${figures.moves} moves, ${figures.movedMoreThanOnce} partitions moved more than once`,
  );
  return figures;
}

type RawFigures = NonNullable<ShardingRunFigures['cold']>['raw'];

/**
 * Runs `measure` (doyen's asks) between two rounds of the raw ask baseline at the same rate (after
 * `coldWarmup` unmeasured raw asks each way): the raw figures pooled over both rounds.
 */
async function withRawBaseline<T>(
  options: ShardingRunOptions,
  cpuPerAsk: Record<string, GroupTimes>,
  measure: () => Promise<T>,
): Promise<T & { rawFigures: RawFigures }> {
  const raw = await startRawAskBaseline(options.nodes);
  try {
    const asks = { direct: [] as number[], relayed: [] as number[], spread: [] as number[], failed: 0 };
    const phases = { direct: 'rawDirect', relayed: 'rawRelayed', spread: 'rawSpread' } as const;
    const round = async (prefix: string, keep: boolean) => {
      for (const via of ['direct', 'relayed', 'spread'] as const) {
        const ask = raw[via];
        const pids = raw.pids[via];
        if (!ask || !pids) continue;
        const request = { prefix, count: keep ? options.cold : options.coldWarmup, rate: options.coldRate };
        const { result, times } = await timedByGroup(pids, request.count, () => ask(request));
        if (!keep) continue;
        // the first measured round's CPU (the second is alike; both rounds' latencies are pooled)
        cpuPerAsk[phases[via]] ??= times;
        asks[via].push(...result.ms);
        asks.failed += result.failed;
      }
    };
    await round('warm-', false);
    await round('raw-a-', true);
    const measured = await measure();
    await round('raw-b-', true);
    const p = (xs: number[], q: number) => (xs.length ? percentile(xs, q) : Number.NaN);
    return {
      ...measured,
      rawFigures: {
        directP50Ms: p(asks.direct, 50),
        directP99Ms: p(asks.direct, 99),
        relayedP50Ms: p(asks.relayed, 50),
        relayedP99Ms: p(asks.relayed, 99),
        ...(asks.spread.length > 0
          ? { spreadP50Ms: p(asks.spread, 50), spreadP99Ms: p(asks.spread, 99) }
          : {}),
        failed: asks.failed,
      },
    };
  } finally {
    await raw.stop();
  }
}

/** The one-node child: local cold activations, then `memoryEntities` active entities' RSS. */
async function runMemoryChild(
  options: ShardingRunOptions,
): Promise<ShardingRunFigures['memory'] & { cold: number[] }> {
  const [port] = await freePorts(1);
  const child = spawn(
    process.execPath,
    [
      '--conditions=@doyen/source',
      '--max-old-space-size=4096',
      '--import',
      import.meta.resolve('tsx'),
      fileURLToPath(new URL('./sharding-memory-child.ts', import.meta.url)),
      String(options.memoryEntities),
      String(options.cold),
      String(options.coldRate),
      String(port),
    ],
    { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] },
  );
  let out = '';
  (child.stdio[3] as Readable).on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const line = out.split('\n').find((l) => l.startsWith('{"entities"'));
  if (!line) throw new Error(`the memory child printed no result (exit ${code})`);
  const r = JSON.parse(line) as {
    entities: number;
    rss: number;
    heapUsed: number;
    rssBefore: number;
    heapBefore: number;
    cold: number[];
  };
  // A few thousand entities can hide in the RSS's noise (a GC returning pages makes the delta zero or
  // negative): their heap growth is a floor for what they cost, so the larger of the two is counted.
  const grown = Math.max(r.rss - r.rssBefore, r.heapUsed - r.heapBefore);
  const perEntity = grown / options.memoryEntities;
  return {
    entities: r.entities,
    rssBytes: r.rss,
    heapBytes: r.heapUsed,
    bytesPerEntity: perEntity,
    // the node's own RSS once, then the entities' share of the rest of a GB
    entitiesPerGB: Math.floor((1e9 - r.rssBefore) / perEntity),
    cold: r.cold,
  };
}
