// `pnpm bench election [--seeds 3] [--sizes 5,25,100]`: the seeds' leader elections side by side, in
// deterministic simulation (SimElectionCluster: N nodes on one virtual clock, rank = index, default timing:
// heartbeats every 100 ms, leader timeout 500 ms, reply timeout 100 ms, quorum election timeouts 0.5-1 s,
// etcd TTL 2 s). Prints a table, then one JSON line.
//   1. crash the agreed leader; until every live node agrees on one new leader: simulated ms and all messages
//      (heartbeats included); election messages (heartbeats left out) until 3 s after that, so a circulation
//      still under way when the nodes agree counts in full.
//      Baselines (the optimum): the new leader must at least be detected (leaderTimeoutMs; for etcd the TTL) and
//      announced to the other N-2 live nodes, so ms / detection and messages / (N-2) are the ratios. etcd sends
//      nothing over the wire: its columns count compare-and-swaps (and keep-alives) on the simulated store.
//   2. a 60/40 partition with the leader (highest rank) on the 40 side, run 10 s: how many leaders (quorum
//      and etcd: acting leaders) there are, on each side.
//   3. real nodes: singleton failover by coordinator mode (lib/election-failover.ts): five startNode nodes in
//      this process, the allocator's host closed (a crash); wall ms until another node runs it, `--failovers`
//      runs per mode (default 3), emergent (keep-majority: unreachable, stable-after, downing, margin) as the
//      baseline for quorum (elected leader, no margin). `--failovers 0` skips it.
// Figures of 1-2 are medians over the seeds (simulated, so the same on any machine); of 3, medians of runs.
import type { ElectionAlgorithm } from '../packages/election/src/index.js';
import { DEFAULT_TIMING, ELECTION_ALGORITHMS } from '../packages/election/src/index.js';
import { MemoryVoteStore } from '../packages/election/src/vote-store.js';
import { SimLeaderStoreServer } from '../packages/testkit/src/simulated-stores.js';
import { SimElectionCluster } from '../test/support/sim-election.js';
import { singletonFailoverMs } from './lib/election-failover.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const SEEDS = Number(flag('seeds') ?? 3);
const SIZES = (flag('sizes') ?? '5,25,100').split(',').map(Number);
const FAILOVERS = Number(flag('failovers') ?? 3);
const ONLY = flag('algorithms')?.split(',');

/** One row group: an algorithm with its options (bully once more without next-in-line failover, as the seed compares). */
interface Variant {
  readonly label: string;
  readonly algorithm: ElectionAlgorithm;
  readonly options?: { readonly failoverListSize?: number };
}
const VARIANTS: Variant[] = ELECTION_ALGORITHMS.flatMap((algorithm): Variant[] =>
  algorithm === 'bully'
    ? [
        { label: 'bully', algorithm },
        { label: 'bully-no-failover-list', algorithm, options: { failoverListSize: 0 } },
      ]
    : [{ label: algorithm, algorithm }],
).filter((v) => ONLY === undefined || ONLY.includes(v.label) || ONLY.includes(v.algorithm));
const ETCD_TTL_MS = 2_000;
const QUIET_MS = 3_000;
const progress = (line: string) => process.stderr.write(`${line}\n`);

interface Sample {
  readonly ms: number;
  readonly electionMessages: number;
  readonly allMessages: number;
  readonly leadersMajority: number;
  readonly leadersMinority: number;
}

/** The simulated etcd of the last cluster made: its compare-and-swaps stand in for etcd's election messages. */
let server: SimLeaderStoreServer | undefined;

function clusterFor(variant: Variant, size: number, seed: number): SimElectionCluster {
  server = undefined;
  return SimElectionCluster.start({
    seed,
    size,
    algorithm: variant.algorithm,
    ...(variant.options ? { election: variant.options } : {}),
    voteStore: () => new MemoryVoteStore(),
    leaderStore: (_index, sim, address) => {
      server ??= new SimLeaderStoreServer({ clock: sim.clock, ttlMs: ETCD_TTL_MS });
      return server.client(address);
    },
  });
}

async function sample(variant: Variant, size: number, seed: number): Promise<Sample> {
  const { label, algorithm } = variant;
  const c = clusterFor(variant, size, seed);
  try {
    await c.untilAgreed(undefined, 60_000);
    await c.sim.runFor(1_000);
    const leader = c.agreedLeader();
    if (leader === undefined) throw new Error(`${label} N=${size} seed ${seed}: no stable leader`);
    const leaderIndex = c.peers.findIndex((p) => p.address === leader);
    const cas = () => server?.stats.campaigns ?? 0;
    const election0 = c.electionMessagesSent() + cas();
    const storeCalls = () => (server ? server.stats.campaigns + server.stats.keepAlives : 0);
    const all0 = c.messagesSent() + storeCalls();
    c.crash(leaderIndex);
    const ms = await c.untilAgreed(undefined, 60_000);
    const allMessages = c.messagesSent() + storeCalls() - all0;
    // the announcement may still be travelling (the ring's second circulation): count it all
    await c.sim.runFor(QUIET_MS);
    const electionMessages = c.electionMessagesSent() + cas() - election0;
    c.shutdown();

    // 60/40 with the highest ranks (the would-be leaders) on the 40 side
    const p = clusterFor(variant, size, seed + 1000);
    try {
      await p.untilAgreed(undefined, 60_000);
      const cut = Math.ceil(size * 0.6);
      const majority = Array.from({ length: cut }, (_, i) => i);
      const minority = Array.from({ length: size - cut }, (_, i) => cut + i);
      p.partition(majority, minority);
      await p.sim.runFor(10_000);
      const acting = algorithm === 'quorum' || algorithm === 'etcd';
      return {
        ms,
        electionMessages,
        allMessages,
        leadersMajority: p.leaders(majority, acting).length,
        leadersMinority: p.leaders(minority, acting).length,
      };
    } finally {
      p.shutdown();
    }
  } finally {
    c.shutdown();
  }
}

const rows: string[][] = [
  [
    'algorithm',
    'N',
    'crash→leader ms',
    '÷ detection',
    'election msgs',
    '÷ (N-2)',
    'all msgs to agreement',
    'leaders 60|40',
  ],
];
const result: Record<string, unknown> = {
  bench: 'election',
  seeds: SEEDS,
  timing: DEFAULT_TIMING,
  etcdTtlMs: ETCD_TTL_MS,
};
const figures: Record<string, unknown> = {};
for (const variant of VARIANTS) {
  const { label, algorithm } = variant;
  for (const size of SIZES) {
    const samples: Sample[] = [];
    for (let s = 0; s < SEEDS; s++) {
      const started = performance.now();
      samples.push(await sample(variant, size, 1 + s));
      progress(
        `${label} N=${size} seed ${1 + s}: ${JSON.stringify(samples.at(-1))} (${Math.round(performance.now() - started)} ms wall)`,
      );
    }
    const ms = median(samples.map((x) => x.ms));
    const detection = algorithm === 'etcd' ? ETCD_TTL_MS : DEFAULT_TIMING.leaderTimeoutMs;
    const electionMessages = median(samples.map((x) => x.electionMessages));
    const allMessages = median(samples.map((x) => x.allMessages));
    const majority = median(samples.map((x) => x.leadersMajority));
    const minority = median(samples.map((x) => x.leadersMinority));
    rows.push([
      label,
      String(size),
      formatFigure(ms),
      formatFigure(ms / detection, 2),
      formatFigure(electionMessages),
      formatFigure(electionMessages / (size - 2), 2),
      formatFigure(allMessages),
      `${majority}|${minority}`,
    ]);
    figures[`${label}.${size}`] = {
      crashToLeaderMs: ms,
      detectionMs: detection,
      vsDetection: ms / detection,
      electionMessages,
      optimumMessages: size - 2,
      vsOptimumMessages: electionMessages / (size - 2),
      allMessages,
      leadersUnder6040: { majority, minority },
    };
  }
}
process.stdout.write(`${formatTable(rows)}\n`);

let failover: Record<string, unknown> | undefined;
if (FAILOVERS > 0) {
  const samples: Record<'emergent' | 'quorum', number[]> = { emergent: [], quorum: [] };
  for (let i = 0; i < FAILOVERS; i++) {
    for (const mode of ['emergent', 'quorum'] as const) {
      samples[mode].push(await singletonFailoverMs(mode, i));
      progress(
        `singleton failover, coordinator ${mode}, run ${i + 1}: ${Math.round(samples[mode].at(-1)!)} ms`,
      );
    }
  }
  const emergent = median(samples.emergent);
  const quorum = median(samples.quorum);
  failover = { emergentMs: emergent, quorumMs: quorum, quorumVsEmergent: quorum / emergent, runs: samples };
  process.stdout.write(
    `\nsingleton failover, 5 real nodes, host crashed (median of ${FAILOVERS}): emergent ${formatFigure(emergent)} ms, quorum ${formatFigure(quorum)} ms (${formatFigure(quorum / emergent, 2)}x)\n`,
  );
}
printResult({ ...result, figures, ...(failover ? { singletonFailover: failover } : {}) });
