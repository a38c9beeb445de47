// One soak run: five `doyen node` processes (soak-nodes.ts) formed into a cluster, warmed up, then the
// seeded fault plan (soak-schedule.ts) played until the time is up: each fault, the wait until the
// cluster is whole again (every slot running, every node seeing five up), then its quiet period. The
// record (soak-report.ts) is filled from the nodes' log lines as they come.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './free-ports.js';
import { SoakSlots } from './soak-nodes.js';
import { defaultSoakAppSettings, type SoakAppSettings } from './soak-protocol.js';
import {
  emptySoakRecord,
  recordLine,
  type SoakFigures,
  type SoakRecord,
  soakFigures,
} from './soak-report.js';
import { defaultSoakPlanOptions, describeFault, type SoakFault, soakPlan } from './soak-schedule.js';
import { waitFor } from './timeout.js';

export interface SoakOptions {
  readonly minutes: number;
  readonly seed: number;
  /**
   * The run's first part whose heap samples are not the baseline (ms; faults run through it, so
   * the code their paths compile is in the baseline). Default: a tenth of the run, 20 s to 5 min.
   */
  readonly warmupMs: number | undefined;
  /** And a process's own first part (a restarted node compiles its code again). */
  readonly processWarmupMs: number;
  readonly slots: number;
  readonly witness: number;
  readonly quietMs: readonly [number, number];
  /**
   * The pause bound the nodes run with (`--pause-bound-ms`; default the host lease's): the plan's
   * pauses keep within it, and overlaps during a longer stall are reported apart.
   */
  readonly pauseBoundMs: number;
  /** Pauses beyond the bound as well (half the pauses): outside the stated assumptions. */
  readonly longPauses: boolean;
  readonly app: SoakAppSettings;
  /** How long after its fault window a downing still counts as that fault's (detection, decision). */
  readonly downingGraceMs: number;
  /** How long to wait for the cluster to be whole again after a fault. */
  readonly wholeTimeoutMs: number;
  /** Progress lines (stderr in the bench). */
  readonly log: (line: string) => void;
}

export const defaultSoakOptions: SoakOptions = {
  minutes: 2,
  seed: 1,
  warmupMs: undefined,
  processWarmupMs: 20_000,
  slots: defaultSoakPlanOptions.slots,
  witness: defaultSoakPlanOptions.witness,
  quietMs: defaultSoakPlanOptions.quietMs,
  pauseBoundMs: defaultSoakPlanOptions.pauseBoundMs,
  longPauses: defaultSoakPlanOptions.longPauses,
  app: defaultSoakAppSettings,
  downingGraceMs: 10_000,
  wholeTimeoutMs: 60_000,
  log: () => {},
};

export interface SoakResult {
  readonly options: Omit<SoakOptions, 'log' | 'warmupMs'> & { readonly warmupMs: number };
  readonly record: SoakRecord;
  readonly figures: SoakFigures;
  /** Wall-clock ms: the cluster formed (faults start), and the run's end. */
  readonly startedAt: number;
  readonly until: number;
  /** Each slot's `host:port`. */
  readonly addresses: readonly string[];
  readonly runMs: number;
  readonly faults: number;
  readonly processes: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Plays one fault; for a pause, returns how long the process was stopped (SIGSTOP to SIGCONT, ms). */
async function applyFault(slots: SoakSlots, fault: SoakFault): Promise<number | undefined> {
  switch (fault.kind) {
    case 'kill':
      await slots.kill(fault.slot);
      await sleep(fault.downMs);
      await slots.start(fault.slot);
      return;
    case 'restart':
      await slots.stop(fault.slot);
      await slots.start(fault.slot);
      return;
    case 'pause': {
      const stoppedAt = performance.now();
      slots.pause(fault.slot);
      await sleep(fault.ms);
      slots.resume(fault.slot);
      // the timer may overshoot on a loaded machine: the stall judged is the one measured
      return Math.round(performance.now() - stoppedAt);
    }
    case 'partition':
      await slots.partition(fault.side);
      await sleep(fault.ms);
      await slots.heal();
      return;
  }
}

/** A tenth of the run, at least 20 s, at most 5 min. */
export function defaultWarmupMs(minutes: number): number {
  return Math.min(300_000, Math.max(20_000, minutes * 6_000));
}

export async function runSoak(given: Partial<SoakOptions> = {}): Promise<SoakResult> {
  const merged: SoakOptions = { ...defaultSoakOptions, ...given };
  const options = { ...merged, warmupMs: merged.warmupMs ?? defaultWarmupMs(merged.minutes) };
  const { log } = options;
  const record = emptySoakRecord();
  const judge = {
    askTimeoutMs: options.app.askTimeoutMs,
    tallyEveryMs: options.app.tallyEveryMs,
    slackMs: 1_000,
  };
  const ports = await freePorts(options.slots * 2);
  const keyDir = mkdtempSync(join(tmpdir(), 'doyen-soak-'));
  const slots = new SoakSlots({
    cluster: 'soak',
    ports: ports.slice(0, options.slots),
    httpPorts: ports.slice(options.slots),
    keyDir,
    secret: randomBytes(16).toString('hex'),
    token: randomBytes(16).toString('hex'),
    app: options.app,
    pauseBoundMs: options.pauseBoundMs,
    onLine: (line) => recordLine(record, line, judge),
    onFate: ({ proc, kind, t }) => record.fates.push({ node: proc, kind, t: Math.round(t) }),
  });
  const whole = () =>
    waitFor(() => slots.whole(), options.wholeTimeoutMs, 'the cluster whole again', 500).then(
      () => true,
      () => false,
    );
  let faults = 0;
  let startedAt = 0;
  let until = 0;
  try {
    await slots.start(0);
    await Promise.all(Array.from({ length: options.slots - 1 }, (_, i) => slots.start(i + 1)));
    if (!(await whole())) throw new Error(`the ${options.slots} nodes did not form one cluster`);
    startedAt = Date.now();
    log(
      `cluster of ${options.slots} up; faults start now, the heap baseline after ${options.warmupMs / 1000} s`,
    );
    const deadline = startedAt + options.minutes * 60_000;
    const plan = soakPlan(options.seed, {
      slots: options.slots,
      witness: options.witness,
      quietMs: options.quietMs,
      pauseBoundMs: options.pauseBoundMs,
      longPauses: options.longPauses,
    });
    for (const { fault, quietMs } of plan) {
      // a fault and its recovery take up to ~20 s: none starts that would run past the end
      if (Date.now() + 20_000 > deadline) break;
      faults++;
      const start = Date.now();
      const clock = new Date(start).toISOString().slice(11, 23);
      log(
        `fault ${faults} at +${((start - startedAt) / 1000).toFixed(0)} s (${clock}): ${describeFault(fault)}`,
      );
      const stalledMs = await applyFault(slots, fault);
      const isWhole = await whole();
      record.faults.push({
        fault,
        start,
        end: Date.now(),
        whole: isWhole,
        ...(stalledMs === undefined ? {} : { stalledMs }),
      });
      if (!isWhole) log(`  not whole ${options.wholeTimeoutMs / 1000} s after the fault`);
      await sleep(Math.min(quietMs, Math.max(0, deadline - Date.now())));
    }
    // the rest of the time is quiet; then one more memory sample of every process
    await sleep(Math.max(0, deadline - Date.now()) + options.app.memoryEveryMs + 1_000);
    until = Date.now();
  } finally {
    until ||= Date.now();
    await slots.killAll();
    rmSync(keyDir, { recursive: true, force: true });
  }
  const runMs = until - startedAt;
  const addresses = ports.slice(0, options.slots).map((p) => `127.0.0.1:${p}`);
  const slotOf = (address: string) => {
    const i = addresses.indexOf(address);
    return i < 0 ? undefined : i;
  };
  const figures = soakFigures(record, {
    until,
    runMs,
    warmedUpAt: startedAt + options.warmupMs,
    processWarmupMs: options.processWarmupMs,
    witnessSlot: options.witness,
    slotOf,
    downingGraceMs: options.downingGraceMs,
    pauseBoundMs: options.pauseBoundMs,
  });
  const { log: _log, ...shown } = options;
  return {
    options: shown,
    record,
    figures,
    startedAt,
    until,
    addresses,
    runMs,
    faults,
    processes: record.fates.length,
  };
}
