import type { ActorRef, ActorSystem, Terminated } from '../../packages/core/src/index.js';

/** Watches `ref` from a function ref of `system`; the returned list fills with its Terminated notices. */
export function terminationsOf(system: ActorSystem, ref: ActorRef): Terminated[] {
  const terminated: Terminated[] = [];
  system.watch(
    ref,
    system.functionRef('watcher', (m) => terminated.push(m as Terminated)),
  );
  return terminated;
}
