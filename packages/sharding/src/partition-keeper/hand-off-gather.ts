import type { KeeperEvent } from './keeper-decisions.js';
import type { HandOff } from './keeper-messages.js';

/**
 * Receiver-side coalescing of hand-offs (issue 29). An old owner hands a newest node its 13–14
 * partitions in one step, and they arrive back to back (one wire frame, one turn); taken one
 * keeper step each, every hand-off cost its own activation, an `active` notice and a withdraw to
 * every member, and the steps spread 30–200 ms apart on a busy node. The machine GATHERS
 * hand-offs that arrive back to back and decides them as one `keeper.hand-offs` event when the
 * turn is over (a 0 ms timer) or any other event arrives (decided after them: the arrival order
 * of everything the keeper decides is unchanged). Nothing new travels on the wire, so old and new
 * builds keep exchanging the same messages.
 *
 * Pure: the machine (keeper-machine.ts) and the keeper simulation (test/support/keeper-sim.ts)
 * both run their arrivals through `arrive`.
 */

/** The machine's own event: the turn the gathered hand-offs arrived in is over. */
export const GATHER_DUE = 'keeper.hand-offs-due';
export interface GatherDue {
  readonly type: typeof GATHER_DUE;
}

/** Hand-offs gathered at most (a bound on what waits; one more is decided at once with them). */
export const MAX_GATHERED_HAND_OFFS = 64;

export interface Arrival {
  /** What stays gathered after this arrival. */
  readonly gathered: readonly HandOff[];
  /** What to decide now, in this order. */
  readonly decide: readonly KeeperEvent[];
  /** This arrival began a gathering: the machine schedules GATHER_DUE. */
  readonly started: boolean;
}

/** The gathered hand-offs as events to decide: none, the one as it came, or one batch. */
export function released(gathered: readonly HandOff[]): KeeperEvent[] {
  if (gathered.length === 0) return [];
  if (gathered.length === 1) return [gathered[0]!];
  return [{ type: 'keeper.hand-offs', handOffs: gathered }];
}

/**
 * One event reaching the keeper. `gather` off (the control): every event is decided as it comes.
 * A whole `sharding.hand-off` is gathered; every other event (parts of a chunked hand-off too)
 * first releases what is gathered, then is decided itself.
 */
export function arrive(
  gathered: readonly HandOff[],
  event: KeeperEvent | GatherDue,
  gather: boolean,
): Arrival {
  if (gather && event.type === 'sharding.hand-off') {
    const next = [...gathered, event];
    if (next.length < MAX_GATHERED_HAND_OFFS)
      return { gathered: next, decide: [], started: gathered.length === 0 };
    return { gathered: [], decide: released(next), started: false };
  }
  const before = released(gathered);
  return { gathered: [], decide: event.type === GATHER_DUE ? before : [...before, event], started: false };
}
