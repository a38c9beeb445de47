import { join } from 'node:path';
import { describe, it } from 'vitest';
import { describeViolations } from '../../bench/lib/chaos-sharding-checker.js';
import { CHAOS_STABLE_AFTER_ENV } from '../../bench/lib/chaos-sharding-protocol.js';
import { CHAOS_HOSTS, type ChaosRunResult, runChaos } from '../../bench/lib/chaos-sharding-run.js';
import type { PlannedChaosFault } from '../../bench/lib/chaos-sharding-schedule.js';
import { canUseNetns, netnsSkipMessage, type Topology } from '../support/netns.js';
import { useTopology } from '../support/netns-hooks.js';

/**
 * The sharding chaos witness in CI (`pnpm chaos sharding` is the long form): five hosting
 * `doyen node` processes and a sender node, each a host in a network namespace, a seeded run of
 * faults under a steady load of sequence-numbered asks, and the checker on the nodes' logs and the
 * sender's records (bench/lib/chaos-sharding-checker.ts: overlaps, losses outside unplanned
 * faults, duplicates, per-sender order, entities unreachable after healing).
 *
 * The positive control runs the same witness with the keepers' fence skipped
 * (DOYEN_SHARDING_UNSAFE_SKIP_FENCE=1), an owner lease longer than detection + downing, and a
 * cut-off owner slow to down itself (its split-brain stable-after past the cut: otherwise its own
 * resolver may stop it first, and the control would depend on a race), under a symmetric
 * partition of that owner: the successors activate its partitions while it still runs its
 * entities, and the checker must report the overlap. With the fence the successors would wait for
 * the cut-off owner's lease to lapse.
 */

const ok = canUseNetns();
if (!ok) console.warn(netnsSkipMessage());

/** Seeds the CI plays (each a run of SAFE_FAULTS faults). */
const SAFE_SEEDS: readonly number[] = [29];
const SAFE_FAULTS = 2;
const ENTITIES = 200;
/**
 * Two messages to one entity per tick: 100 messages a second, each entity every 4 s (twice session
 * 37's rate: the quiet periods are shorter, and as many messages are checked for loss per run).
 */
const SEND_EVERY_MS = 20;

/**
 * n3 cut off from everyone (sender included) for 15 s: downed by the majority (detection and
 * downing take 3 to 7 s on a loaded machine), its partitions move while it still runs them.
 */
const CONTROL_PLAN: readonly PlannedChaosFault[] = [
  { fault: { kind: 'partition', side: [2], length: { ms: 15_000 } }, quietMs: 2_000 },
];
/**
 * Longer than detection + downing: the cut-off owner keeps its lease, and runs its entities, past
 * the moment the successors may take over; only the fence makes them wait for it to lapse.
 */
const CONTROL_LEASE_MS = 10_000;
/** The cut-off owner's split-brain stable-after: it does not down itself before the cut heals. */
const CONTROL_STABLE_AFTER_MS = 60_000;

const log = (line: string) => console.info(line);
/** DOYEN_CHAOS_LOG_DIR=dir keeps each run's log lines there (the evidence of a failure). */
const logFile = (name: string) => {
  const dir = process.env.DOYEN_CHAOS_LOG_DIR;
  return dir ? { logFile: join(dir, `sharding-chaos-${name}.jsonl`) } : {};
};

function summary(r: ChaosRunResult): string {
  const f = r.verdict.figures;
  return (
    `seed ${r.seed}: ${r.played.join('; ')}; ${f.sent} sent, ${f.received} received, ` +
    `${f.activations} activations, probe ${f.probeAnswered}/${f.probed}` +
    `${r.error ? `; ${r.error}` : ''}\n${describeViolations(r.verdict.violations)}`
  );
}

describe.skipIf(!ok)(
  'sharding chaos witness (five CLI nodes and a sender, each a host in a network namespace)',
  () => {
    // one topology, the runs one after another: six nodes each are all this machine's two cores take
    let topo: Topology;
    useTopology(CHAOS_HOSTS, (t) => (topo = t), { tag: 'shc' });

    it('seeded runs: no overlap, loss, duplicate or reorder, every entity reachable after healing', async ({
      expect,
    }) => {
      for (const seed of SAFE_SEEDS) {
        const r = await runChaos({
          topo,
          seed,
          faults: SAFE_FAULTS,
          entities: ENTITIES,
          unsafeSkipFence: false,
          sendEveryMs: SEND_EVERY_MS,
          log,
          ...logFile(`seed-${seed}`),
        });
        console.info(summary(r));
        expect.soft(r.error, `seed ${seed}`).toBeUndefined();
        expect.soft(r.verdict.violations, `seed ${seed} failed:\n${summary(r)}`).toEqual([]);
        // every pause and cut lasted until every side had decided it (each node logged a downing)
        expect.soft(r.played.join('\n'), `seed ${seed}`).not.toContain('NOT decided');
        // not vacuous: the load ran and reached the entities
        expect.soft(r.verdict.figures.received).toBeGreaterThan(ENTITIES);
        // and the quiet periods were checked: load sent outside every fault window, none excused
        expect.soft(r.verdict.figures.lossChecked).toBeGreaterThan(0);
        // and the checker read every line the nodes wrote (test/testkit/node-process-lines-lost.test.ts
        // shows a skipped number is counted)
        expect.soft(r.linesLost, `seed ${seed}: log lines lost`).toEqual({});
      }
    }, 360_000);

    it('positive control: with the fence skipped, the checker reports the overlap', async ({ expect }) => {
      // the planted overlap needs the majority to re-activate n3's entities inside n3's lease, so
      // n3 must run entities when the cut begins: the runner starts the load only once every
      // partition is active (with this 10 s lease that takes seconds; before it did, the cut often
      // met n3 with one or two entities and no overlap). A second seed is still tried before the
      // control is failed
      let overlaps: number | undefined;
      let last = '';
      for (const seed of [1, 2]) {
        const r = await runChaos({
          topo,
          seed,
          faults: CONTROL_PLAN.length,
          plan: CONTROL_PLAN,
          entities: ENTITIES,
          unsafeSkipFence: true,
          leaseMs: CONTROL_LEASE_MS,
          // n3 slow to down itself: it still runs when the majority has moved its partitions
          envOf: (slot): Record<string, string> =>
            slot === 2 ? { [CHAOS_STABLE_AFTER_ENV]: String(CONTROL_STABLE_AFTER_MS) } : {},
          log,
          ...logFile(`control-${seed}`),
        });
        last = summary(r);
        console.info(`control ${last}`);
        overlaps = r.verdict.violations.filter((v) => v.rule === 'overlap').length;
        if (overlaps > 0) break;
      }
      expect(overlaps, last).toBeGreaterThan(0);
    }, 360_000);
  },
);
