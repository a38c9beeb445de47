import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Orders the last group of vitest.config.ts: the `alone` files (each waits for the others, see
 * alone-lock.ts) on one worker, the `beside` simulations (niced, see beside-nice.ts) on the other.
 * Vitest's pool hands out files first in, first out, so after each `alone` file come simulations
 * worth about as long: when the `alone` file ends, the next one is usually at the head of the queue
 * while a simulation still runs. A wrong estimate costs time (an `alone` file waiting for the lock,
 * or two simulations at once), never correctness.
 */

/** Rough seconds each file takes on the 2-core CI runner (others: vitest's timing of their last run). */
const ESTIMATED_S: Readonly<Record<string, number>> = {
  'test/bench/soak.test.ts': 64,
  'test/netns/sharding-chaos.test.ts': 61,
  'test/netns/singleton-safety.test.ts': 54,
  'test/netns/partition.test.ts': 24,
  'test/netns/bootstrap.test.ts': 18,
  'test/security/flood-fairness.test.ts': 8.5,
  'test/netns/console-one-way.test.ts': 6.3,
  'test/security/wire-system-flood.test.ts': 3.2,
  'test/singleton/failover-faults.test.ts': 87,
  'test/sharding/keeper-safety.test.ts': 21,
  'test/singleton/host-lease-safety.test.ts': 12.5,
  'test/singleton/host-lease-owner-safety.test.ts': 10.7,
  'test/singleton/seeded-keep-oldest.test.ts': 9.2,
  'test/singleton/seeded-keep-majority.test.ts': 8.7,
};
const UNKNOWN_ALONE_S = 20;
const UNKNOWN_BESIDE_S = 4;

export default class AloneBesideSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const alone = sorted.filter((s) => s.project.name === 'alone');
    const beside = sorted.filter((s) => s.project.name === 'beside');
    if (alone.length === 0 || beside.length === 0) return sorted;
    const rest = sorted.filter((s) => s.project.name !== 'alone' && s.project.name !== 'beside');
    const seconds = (s: TestSpecification): number => {
      const path = relative(this.ctx.config.root, s.moduleId).replaceAll('\\', '/');
      // the table first: a cached duration may come from a shortened run (DOYEN_FAULT_RUNS=100)
      const estimated = ESTIMATED_S[path];
      if (estimated !== undefined) return estimated;
      const cached = this.ctx.cache.getFileTestResults(`${s.project.name}:${path}`)?.duration;
      if (cached) return cached / 1000;
      return s.project.name === 'alone' ? UNKNOWN_ALONE_S : UNKNOWN_BESIDE_S;
    };
    const longestFirst = (a: TestSpecification, b: TestSpecification) => seconds(b) - seconds(a);
    alone.sort(longestFirst);
    beside.sort(longestFirst);
    const interleaved: TestSpecification[] = [];
    let aloneS = 0;
    let besideS = 0;
    let next = 0;
    for (const a of alone) {
      interleaved.push(a);
      aloneS += seconds(a);
      while (next < beside.length && besideS < aloneS) {
        besideS += seconds(beside[next]!);
        interleaved.push(beside[next++]!);
      }
    }
    interleaved.push(...beside.slice(next));
    // only the order within a group counts (the groups run by their groupOrder)
    return [...rest, ...interleaved];
  }
}
