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
// Figures are medians over the seeds.
import type { ElectionAlgorithm } from '../packages/election/src/index.js';
import { DEFAULT_TIMING, ELECTION_ALGORITHMS } from '../packages/election/src/index.js';
import { SimLeaderStoreServer } from '../packages/election/src/sim-leader-store.js';
import { MemoryVoteStore } from '../packages/election/src/vote-store.js';
import { SimElectionCluster } from '../test/support/sim-election.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const SEEDS = Number(flag('seeds') ?? 3);
const SIZES = (flag('sizes') ?? '5,25,100').split(',').map(Number);
const ONLY = flag('algorithms')?.split(',') as ElectionAlgorithm[] | undefined;
const ALGORITHMS = ONLY ?? [...ELECTION_ALGORITHMS];
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

function clusterFor(algorithm: ElectionAlgorithm, size: number, seed: number): SimElectionCluster {
  server = undefined;
  return SimElectionCluster.start({
    seed,
    size,
    algorithm,
    voteStore: () => new MemoryVoteStore(),
    leaderStore: (_index, sim, address) => {
      server ??= new SimLeaderStoreServer({ clock: sim.clock, ttlMs: ETCD_TTL_MS });
      return server.client(address);
    },
  });
}

async function sample(algorithm: ElectionAlgorithm, size: number, seed: number): Promise<Sample> {
  const c = clusterFor(algorithm, size, seed);
  try {
    await c.untilAgreed(undefined, 60_000);
    await c.sim.runFor(1_000);
    const leader = c.agreedLeader();
    if (leader === undefined) throw new Error(`${algorithm} N=${size} seed ${seed}: no stable leader`);
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
    const p = clusterFor(algorithm, size, seed + 1000);
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
for (const algorithm of ALGORITHMS) {
  for (const size of SIZES) {
    const samples: Sample[] = [];
    for (let s = 0; s < SEEDS; s++) {
      const started = performance.now();
      samples.push(await sample(algorithm, size, 1 + s));
      progress(
        `${algorithm} N=${size} seed ${1 + s}: ${JSON.stringify(samples.at(-1))} (${Math.round(performance.now() - started)} ms wall)`,
      );
    }
    const ms = median(samples.map((x) => x.ms));
    const detection = algorithm === 'etcd' ? ETCD_TTL_MS : DEFAULT_TIMING.leaderTimeoutMs;
    const electionMessages = median(samples.map((x) => x.electionMessages));
    const allMessages = median(samples.map((x) => x.allMessages));
    const majority = median(samples.map((x) => x.leadersMajority));
    const minority = median(samples.map((x) => x.leadersMinority));
    rows.push([
      algorithm,
      String(size),
      formatFigure(ms),
      formatFigure(ms / detection, 2),
      formatFigure(electionMessages),
      formatFigure(electionMessages / (size - 2), 2),
      formatFigure(allMessages),
      `${majority}|${minority}`,
    ]);
    figures[`${algorithm}.${size}`] = {
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
printResult({ ...result, figures });
