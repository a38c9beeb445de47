import { SimulatedClock } from 'xstate';
import { ActorSystem, type ActorSystemConfig, type DeadLetter } from '../../packages/core/src/index.js';
import { ManualScheduler } from './manual-scheduler.js';

/**
 * An actor system for core tests: a simulated clock, turns run by hand, no randomness, and its
 * dead letters collected. `extra` overrides any setting (a logger, a counting clock, a mailbox).
 */
export function makeCoreSystem(extra: Partial<ActorSystemConfig> = {}) {
  const clock = new SimulatedClock();
  const scheduler = new ManualScheduler();
  const system = new ActorSystem({
    cluster: 'test',
    host: '127.0.0.1',
    port: 1,
    uid: 'u1',
    clock,
    scheduler,
    random: () => 0,
    ...extra,
  });
  const letters: DeadLetter[] = [];
  system.deadLetters.subscribe((l) => letters.push(l));
  return { system, clock, scheduler, letters };
}
