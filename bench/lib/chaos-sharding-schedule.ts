// The sharding chaos runner's fault plan: pure (a seed in, faults out), so a run's faults are told by
// its seed alone. Faults hit the five hosting nodes (slots 0-4), never the sender; a partition or a
// one-way cut leaves the sender on the majority side, untouched. Pauses and cuts last until every
// side has decided them (each running node logged a `member.downed`: the paused or cut-off node is
// downed and restarts in place when it wakes or the cut heals), then a seeded hold: past the
// decision a longer fault only waits (the majority already runs the partitions, and what is sent
// meanwhile is excused anyway).
import { SeededRandom } from '../../packages/testkit/src/seeded-random.js';
import { IN_FLIGHT_SLACK_MS } from './chaos-sharding-checker.js';

/**
 * How long a pause or a cut lasts: a fixed time, or until every running node (a paused one aside)
 * has logged `member.downed` (every side decided the fault), then `afterDownedMs` more: from
 * healing as the downed node restarts in place to healing once it waits to rejoin. Bounded by
 * DECISION_CAP_MS.
 */
export type ChaosFaultLength = { readonly ms: number } | { readonly afterDownedMs: number };

/** A pause or cut the cluster has not decided by then is healed anyway (the played line says so). */
export const DECISION_CAP_MS = 8_000;

export type ChaosFault =
  /** kill -9, a new process `downMs` later (it joins again: a planned move back). */
  | { readonly kind: 'kill'; readonly slot: number; readonly downMs: number }
  /** SIGSTOP, then SIGCONT. */
  | { readonly kind: 'pause'; readonly slot: number; readonly length: ChaosFaultLength }
  /** `side` cut from the other hosting nodes (and the sender) both ways, then healed. */
  | { readonly kind: 'partition'; readonly side: readonly number[]; readonly length: ChaosFaultLength }
  /** Packets from `from` to `to` dropped (only that direction), then healed. */
  | {
      readonly kind: 'one-way';
      readonly from: readonly number[];
      readonly to: readonly number[];
      readonly length: ChaosFaultLength;
    }
  /** SIGTERM (graceful leave: partitions handed off), then a new process joins. Planned. */
  | { readonly kind: 'leave'; readonly slot: number };

export interface PlannedChaosFault {
  readonly fault: ChaosFault;
  /**
   * Load on the settled cluster after the fault, ms: counted from the moment it is whole again with
   * every partition active on exactly one node (the hand-backs done). At least IN_FLIGHT_SLACK_MS
   * plus MIN_CHECKED_QUIET_MS, so every gap has messages whose loss the checker does not excuse.
   */
  readonly quietMs: number;
}

export const HOSTING_SLOTS = 5;

/** Of each quiet period, at least this much lies before the next fault's in-flight slack (checked load). */
export const MIN_CHECKED_QUIET_MS = 500;

/** Joins and graceful leaves are planned moves: the checker excuses no loss in them. */
export const isPlanned = (fault: ChaosFault) => fault.kind === 'leave';

export function describeChaosFault(fault: ChaosFault): string {
  const n = (slots: readonly number[]) => slots.map((s) => `n${s + 1}`).join('+');
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const lasting = (l: ChaosFaultLength) =>
    'ms' in l ? `for ${s(l.ms)}` : `until every side decided (a member downed), + ${s(l.afterDownedMs)}`;
  switch (fault.kind) {
    case 'kill':
      return `kill -9 n${fault.slot + 1} (down ${s(fault.downMs)}, then a new process)`;
    case 'pause':
      return `SIGSTOP n${fault.slot + 1} ${lasting(fault.length)}, then SIGCONT`;
    case 'partition':
      return `partition ${n(fault.side)} | rest ${lasting(fault.length)}`;
    case 'one-way':
      return `one-way: ${n(fault.from)} -> ${n(fault.to)} dropped ${lasting(fault.length)}`;
    case 'leave':
      return `graceful leave of n${fault.slot + 1} (SIGTERM), then it joins again`;
  }
}

/**
 * `count` faults of seed `seed`. The draws are the same in number and order as before the lengths
 * became "until decided" (session 38), so a seed still picks the same kinds, slots and sides.
 */
export function chaosPlan(seed: number, count: number): PlannedChaosFault[] {
  const random = new SeededRandom(seed);
  const between = (lo: number, hi: number) => lo + random.int(hi - lo);
  const slots = Array.from({ length: HOSTING_SLOTS }, (_, i) => i);
  const plan: PlannedChaosFault[] = [];
  for (let i = 0; i < count; i++) {
    const roll = random.int(100);
    const slot = random.int(HOSTING_SLOTS);
    let fault: ChaosFault;
    // the hold after the decision: 0-1 s spans healing while the downed node restarts in place
    // (~0.2 s after its downing) and healing once it waits to rejoin
    const hold = (): ChaosFaultLength => ({ afterDownedMs: random.int(1_000) });
    if (roll < 25) fault = { kind: 'kill', slot, downMs: between(1_000, 4_000) };
    else if (roll < 45) fault = { kind: 'pause', slot, length: hold() };
    else if (roll < 62) {
      const size = 1 + random.int(2);
      const side = new Set<number>([slot]);
      while (side.size < size) side.add(random.int(HOSTING_SLOTS));
      fault = { kind: 'partition', side: [...side].sort(), length: hold() };
    } else if (roll < 80) {
      const rest = slots.filter((s) => s !== slot);
      fault =
        random.int(2) === 0
          ? { kind: 'one-way', from: [slot], to: rest, length: hold() }
          : { kind: 'one-way', from: rest, to: [slot], length: hold() };
    } else fault = { kind: 'leave', slot };
    const quietFloor = IN_FLIGHT_SLACK_MS + MIN_CHECKED_QUIET_MS;
    plan.push({ fault, quietMs: between(quietFloor, quietFloor + 500) });
  }
  return plan;
}
