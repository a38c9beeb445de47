import type { ActorRef, ActorSystem } from '@doyen/core';
import { asMachineSnapshot, systemActorPaths } from '../inspector/machines.js';
import { toPlain } from '../inspector/safe-json.js';
import { CONSOLE_CAPS } from './console-messages.js';
import type { MachineTransition, MachineView } from './node-view.js';

/** State values are small; this keeps one inside the wire's data budget whatever a machine holds. */
const STATE_LIMITS = { maxDepth: 4, maxItems: 16, maxString: 120, maxNodes: 64 } as const;

interface Tracked {
  readonly ref: ActorRef;
  readonly unsubscribe: () => void;
  state: unknown;
  stateText: string;
  readonly transitions: MachineTransition[];
}

/**
 * The protocol machines of one actor system (membership, failure detector, downing, split-brain
 * checker, singleton managers, the allocator, the election), read from the same snapshot stream
 * the local inspector watches: the current state value of each and its last transitions. A
 * snapshot whose state value did not change (a context update) is not a transition.
 *
 * It watches only while someone subscribed to this node's console (`setActive`): a snapshot
 * listener on every protocol machine costs every event of every node (watching always, with the
 * context summarised per snapshot, doubled the CPU of a 50-node rolling start), and only the
 * state value is read, never the context.
 */
export class MachineTracker {
  private readonly tracked = new Map<string, Tracked>();
  private closed = false;
  private active = false;

  constructor(
    private readonly system: ActorSystem,
    /** Called after a machine changed state, or the set of machines changed. */
    private readonly onChange: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Watches (and picks up machines) while true; false drops every snapshot listener. */
  setActive(active: boolean): void {
    if (active === this.active || this.closed) return;
    this.active = active;
    if (active) this.rescan();
    else {
      for (const t of this.tracked.values()) t.unsubscribe();
      this.tracked.clear();
    }
  }

  /** Picks up machines started since (singletons register late) and forgets stopped ones. */
  rescan(): void {
    if (this.closed || !this.active) return;
    const system = this.system;
    const present = new Set<string>();
    let changed = false;
    for (const path of trackedPaths(system)) {
      if (present.size >= CONSOLE_CAPS.machines) break;
      const ref = system.lookup(path);
      if (!ref) continue;
      const snapshot = asMachineSnapshot(system.snapshotOf(ref));
      if (!snapshot) continue;
      present.add(path);
      const existing = this.tracked.get(path);
      if (existing?.ref === ref) continue;
      existing?.unsubscribe();
      const state = toPlain(snapshot.value, STATE_LIMITS);
      const t: Tracked = {
        ref,
        unsubscribe: () => {},
        state,
        stateText: JSON.stringify(state),
        transitions: [],
      };
      (t as { unsubscribe: () => void }).unsubscribe = system.subscribeSnapshots(ref, (s) =>
        this.observe(t, s),
      );
      this.tracked.set(path, t);
      changed = true;
    }
    for (const [path, t] of this.tracked)
      if (!present.has(path)) {
        t.unsubscribe();
        this.tracked.delete(path);
        changed = true;
      }
    if (changed) this.onChange();
  }

  views(): MachineView[] {
    return [...this.tracked].map(([id, t]) => ({ id, state: t.state, transitions: [...t.transitions] }));
  }

  close(): void {
    this.closed = true;
    for (const t of this.tracked.values()) t.unsubscribe();
    this.tracked.clear();
  }

  private observe(t: Tracked, snapshot: unknown): void {
    const s = asMachineSnapshot(snapshot);
    if (!s) return;
    const state = toPlain(s.value, STATE_LIMITS);
    const text = JSON.stringify(state);
    if (text === t.stateText) return;
    t.state = state;
    t.stateText = text;
    // xstate snapshots do not carry the event that made them: the label says which kind of step it was
    const status = s.status ?? 'active';
    t.transitions.push({ at: this.now(), event: status === 'active' ? 'transition' : status, state });
    if (t.transitions.length > CONSOLE_CAPS.transitions) t.transitions.shift();
    this.onChange();
  }
}

/** The system's machines (the protocols first) and the singleton instances (the allocator among them). */
function trackedPaths(system: ActorSystem): string[] {
  const own = systemActorPaths(system).filter((p) => p !== '/system/console');
  const instances = system.actorPaths('/user/').filter((p) => /^\/user\/singleton-[^/]+-instance$/.test(p));
  return [...own, ...instances];
}
