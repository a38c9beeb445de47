// The sharding chaos runner's fault plan: pure (a seed in, faults out), so a run's faults are told by
// its seed alone. Faults hit the five hosting nodes (slots 0-4), never the sender; a partition or a
// one-way cut leaves the sender on the majority side, untouched. Pauses last past the failure
// detector and the downing (the paused node is downed and restarts in place when it wakes).
import { SeededRandom } from '../../packages/testkit/src/seeded-random.js';

export type ChaosFault =
  /** kill -9, a new process `downMs` later (it joins again: a planned move back). */
  | { readonly kind: 'kill'; readonly slot: number; readonly downMs: number }
  /** SIGSTOP for `ms`, then SIGCONT. */
  | { readonly kind: 'pause'; readonly slot: number; readonly ms: number }
  /** `side` cut from the other hosting nodes (and the sender) both ways for `ms`, then healed. */
  | { readonly kind: 'partition'; readonly side: readonly number[]; readonly ms: number }
  /** Packets from `from` to `to` dropped (only that direction) for `ms`, then healed. */
  | {
      readonly kind: 'one-way';
      readonly from: readonly number[];
      readonly to: readonly number[];
      readonly ms: number;
    }
  /** SIGTERM (graceful leave: partitions handed off), then a new process joins. Planned. */
  | { readonly kind: 'leave'; readonly slot: number };

export interface PlannedChaosFault {
  readonly fault: ChaosFault;
  /** Quiet time after the cluster is whole again, ms. */
  readonly quietMs: number;
}

export const HOSTING_SLOTS = 5;

/** Joins and graceful leaves are planned moves: the checker excuses no loss in them. */
export const isPlanned = (fault: ChaosFault) => fault.kind === 'leave';

export function describeChaosFault(fault: ChaosFault): string {
  const n = (slots: readonly number[]) => slots.map((s) => `n${s + 1}`).join('+');
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  switch (fault.kind) {
    case 'kill':
      return `kill -9 n${fault.slot + 1} (down ${s(fault.downMs)}, then a new process)`;
    case 'pause':
      return `SIGSTOP n${fault.slot + 1} for ${s(fault.ms)}, then SIGCONT`;
    case 'partition':
      return `partition ${n(fault.side)} | rest for ${s(fault.ms)}`;
    case 'one-way':
      return `one-way: ${n(fault.from)} -> ${n(fault.to)} dropped for ${s(fault.ms)}`;
    case 'leave':
      return `graceful leave of n${fault.slot + 1} (SIGTERM), then it joins again`;
  }
}

/** `count` faults of seed `seed`. */
export function chaosPlan(seed: number, count: number): PlannedChaosFault[] {
  const random = new SeededRandom(seed);
  const between = (lo: number, hi: number) => lo + random.int(hi - lo);
  const slots = Array.from({ length: HOSTING_SLOTS }, (_, i) => i);
  const plan: PlannedChaosFault[] = [];
  for (let i = 0; i < count; i++) {
    const roll = random.int(100);
    const slot = random.int(HOSTING_SLOTS);
    let fault: ChaosFault;
    if (roll < 25) fault = { kind: 'kill', slot, downMs: between(1_000, 4_000) };
    else if (roll < 45) fault = { kind: 'pause', slot, ms: between(3_000, 6_000) };
    else if (roll < 62) {
      const size = 1 + random.int(2);
      const side = new Set<number>([slot]);
      while (side.size < size) side.add(random.int(HOSTING_SLOTS));
      fault = { kind: 'partition', side: [...side].sort(), ms: between(3_000, 6_000) };
    } else if (roll < 80) {
      const rest = slots.filter((s) => s !== slot);
      fault =
        random.int(2) === 0
          ? { kind: 'one-way', from: [slot], to: rest, ms: between(3_000, 6_000) }
          : { kind: 'one-way', from: rest, to: [slot], ms: between(3_000, 6_000) };
    } else fault = { kind: 'leave', slot };
    plan.push({ fault, quietMs: between(2_000, 5_000) });
  }
  return plan;
}
