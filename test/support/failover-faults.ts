import { expect } from 'vitest';
import {
  DEFAULT_HOST_LEASE,
  LeasedOldestPlacement,
  type SingletonPlacement,
} from '../../packages/singleton/src/index.js';
import { forEachSeed, InvariantViolationError, SeededRandom } from '../../packages/testkit/src/index.js';
import { SimCluster, type SimNode } from './sim-cluster.js';
import type { Interval, withNotebook } from './sim-singletons.js';
import { fiveWithNotebook } from './singleton-runs.js';

/** The longest stall the host lease's guarantee allows for (DEFAULT_HOST_LEASE). */
export const PAUSE_BOUND_MS = DEFAULT_HOST_LEASE.pauseBoundMs;

/** Seeded runs per fault; DOYEN_FAULT_RUNS overrides (raise it in soaks). */
export const FAULT_RUNS = Number(process.env.DOYEN_FAULT_RUNS ?? 500);

/** How long a cut lasts at most when nobody took over (a fault the host rides out). */
const CUT_MAX_MS = 5000;

/** After the singleton is back: this long more with exactly one instance, or it was not settled. */
const SETTLE_MS = 300;

type Notebook = ReturnType<typeof withNotebook>;

export interface FaultContext {
  readonly c: SimCluster;
  readonly nb: Notebook;
  /** The oldest member, running the singleton when the fault begins. */
  readonly host: string;
  readonly hostUid: string;
  /** The four other members. */
  readonly others: readonly string[];
  /** The fault's own seeded stream (durations, partners, timing). */
  readonly rnd: SeededRandom;
}

/** A fault against the host: injects it, drives the simulation through it, and lifts it. */
export type Fault = (f: FaultContext) => Promise<void>;

export interface FaultRunOptions {
  /** Bound on the singleton being back (exactly one instance) once the fault is lifted. */
  readonly backWithinMs: number;
  /** Per node incarnation: its singleton placement (default: the emergent leased placement). */
  readonly placement?: (node: SimNode) => SingletonPlacement;
  /** Keep every node's JSON log lines (for replay comparisons and log-driven faults). */
  readonly captureLogs?: boolean;
  /** Level of the captured lines (default `info`). */
  readonly logLevel?: string;
}

export interface FaultRunResult {
  /** Simulated ms from the fault's start until it was lifted. */
  readonly faultMs: number;
  /** Simulated ms from the fault's lifting until exactly one instance ran. */
  readonly backAfterMs: number;
  /** Simulated ms from the fault's start until an instance first ran off the host's incarnation (none: undefined). */
  readonly takeoverMs: number | undefined;
  readonly instances: readonly Interval[];
  readonly logs: readonly string[];
}

/** Where an instance runs now: `name#uid` of every live member running one. */
function instancesNow(c: SimCluster): string[] {
  const running: string[] = [];
  for (const [name, node] of c.nodes) {
    if (!node.system.isTerminated && node.system.lookup('/user/singleton-notebook-instance')) {
      running.push(`${name}#${node.system.node.uid}`);
    }
  }
  return running;
}

/** True once an instance runs anywhere but on the host's incarnation. */
function takenOver(f: FaultContext): boolean {
  return instancesNow(f.c).some((id) => id !== `${f.host}#${f.hostUid}`);
}

/**
 * One seeded run: five members (the leased singleton on the oldest), a random phase against the
 * lease's rounds, the fault, then the singleton back within `backWithinMs` and still alone
 * `SETTLE_MS` later. The at-most-one-instance invariant (withNotebook) is checked after every
 * simulation step and throws `InvariantViolationError` at the first overlap.
 */
export async function faultRun(
  seed: number,
  fault: Fault,
  options: FaultRunOptions,
): Promise<FaultRunResult> {
  const c = new SimCluster({
    seed,
    captureLogs: options.captureLogs ?? false,
    logLevel: options.logLevel ?? 'info',
  });
  try {
    const nb = await fiveWithNotebook(c, options.placement ? { placement: options.placement } : {});
    await c.sim.runUntil(() => nb.running() === 1, { timeoutMs: 5000, description: 'the first instance' });
    const [first] = instancesNow(c);
    const [host, hostUid] = first!.split('#') as [string, string];
    expect(host, 'the oldest hosts the singleton').toBe('athens');
    const rnd = new SeededRandom(seed).fork('failover-fault');
    const f: FaultContext = {
      c,
      nb,
      host,
      hostUid,
      others: [...c.nodes.keys()].filter((n) => n !== host),
      rnd,
    };
    // anywhere in a renewal round and a heartbeat interval
    await c.sim.runFor(rnd.int(DEFAULT_HOST_LEASE.leaseMs / 4));
    const start = c.sim.now;
    await fault(f);
    const lifted = c.sim.now;
    const backAfterMs = await c.sim.runUntil(() => nb.running() === 1, {
      timeoutMs: options.backWithinMs,
      description: `exactly one instance within ${options.backWithinMs} ms of the fault's end`,
    });
    await c.sim.runFor(SETTLE_MS);
    expect(nb.running(), 'still exactly one instance once settled').toBe(1);
    const successor = nb.intervals().find((iv) => iv.start >= start && `${iv.node}#${iv.uid}` !== first);
    return {
      faultMs: lifted - start,
      backAfterMs,
      takeoverMs: successor && successor.start - start,
      instances: nb.intervals(),
      logs: [...c.sim.logs],
    };
  } finally {
    c.sim.shutdown();
  }
}

/** Runs `fault` for every seed from `firstSeed`; a failure names its seed (DOYEN_SEED=<n> replays it). */
export async function faultRuns(
  firstSeed: number,
  fault: Fault,
  options: FaultRunOptions & { readonly runs?: number },
): Promise<FaultRunResult[]> {
  const results: FaultRunResult[] = [];
  const seeds = Array.from({ length: options.runs ?? FAULT_RUNS }, (_, i) => firstSeed + i);
  await forEachSeed(seeds, async (seed) => {
    results.push(await faultRun(seed, fault, options));
  });
  return results;
}

/**
 * The positive control: runs seeds from `firstSeed` until the invariant checker catches two
 * instances (returns that seed), or gives up after `maxRuns` (returns undefined).
 */
export async function firstOverlap(
  firstSeed: number,
  fault: Fault,
  options: FaultRunOptions & { readonly maxRuns: number },
): Promise<{ seed: number; error: InvariantViolationError } | undefined> {
  for (let seed = firstSeed; seed < firstSeed + options.maxRuns; seed++) {
    try {
      await faultRun(seed, fault, options);
    } catch (error) {
      if (error instanceof InvariantViolationError) return { seed, error };
      throw error;
    }
  }
  return undefined;
}

/** The leased placement with the pause bound set to 0: the successor's wait for a paused host is off. */
export const noPauseBound = (node: SimNode): SingletonPlacement =>
  new LeasedOldestPlacement(node.system, node.cluster, { pauseBoundMs: 0 });

/** A duration up to `maxMs`: exactly `maxMs` in half the runs (the boundary), else uniform in (0, maxMs]. */
function upTo(rnd: SeededRandom, maxMs: number): number {
  return rnd.chance(0.5) ? maxMs : 1 + rnd.int(maxMs);
}

/** Runs until a member other than the host takes over (and `extraMs` more), or `CUT_MAX_MS` passed. */
async function untilTakenOver(f: FaultContext, extraMs = 0): Promise<void> {
  const deadline = f.c.sim.now + CUT_MAX_MS;
  await f.c.sim.runUntil(() => takenOver(f) || f.c.sim.now >= deadline, {
    timeoutMs: CUT_MAX_MS + 10,
    description: 'a takeover or the end of the cut',
  });
  if (extraMs > 0) await f.c.sim.runFor(extraMs);
}

// ---- the faults -----------------------------------------------------------------------------

/** a. The host stopped (no timers, no turns; its traffic held) for up to `maxMs`, then continued. */
export const pausedHost =
  (maxMs: number): Fault =>
  async (f) => {
    const ms = upTo(f.rnd, maxMs);
    f.c.sim.freeze(f.c.get(f.host).system, ms);
    await f.c.sim.runFor(ms);
  };

/** Whether the host's incarnation still lives (not crashed, nor restarted after a downing). */
function hostAlive(f: FaultContext): boolean {
  return f.c.nodes.get(f.host)?.system.node.uid === f.hostUid;
}

/**
 * A stall during a failover, for `pausedHost` and `starvedHost`: the host cut off from the others
 * (both ways, so nothing but its own timers can fence it) and, at a random moment within the
 * lease it still holds, `stall`ed (up to the bound): its lease runs out while it cannot notice,
 * and its successor must not start before it has. Healed once the others took over.
 */
export const whileCutOff =
  (stall: Fault): Fault =>
  async (f) => {
    f.c.split([f.host], f.others);
    await f.c.sim.runFor(f.rnd.int(DEFAULT_HOST_LEASE.leaseMs + 100));
    if (hostAlive(f)) await stall(f);
    await untilTakenOver(f, 200);
    f.c.sim.heal();
  };

/** b. A one-way partition: every message the host sends to the others dropped (`from-host`), or every one it gets. */
export const oneWayCut =
  (direction: 'from-host' | 'to-host'): Fault =>
  async (f) => {
    if (direction === 'from-host') f.c.cutOneWay([f.host], f.others);
    else f.c.cutOneWay(f.others, [f.host]);
    await untilTakenOver(f, 200);
    f.c.sim.heal();
  };

/**
 * c. CPU starvation of the host for `spanMs`: back-to-back busy spells of up to `maxLateMs` each
 * (a few ms of free loop between them), during which its timers wait and fire late at the spell's
 * end while its messages are still handled.
 */
export const starvedHost =
  (maxLateMs: number, spanMs = 1500): Fault =>
  async (f) => {
    const end = f.c.sim.now + spanMs;
    while (f.c.sim.now < end && hostAlive(f)) {
      const spell = upTo(f.rnd, maxLateMs);
      f.c.sim.holdTimers(f.c.get(f.host).system, spell);
      await f.c.sim.runFor(spell + f.rnd.int(20));
    }
  };

/**
 * d. The host cut off from the others; the partition heals just as the new instance starts (its
 * manager's `singleton.started`), or as the successor's lease is acquired (`host-lease.acquired`,
 * from the captured logs: run with `captureLogs`).
 */
export const healAtTakeover =
  (at: 'started' | 'acquired'): Fault =>
  async (f) => {
    f.c.split([f.host], f.others);
    const { host, port } = f.c.get(f.host).address;
    const hostNode = `"node":"${host}:${port}"`;
    let seen = f.c.sim.logs.length;
    const acquired = () => {
      const fresh = f.c.sim.logs.slice(seen);
      seen += fresh.length;
      return fresh.some((line) => line.includes('"event":"host-lease.acquired"') && !line.includes(hostNode));
    };
    const deadline = f.c.sim.now + CUT_MAX_MS;
    await f.c.sim.runUntil(() => (at === 'started' ? takenOver(f) : acquired()) || f.c.sim.now >= deadline, {
      timeoutMs: CUT_MAX_MS + 10,
      description: `the successor's ${at === 'started' ? 'singleton.started' : 'host-lease.acquired'}`,
    });
    f.c.sim.heal();
  };

/** e. A 2 | 3 partition with the host in the 2 (its partner drawn); lifted once the 3 run the singleton. */
export const minoritySideHost: Fault = async (f) => {
  const partner = f.rnd.pick(f.others);
  f.c.split(
    [f.host, partner],
    f.others.filter((n) => n !== partner),
  );
  await untilTakenOver(f, 200);
  f.c.sim.heal();
};
