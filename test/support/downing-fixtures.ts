import { getShortestPaths } from 'xstate/graph';
import type { DowningEvent } from '../../packages/cluster/src/downing/downing-messages.js';
import {
  createDowningMachine,
  type DowningEffect,
  resolveClusterConfig,
  type SbrMember,
} from '../../packages/cluster/src/index.js';
import type { ActorSystem } from '../../packages/core/src/index.js';
import { delayedEvent } from './machine-paths.js';

/** Members 10.0.0.i:2552#ui of age i, and the downing events the machine tests feed. */
export const key = (i: number) => `10.0.0.${i}:2552#u${i}`;
export const member = (i: number, status: SbrMember['status'] = 'up'): SbrMember => ({
  key: key(i),
  address: `10.0.0.${i}:2552`,
  age: i,
  status,
  roles: [],
});
export const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
export const view = (
  self: number,
  members: SbrMember[],
  observations: Record<string, string[]> = {},
  version = 1,
): DowningEvent => ({ type: 'sbr.view', selfKey: key(self), version, members, observations });
export const reach = (ids: number[]): DowningEvent => ({
  type: 'sbr.own-reachability',
  reachable: ids.map(key),
});
/** `observer` reports each of `subjects` unreachable. */
export const reports = (observer: number, subjects: number[]) =>
  Object.fromEntries(subjects.map((s) => [key(s), [key(observer)]]));

/** Every delay of every timed state fired by hand (graph traversals have no clock). */
export const DOWNING_DELAY_EVENTS: DowningEvent[] = [
  'unstable',
  'unstable.waiting',
  'unstable.healed',
  'decided',
].flatMap((state) =>
  ['stableAfter', 'unstableLimit', 'calmFor', 'retryAfterDecision'].map((delay) =>
    delayedEvent<DowningEvent>(delay, `downing.${state}`),
  ),
);

/** The keep-majority downing machine alone, its effects handed to `run`. */
export const keepMajorityDowning = (run: (effect: DowningEffect) => void) =>
  createDowningMachine({
    system: {} as ActorSystem,
    config: resolveClusterConfig({
      seeds: [{ host: '10.0.0.1', port: 2552 }],
      downing: 'keep-majority',
      sbr: { downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
    }),
  }).provide({ actions: { run: (_: unknown, effect: DowningEffect) => run(effect) } });

/**
 * The shortest paths of that machine over `events`, states told apart by their value, partition,
 * own reachability and view version (and the absent members' keys, when `withAbsent`).
 */
export function downingPaths(events: DowningEvent[], withAbsent = false) {
  return getShortestPaths(
    keepMajorityDowning(() => {}),
    {
      events,
      serializeState: (s) =>
        JSON.stringify({
          v: s.value,
          r: s.context.partition && [
            [...s.context.partition.unreachable].sort(),
            [...s.context.partition.indirect].sort(),
          ],
          o: [...s.context.ownReachable].sort(),
          w: s.context.view?.version,
          ...(withAbsent ? { a: s.context.absent.map((m) => m.key) } : {}),
        }),
    },
  );
}
