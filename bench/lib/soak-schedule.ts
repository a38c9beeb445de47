// The soak's fault plan: an endless, seeded sequence of faults with a quiet period after each one. Pure
// (a seed in, faults out), so a run's faults are told by its seed alone and a test can read the plan.
// Pauses keep within the singleton host lease's stated pause bound (the guarantee assumes no process
// stalls longer); `longPauses` adds pauses beyond it, whose overlaps the report keeps apart.
import { DEFAULT_HOST_LEASE } from '../../packages/singleton/src/leased-placement.js';
import { SeededRandom } from '../../packages/testkit/src/seeded-random.js';

/** kill -9 of a node's process; a new process at the same ports `downMs` later. */
export interface KillFault {
  readonly kind: 'kill';
  readonly slot: number;
  readonly downMs: number;
}
/** SIGTERM (the node leaves gracefully), then a new process at the same ports. */
export interface RestartFault {
  readonly kind: 'restart';
  readonly slot: number;
}
/** SIGSTOP for `ms`, then SIGCONT: a GC pause, a stalled VM. */
export interface PauseFault {
  readonly kind: 'pause';
  readonly slot: number;
  readonly ms: number;
}
/** Every link between `side` and the others dropped both ways for `ms` (the nodes' /fault/blackhole), then healed. */
export interface PartitionFault {
  readonly kind: 'partition';
  readonly side: readonly number[];
  readonly ms: number;
}
export type SoakFault = KillFault | RestartFault | PauseFault | PartitionFault;

/** A fault as it was played: from its first action to the moment the cluster was whole again (or gave up waiting). */
export interface FaultWindow {
  readonly fault: SoakFault;
  readonly start: number;
  readonly end: number;
  readonly whole: boolean;
  /** A pause: how long the process was stopped, SIGSTOP to SIGCONT, as the bench measured it. */
  readonly stalledMs?: number;
}

/** A fault and the quiet period that follows it (once the cluster is whole again). */
export interface PlannedFault {
  readonly fault: SoakFault;
  readonly quietMs: number;
}

export interface SoakPlanOptions {
  readonly slots: number;
  /**
   * The slot whose process runs from start to end (never killed, restarted or paused; it may be
   * cut off and downed, which restarts it in place): its heap series spans the whole run.
   */
  readonly witness: number;
  /** Quiet period after each fault, ms: [min, max). */
  readonly quietMs: readonly [number, number];
  /** The nodes' pause bound (hostLease.pauseBoundMs): pauses are drawn within it. */
  readonly pauseBoundMs: number;
  /** Half the pauses (the same ones for a seed) beyond the bound instead: outside the stated assumptions. */
  readonly longPauses: boolean;
}

/**
 * What the bench's own timer may add to a pause (SIGSTOP, a timer, SIGCONT on a loaded machine):
 * pauses meant to be within the bound are drawn this far under it, those meant beyond it this far
 * over. The report judges the stall the bench measured, not the one it drew.
 */
export const PAUSE_TIMER_ALLOWANCE_MS = 50;

/** Pause lengths within `pauseBoundMs`, ms: [min, max). */
export function pausesWithin(pauseBoundMs: number): readonly [number, number] {
  const lo = Math.min(100, Math.floor(pauseBoundMs / 2));
  return [lo, Math.max(lo + 1, pauseBoundMs - PAUSE_TIMER_ALLOWANCE_MS + 1)];
}

/** Pause lengths beyond `pauseBoundMs`, ms: [min, max) (up to 3 s, as before the bound was stated). */
export function pausesBeyond(pauseBoundMs: number): readonly [number, number] {
  const lo = pauseBoundMs + PAUSE_TIMER_ALLOWANCE_MS;
  return [lo, Math.max(lo + 1, 3_000)];
}

export const defaultSoakPlanOptions: SoakPlanOptions = {
  slots: 5,
  witness: 4,
  quietMs: [4_000, 12_000],
  pauseBoundMs: DEFAULT_HOST_LEASE.pauseBoundMs,
  longPauses: false,
};

const between = (random: SeededRandom, [lo, hi]: readonly [number, number]) => lo + random.int(hi - lo);

/** The slots the fault acts on directly (the process it kills, stops or pauses; the side it cuts off). */
export function touchedSlots(fault: SoakFault): readonly number[] {
  return fault.kind === 'partition' ? fault.side : [fault.slot];
}

/** One line for the run's log: `kill n2 (down 2.3 s)`. */
export function describeFault(fault: SoakFault): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  switch (fault.kind) {
    case 'kill':
      return `kill -9 n${fault.slot} (down ${s(fault.downMs)})`;
    case 'restart':
      return `restart n${fault.slot} (SIGTERM)`;
    case 'pause':
      return `pause n${fault.slot} for ${fault.ms} ms`;
    case 'partition':
      return `partition ${fault.side.map((n) => `n${n}`).join('+')} | rest for ${s(fault.ms)}`;
  }
}

/** The faults of seed `seed`, one after another, for as long as the caller takes them. */
export function* soakPlan(
  seed: number,
  options: SoakPlanOptions = defaultSoakPlanOptions,
): Generator<PlannedFault> {
  const random = new SeededRandom(seed);
  const all = Array.from({ length: options.slots }, (_, i) => i);
  const mortal = all.filter((i) => i !== options.witness);
  const pick = (from: readonly number[]) => from[random.int(from.length)]!;
  for (;;) {
    const roll = random.int(100);
    let fault: SoakFault;
    if (roll < 30) fault = { kind: 'kill', slot: pick(mortal), downMs: between(random, [1_000, 5_000]) };
    else if (roll < 45) fault = { kind: 'restart', slot: pick(mortal) };
    else if (roll < 70) {
      // every draw is made with or without long pauses: the flag changes those pauses' lengths only
      const slot = pick(mortal);
      const within = between(random, pausesWithin(options.pauseBoundMs));
      const beyond = between(random, pausesBeyond(options.pauseBoundMs));
      const long = random.int(2) === 0;
      fault = { kind: 'pause', slot, ms: options.longPauses && long ? beyond : within };
    } else {
      // a minority side (one or two of five), so the majority keeps the cluster and its singleton
      const size = 1 + random.int(Math.max(1, Math.floor((options.slots - 1) / 2)));
      const side = new Set<number>();
      while (side.size < size) side.add(pick(all));
      fault = {
        kind: 'partition',
        side: [...side].sort((a, b) => a - b),
        ms: between(random, [1_000, 8_000]),
      };
    }
    yield { fault, quietMs: between(random, options.quietMs) };
  }
}
