import type { ActorSystem } from '@doyen/core';
import type { AnyStateMachine, StateValue } from 'xstate';
import { activeStateIds, type MachineDefinition, machineDefinition } from './definition.js';
import { summarize } from './safe-json.js';

/** The framework machines, in the order the page shows them; others follow by path. */
export const WELL_KNOWN_MACHINES = [
  '/system/membership',
  '/system/heartbeat',
  '/system/downing',
  '/system/split-brain-checker',
  '/system/election',
] as const;

/** What the page needs of one machine actor's current snapshot. */
export interface MachineState {
  readonly path: string;
  readonly value: StateValue;
  /** Ids of the active state nodes (the root included). */
  readonly active: readonly string[];
  /** The snapshot status: `active`, `done`, `error` or `stopped`. */
  readonly status: string;
  /** JSON of the context, cut to 2 KB. */
  readonly context: string;
}

/** One row of `GET /inspector/machines`. */
export interface MachineView extends MachineState {
  /** The machine id (`membership`). */
  readonly id: string;
  readonly definition: MachineDefinition;
}

interface MachineSnapshotLike {
  readonly value: StateValue;
  readonly status?: string;
  readonly context?: unknown;
  readonly machine: AnyStateMachine;
}

/** The snapshot as a machine snapshot, or undefined for other logic (callbacks, promises, …). */
export function asMachineSnapshot(snapshot: unknown): MachineSnapshotLike | undefined {
  if (typeof snapshot !== 'object' || snapshot === null) return undefined;
  const s = snapshot as Partial<MachineSnapshotLike>;
  if (!('value' in s) || s.value === undefined) return undefined;
  const machine = s.machine as { root?: unknown } | undefined;
  if (typeof machine !== 'object' || machine === null || typeof machine.root !== 'object') return undefined;
  return s as MachineSnapshotLike;
}

/** Paths of the local actors under `/system/`, the protocol machines first. */
export function systemActorPaths(system: ActorSystem): string[] {
  return system.actorPaths('/system/').sort(byPageOrder);
}

function byPageOrder(a: string, b: string): number {
  const rank = (p: string) => {
    const i = (WELL_KNOWN_MACHINES as readonly string[]).indexOf(p);
    return i < 0 ? WELL_KNOWN_MACHINES.length : i;
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** Current state of the machine at `path`, or undefined when it is not a running machine. */
export function machineStateOf(path: string, snapshot: unknown): MachineState | undefined {
  const s = asMachineSnapshot(snapshot);
  if (!s) return undefined;
  return {
    path,
    value: s.value,
    active: activeStateIds(s.machine, s.value),
    status: s.status ?? 'active',
    context: summarize(s.context),
  };
}

/** Every machine actor under `/system/` with its definition and current state. */
export function listMachines(system: ActorSystem): MachineView[] {
  const views: MachineView[] = [];
  for (const path of systemActorPaths(system)) {
    const ref = system.lookup(path);
    if (!ref) continue;
    const snapshot = system.snapshotOf(ref);
    const state = machineStateOf(path, snapshot);
    const machine = asMachineSnapshot(snapshot)?.machine;
    if (!state || !machine) continue;
    views.push({
      path,
      id: machine.id,
      definition: machineDefinition(machine),
      value: state.value,
      active: state.active,
      status: state.status,
      context: state.context,
    });
  }
  return views;
}
