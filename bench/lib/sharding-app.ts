// The sharding bench's `--app` module (`doyen node --app bench/lib/sharding-app.ts`). On every node:
// the message types and the sharded counter (role `shard`: nodes started with `--roles shard` host
// it, the others only route). On hosting nodes also the plain sink actor of the remote tell
// baseline. On the node started with SHARDING_BENCH_LOAD_PORT (no role: it hosts nothing) the load
// generator, driven by the bench over HTTP on that port.
import { type NodeGCPerformanceDetail, PerformanceObserver } from 'node:perf_hooks';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { EtcdRememberStore } from '../../packages/sharding/src/index.js';
import { startLoadGenerator } from './sharding-load.js';
import {
  ACTIVATION_LOG_ENV,
  BENCH_MESSAGE_TYPES,
  COLD_COUNTER_TYPE,
  COLD_WARMUP_PASSIVATE_MS,
  COLD_WARMUP_TYPE,
  COUNTER_TYPE,
  counterLogic,
  FANOUT_SINKS,
  fanoutSinkName,
  LOAD_PORT_ENV,
  REMEMBER_CLUSTER_ENV,
  REMEMBER_ETCD_ENV,
  REMEMBER_RATE_ENV,
  REMEMBERED_COUNTER_TYPE,
  SHARD_ROLE,
  SINK_NAME,
  sinkLogic,
} from './sharding-protocol.js';

const rememberEndpoints = (process.env[REMEMBER_ETCD_ENV] ?? '').split(',').filter(Boolean);
const rememberRate = process.env[REMEMBER_RATE_ENV];

/**
 * Partitions are owned by the `shard` role only, so the load generator's node is proxy-only; with
 * an etcd (`REMEMBER_ETCD_ENV`), the remembered type's store, restarting at the given rate.
 */
export const config = {
  partitions: { role: SHARD_ROLE },
  ...(rememberEndpoints.length > 0
    ? {
        sharding: {
          remember: {
            store: new EtcdRememberStore({
              endpoints: rememberEndpoints,
              cluster: process.env[REMEMBER_CLUSTER_ENV] ?? 'sharding-bench',
            }),
            ...(rememberRate ? { restartsPerSecond: Number(rememberRate) } : {}),
          },
        },
      }
    : {}),
};

let load: ReturnType<typeof startLoadGenerator> | undefined;
let gcObserved = false;

/** SHARDING_BENCH_GC=1: every GC pause of this process as a `bench.gc` line (wall-clock `at`, ms). */
function observeGc(node: DoyenNode): void {
  if (gcObserved || process.env.SHARDING_BENCH_GC !== '1') return;
  gcObserved = true;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      node.system.logger.info(
        {
          event: 'bench.gc',
          at: performance.timeOrigin + e.startTime,
          ms: e.duration,
          kind: (e as { detail?: NodeGCPerformanceDetail }).detail?.kind,
        },
        'gc',
      );
  }).observe({ entryTypes: ['gc'] });
}

/** Wakes this often to see whether the event loop was held (SHARDING_BENCH_STALLS=1). */
const STALL_PROBE_MS = 2;
/** A wake-up this much later than asked is a stall, logged. */
const STALL_MS = 3;
let stallsProbed = false;

/**
 * SHARDING_BENCH_STALLS=1: every stall of this process's event loop as a `bench.stall` line
 * (wall-clock `at` it began, `ms`, and `cpuMs`, the CPU this process used meanwhile): a stall
 * with its CPU is this process's own work (a long task, GC); one without was waiting for a CPU.
 */
function probeStalls(node: DoyenNode): void {
  if (stallsProbed || process.env.SHARDING_BENCH_STALLS !== '1') return;
  stallsProbed = true;
  let last = performance.now();
  let cpu = process.cpuUsage();
  const probe = () => {
    const at = performance.now();
    const used = process.cpuUsage(cpu);
    const late = at - last - STALL_PROBE_MS;
    if (late > STALL_MS)
      node.system.logger.info(
        {
          event: 'bench.stall',
          at: performance.timeOrigin + last,
          ms: at - last,
          cpuMs: (used.user + used.system) / 1000,
        },
        'stall',
      );
    last = at;
    cpu = process.cpuUsage();
    setTimeout(probe, STALL_PROBE_MS).unref();
  };
  setTimeout(probe, STALL_PROBE_MS).unref();
}

export function setup(node: DoyenNode): void {
  node.system.messageTypes.register([...BENCH_MESSAGE_TYPES]);
  observeGc(node);
  probeStalls(node);
  const sharding = node.sharding;
  if (!sharding) throw new Error('the sharding bench needs partitions on (partitions.count > 0)');
  const counters = sharding.register(COUNTER_TYPE, counterLogic, {
    role: SHARD_ROLE,
    handOverSnapshot: true,
    // the overlap check reads every activation and stop from the log; --hot-path checks none
    activationLog: process.env[ACTIVATION_LOG_ENV] === 'debug' ? 'debug' : 'info',
  });
  const coldCounters = sharding.register(COLD_COUNTER_TYPE, counterLogic, {
    role: SHARD_ROLE,
    handOverSnapshot: true,
  });
  const warmupCounters = sharding.register(COLD_WARMUP_TYPE, counterLogic, {
    role: SHARD_ROLE,
    handOverSnapshot: true,
    passivateAfterMs: COLD_WARMUP_PASSIVATE_MS,
  });
  const remembered =
    rememberEndpoints.length > 0
      ? sharding.register(REMEMBERED_COUNTER_TYPE, counterLogic, {
          role: SHARD_ROLE,
          remember: true,
          activationLog: 'info',
        })
      : undefined;
  if (node.cluster.self.roles.includes(SHARD_ROLE)) {
    node.system.spawn(sinkLogic, { name: SINK_NAME });
    for (let k = 0; k < FANOUT_SINKS; k++) node.system.spawn(sinkLogic, { name: fanoutSinkName(k) });
  }
  const port = process.env[LOAD_PORT_ENV];
  if (port === undefined) return;
  // the generator belongs to the process; a new incarnation hands it its node
  load ??= startLoadGenerator(Number(port));
  load.attach(node, { counters, cold: coldCounters, warmup: warmupCounters, remembered });
}
