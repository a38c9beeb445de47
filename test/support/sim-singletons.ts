import { assign, setup } from 'xstate';
import type { ActorRef } from '../../packages/core/src/index.js';
import { ClusterSingletons, type SingletonPlacement } from '../../packages/singleton/src/index.js';
import type { SimCluster, SimNode } from './sim-cluster.js';

export type Note = { type: 'test.note'; from: string; seq: number };
export type Get = { type: 'test.get'; replyTo: ActorRef<Notes> };
export type Notes = { type: 'test.notes'; notes: string[]; node: string };

/** A singleton that records every note it gets, and says where it runs. */
export function notebook(node: string) {
  return setup({
    types: { context: {} as { notes: string[] }, events: {} as Note | Get },
  }).createMachine({
    context: { notes: [] },
    on: {
      'test.note': {
        actions: assign({ notes: ({ context, event }) => [...context.notes, `${event.from}:${event.seq}`] }),
      },
      'test.get': {
        actions: ({ context, event }) =>
          event.replyTo.send({ type: 'test.notes', notes: context.notes, node }),
      },
    },
  });
}

export interface Interval {
  node: string;
  uid: string;
  start: number;
  end: number;
}

/**
 * Registers the notebook singleton on every node incarnation of `c` and records, after every
 * simulation step, which live nodes run an instance: the at-most-one-instance invariant.
 */
export function withNotebook(
  c: SimCluster,
  options: { handOverSnapshot?: boolean; placement?: (node: SimNode) => SingletonPlacement | undefined } = {},
) {
  const singletons = new Map<SimNode, ClusterSingletons>();
  c.onNodeStart = (node) => {
    node.system.messageTypes.register(['test.note', 'test.get', 'test.notes']);
    const s = new ClusterSingletons(node.system, node.cluster, options.placement?.(node));
    s.register('notebook', notebook(node.name), { handOverSnapshot: options.handOverSnapshot ?? true });
    singletons.set(node, s);
  };
  for (const node of c.nodes.values()) c.onNodeStart(node);
  const intervals: Interval[] = [];
  const open = new Map<string, Interval>();
  let peak = 0;
  c.sim.addInvariant('at most one notebook instance', () => {
    const running: string[] = [];
    for (const [name, node] of c.nodes) {
      if (!node.system.isTerminated && node.system.lookup('/user/singleton-notebook-instance')) {
        running.push(`${name}#${node.system.node.uid}`);
      }
    }
    const now = c.sim.now;
    for (const id of running)
      if (!open.has(id))
        open.set(id, { node: id.split('#')[0]!, uid: id.split('#')[1]!, start: now, end: Infinity });
    for (const [id, iv] of open) {
      if (!running.includes(id)) {
        iv.end = now;
        intervals.push(iv);
        open.delete(id);
      }
    }
    peak = Math.max(peak, running.length);
    return running.length <= 1 || `instances at ${running.join(', ')}`;
  });
  return {
    proxy: (name: string) => singletons.get(c.get(name))!.proxy('notebook')! as ActorRef<Note | Get>,
    singletons: (name: string) => singletons.get(c.get(name))!,
    intervals: () => [...intervals, ...open.values()],
    peak: () => peak,
    /** Live instances right now (as of the last simulation step). */
    running: () => open.size,
  };
}
