import fc from 'fast-check';
import type { Fault } from './host-lease-sim.js';

/**
 * The host lease simulator's faults as fast-check arbitraries, shared by the singleton's and the
 * owner lease's properties: crashes, pauses (`pauseMs`), partitions, one-way cuts, joins and
 * stalls aimed at a lease's end (`stallMs`), at instants within a run of `durationMs`. Faults hit
 * the first hosts (nodes 0 and 1) more often than the others.
 */
export function faultArbitrary(options: {
  readonly durationMs: number;
  readonly pauseMs: fc.Arbitrary<number>;
  readonly stallMs: fc.Arbitrary<number>;
  readonly kinds: readonly Fault['kind'][];
}): fc.Arbitrary<Fault> {
  const { pauseMs, stallMs } = options;
  const at = fc.integer({ min: 300, max: options.durationMs - 2000 });
  const node = fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 0, max: 6 }));
  const all: Record<Fault['kind'], fc.Arbitrary<Fault>> = {
    crash: fc.record({ kind: fc.constant('crash' as const), at, node }),
    pause: fc.record({ kind: fc.constant('pause' as const), at, node, forMs: pauseMs }),
    partition: fc.record({
      kind: fc.constant('partition' as const),
      at,
      forMs: fc.integer({ min: 100, max: 8000 }),
      side: fc.integer({ min: 1, max: 126 }),
    }),
    cut: fc.record({
      kind: fc.constant('cut' as const),
      at,
      forMs: fc.integer({ min: 100, max: 8000 }),
      from: node,
      to: fc.integer({ min: 0, max: 6 }),
    }),
    join: fc.record({
      kind: fc.constant('join' as const),
      at,
      count: fc.integer({ min: 1, max: 2 }),
      upAfterMs: fc.integer({ min: 50, max: 1500 }),
    }),
    stall: fc.record({
      kind: fc.constant('stall' as const),
      at,
      node,
      forMs: stallMs,
      aimMs: fc.integer({ min: 0, max: 10 }),
      cutMs: fc.integer({ min: 500, max: 4000 }),
    }),
  };
  return fc.oneof(...options.kinds.map((k) => all[k]));
}
