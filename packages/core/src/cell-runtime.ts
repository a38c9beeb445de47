import type { InspectionEvent } from 'xstate';
import type { Clock } from './clock.js';
import type { Mailbox } from './mailbox.js';
import type { Message } from './message.js';

/** What a runtime needs from its cell. */
export interface RuntimeHost {
  readonly path: string;
  readonly clock: Clock;
  readonly mailbox: Mailbox;
  /** False once the cell backs off, stops or fails: a batch ends there. */
  readonly running: boolean;
  /** The system's inspection observer, when one is attached. */
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  /** Hands a new snapshot to the cell's snapshot listeners. */
  emit(snapshot: unknown): void;
  /** The logic threw (or its xstate actor errored): supervision decides. */
  failed(error: Error): void;
  /** The logic finished by itself (a done machine, a settled promise). */
  completed(): void;
}

/**
 * How a cell runs its logic: through an xstate actor (machines, callbacks, promises), or, for
 * transition logic, by calling the reducer itself. One instance per cell, started again on restart.
 */
export interface CellRuntime {
  start(snapshot: unknown, input: unknown): void;
  /** Processes at most `max` messages from the cell's mailbox; returns how many it took. */
  run(max: number): number;
  /**
   * Processes one message handed over by its sender (a burst from outside any actor), as `run`
   * would have from the mailbox; false, leaving it to be queued, when this runtime cannot now.
   */
  runOne(message: Message): boolean;
  getSnapshot(): unknown;
  getPersistedSnapshot(): unknown;
  /** Whether the cell has snapshot listeners: runtimes produce per-message snapshots only then. */
  setListening(listening: boolean): void;
  /** Forgets the failed incarnation (supervision restarts with `start`, or stops). */
  discard(): void;
  stop(): void;
}
