import type { Clock, TurnScheduler } from '@doyen/core';
import type { ManualScheduler } from './manual-scheduler.js';
import type { VirtualClock } from './virtual-clock.js';

/** Marks a timer id whose callback came due while timers were held and waits in `heldTimers`. */
const HELD = -1;

/**
 * One node's view of the simulation's shared clock and turn scheduler, able to hold that node's
 * timers and dispatcher turns while the rest of the cluster runs on: what a stopped process
 * (SIGSTOP) or a starved event loop looks like from inside. While nothing is held it passes
 * every call straight through (same timer ids, same order), so seeded runs replay unchanged.
 */
export class NodeGate implements Clock, TurnScheduler {
  private timersHeld = false;
  private turnsHeld = false;
  /** Callbacks that came due while held, in the order they came due. */
  private readonly heldTimers: { readonly id: number; readonly fn: () => void }[] = [];
  private readonly heldTurns: (() => void)[] = [];
  /** Timers no longer under their original id: HELD, or the id of the clock timer that now carries them. */
  private readonly moved = new Map<number, number>();

  constructor(
    private readonly clock: VirtualClock,
    private readonly scheduler: ManualScheduler,
  ) {}

  now(): number {
    return this.clock.now();
  }

  setTimeout(fn: (...args: any[]) => void, timeout: number): number {
    const id: number = this.clock.setTimeout(() => this.fire(id, fn), timeout);
    return id;
  }

  clearTimeout(id: any): void {
    const moved = this.moved.get(id);
    if (moved === undefined) {
      this.clock.clearTimeout(id);
      return;
    }
    this.moved.delete(id);
    if (moved === HELD) {
      const i = this.heldTimers.findIndex((t) => t.id === id);
      if (i >= 0) this.heldTimers.splice(i, 1);
    } else this.clock.clearTimeout(moved);
  }

  schedule(run: () => void): void {
    if (this.turnsHeld) this.heldTurns.push(run);
    else this.scheduler.schedule(run);
  }

  get holdsTimers(): boolean {
    return this.timersHeld;
  }

  get holdsTurns(): boolean {
    return this.turnsHeld;
  }

  /** From now on, timers that come due wait (and with `turns`, dispatcher turns too) until `release`. */
  hold(what: { readonly timers: boolean; readonly turns: boolean }): void {
    this.timersHeld ||= what.timers;
    this.turnsHeld ||= what.turns;
  }

  /**
   * Lets everything held go: held turns are queued first, in order; held timers then fire, in the
   * order they came due, as timers due now (after what is already due now, as a late event loop).
   */
  release(): void {
    this.timersHeld = false;
    this.turnsHeld = false;
    for (const run of this.heldTurns.splice(0)) this.scheduler.schedule(run);
    for (const { id, fn } of this.heldTimers.splice(0)) {
      this.moved.set(
        id,
        this.clock.setTimeout(() => {
          this.moved.delete(id);
          this.fire(id, fn);
        }, 0),
      );
    }
  }

  private fire(id: number, fn: () => void): void {
    if (this.timersHeld) {
      this.heldTimers.push({ id, fn });
      this.moved.set(id, HELD);
      return;
    }
    fn();
  }
}
