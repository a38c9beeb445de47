import type { AnyStateMachine, AnyStateNode, StateValue } from 'xstate';
import { type DirectedGraphNode, toDirectedGraph } from 'xstate/graph';

/** One state node of a machine, flattened: `parent` links rebuild the nesting. */
export interface StateNodeView {
  /** The xstate state node id (`membership.up.member`), unique in the machine. */
  readonly id: string;
  /** Its key under its parent (`member`); the machine id for the root. */
  readonly key: string;
  readonly parent: string | null;
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** Whether it is its parent's initial state. */
  readonly initial: boolean;
  readonly depth: number;
}

/** One transition: `event` is the raw event type, `label` a readable one. */
export interface TransitionView {
  readonly source: string;
  /** Target state node id; the source itself for self-transitions and targetless ones. */
  readonly target: string;
  readonly event: string;
  readonly label: string;
  readonly kind: 'event' | 'after' | 'always' | 'done' | 'error';
  /** Guard name when the guard is named; `guard` for inline guards. */
  readonly guard?: string;
  /** True for transitions without a target (actions only: the state stays as it is). */
  readonly internal: boolean;
}

export interface MachineDefinition {
  readonly id: string;
  readonly nodes: readonly StateNodeView[];
  readonly edges: readonly TransitionView[];
}

const cache = new WeakMap<object, MachineDefinition>();

/** States and transitions of a machine, from its definition (`xstate/graph`), cached per machine. */
export function machineDefinition(machine: AnyStateMachine): MachineDefinition {
  const cached = cache.get(machine);
  if (cached) return cached;
  const nodes: StateNodeView[] = [];
  const edges: TransitionView[] = [];
  const walk = (g: DirectedGraphNode, parent: AnyStateNode | undefined, depth: number) => {
    const sn = g.stateNode;
    const initialIds = (parent?.initial?.target ?? []).map((t: AnyStateNode) => t.id);
    nodes.push({
      id: sn.id,
      key: parent ? sn.key : sn.machine.id,
      parent: parent ? parent.id : null,
      type: sn.type,
      initial: initialIds.includes(sn.id),
      depth,
    });
    for (const e of g.edges) {
      edges.push(
        transitionView(sn, e.target.id, e.transition.eventType, e.transition.guard, !e.transition.target),
      );
    }
    for (const t of sn.always ?? []) {
      const targets: readonly AnyStateNode[] = t.target ?? [];
      if (targets.length === 0) edges.push(transitionView(sn, sn.id, '', t.guard, true));
      for (const target of targets) edges.push(transitionView(sn, target.id, '', t.guard, false));
    }
    for (const child of g.children) walk(child, sn, depth + 1);
  };
  walk(toDirectedGraph(machine.root), undefined, 0);
  const definition: MachineDefinition = { id: machine.id, nodes, edges };
  cache.set(machine, definition);
  return definition;
}

function transitionView(
  source: AnyStateNode,
  target: string,
  eventType: string,
  guard: unknown,
  internal: boolean,
): TransitionView {
  const { label, kind } = describeEvent(eventType);
  const guardName = nameOfGuard(guard);
  return {
    source: source.id,
    target,
    event: eventType,
    label,
    kind,
    ...(guardName ? { guard: guardName } : {}),
    internal,
  };
}

/** `xstate.after.joinTimeout.membership.joining` → `after joinTimeout`, and so on. */
export function describeEvent(eventType: string): { label: string; kind: TransitionView['kind'] } {
  if (eventType === '') return { label: 'always', kind: 'always' };
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) {
    const delay = after[1]!;
    return { label: `after ${/^\d+$/.test(delay) ? `${delay} ms` : delay}`, kind: 'after' };
  }
  if (eventType.startsWith('xstate.done.state.')) return { label: 'done', kind: 'done' };
  if (eventType.startsWith('xstate.done.actor.')) return { label: 'invoke done', kind: 'done' };
  if (eventType.startsWith('xstate.error.actor.')) return { label: 'invoke error', kind: 'error' };
  return { label: eventType, kind: 'event' };
}

function nameOfGuard(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string')
    return (guard as { type: string }).type;
  return 'guard';
}

/** Ids of the state nodes active for `value` (the root included). */
export function activeStateIds(machine: AnyStateMachine, value: StateValue): string[] {
  const ids: string[] = [machine.root.id];
  const walk = (node: AnyStateNode, v: StateValue) => {
    if (typeof v === 'string') {
      const child = node.states[v];
      if (child) ids.push(child.id);
      return;
    }
    for (const [key, sub] of Object.entries(v)) {
      const child = node.states[key];
      if (!child) continue;
      ids.push(child.id);
      if (sub !== undefined) walk(child, sub as StateValue);
    }
  };
  walk(machine.root, value);
  return ids;
}
