// `pnpm bench security [--runs N]`: what issue 25's defences buy under attack, each figure beside the
// same measurement in the same run without the attack or without the defence, as a ratio.
//   1. join under the handshake-slot attack: a seed whose seed list names the joiner, 8 source IPs ×
//      8 silent TCP sockets (reopened as soon as they are cut), then a join from 127.0.0.20; the time
//      to up against an idle join in the same run (target ≤ 2×), and once with no reserved slots
//   2. event-loop stall under 40 authenticated connections flooding 1 MiB frames of valid messages at
//      the coordinator of 3 in-process members (the flooders on a worker thread): monitorEventLoopDelay's
//      max and p99, against the same flood with the defences off (one unbounded decode turn, 1 MiB
//      system frames, no connection caps)
// Figures are the median of --runs runs (default 3) except the undefended join, run once (it waits
// up to UNDEFENDED_JOIN_LIMIT_MS). Each section is one entry of SECTIONS: more figures (handshake
// cost) are added as sections of their own. On a busy 2-core box expect wide run-to-run spread.
import {
  FLOOD_DEFENCES_OFF,
  type FloodFigures,
  floodCoordinator,
  joinUnderAttack,
} from '../test/support/attack-scenarios.js';
import { runsArg } from './lib/runs-arg.js';
import { median, printResult } from './lib/stats.js';
import { formatFigure, formatTable } from './lib/table.js';

const RUNS = runsArg(3);
const FLOODERS = 40;
const FLOOD_MS = 3000;
const JOIN_LIMIT_MS = 15_000;
const UNDEFENDED_JOIN_LIMIT_MS = 10_000;

type Figures = Record<string, number | string>;
/** A section measures its figures (running its own runs) and returns them with its table rows. */
interface Section {
  readonly title: string;
  readonly measure: () => Promise<{ figures: Figures; rows: string[][] }>;
}

const SECTIONS: readonly Section[] = [
  { title: 'join under the 8-IP × 8-socket handshake-slot attack', measure: slotAttackJoin },
  { title: `event-loop stall under ${FLOODERS} flooding authenticated connections`, measure: floodStall },
];

async function slotAttackJoin(): Promise<{ figures: Figures; rows: string[][] }> {
  const idle: number[] = [];
  const attacked: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    idle.push(required(await joinUnderAttack({}, false, JOIN_LIMIT_MS), 'idle join'));
    attacked.push(required(await joinUnderAttack({}, true, JOIN_LIMIT_MS), 'join under attack'));
  }
  const unreserved = await joinUnderAttack({ reservedHandshakeSlots: 0 }, true, UNDEFENDED_JOIN_LIMIT_MS);
  const idleMs = median(idle);
  const attackedMs = median(attacked);
  const ratio = median(attacked.map((a, i) => a / idle[i]!));
  const unreservedText =
    unreserved === undefined ? `> ${UNDEFENDED_JOIN_LIMIT_MS}` : formatFigure(unreserved);
  return {
    figures: {
      idleJoinMs: round(idleMs),
      attackedJoinMs: round(attackedMs),
      attackedVsIdleJoin: round(ratio, 2),
      attackedVsIdleJoinTarget: '<= 2',
      unreservedAttackedJoinMs: unreserved === undefined ? `>${UNDEFENDED_JOIN_LIMIT_MS}` : round(unreserved),
    },
    rows: [
      ['idle join (ms)', formatFigure(idleMs)],
      ['join under attack, reserved slots (ms)', formatFigure(attackedMs)],
      ['  ratio to the idle join (target <= 2)', formatFigure(ratio, 2)],
      ['join under attack, no reserved slots (ms, one run)', unreservedText],
    ],
  };
}

async function floodStall(): Promise<{ figures: Figures; rows: string[][] }> {
  const defended: FloodFigures[] = [];
  const undefended: FloodFigures[] = [];
  for (let run = 0; run < RUNS; run++) {
    defended.push(await floodCoordinator({}, FLOODERS, FLOOD_MS));
    undefended.push(await floodCoordinator(FLOOD_DEFENCES_OFF, FLOODERS, FLOOD_MS));
  }
  const m = (xs: FloodFigures[], f: (x: FloodFigures) => number) => median(xs.map(f));
  const max = m(defended, (x) => x.maxStallMs);
  const p99 = m(defended, (x) => x.p99StallMs);
  const offMax = m(undefended, (x) => x.maxStallMs);
  const offP99 = m(undefended, (x) => x.p99StallMs);
  const rate = (xs: FloodFigures[]) => m(xs, (x) => x.delivered / (FLOOD_MS / 1000));
  const unreachable = (xs: FloodFigures[]) => xs.reduce((sum, x) => sum + x.unreachable, 0);
  return {
    figures: {
      flooders: FLOODERS,
      floodAuthenticated: Math.min(...defended.map((x) => x.authenticated)),
      floodMaxStallMs: round(max),
      floodP99StallMs: round(p99),
      floodOffMaxStallMs: round(offMax),
      floodOffP99StallMs: round(offP99),
      floodMaxStallVsOff: round(max / offMax, 3),
      floodP99StallVsOff: round(p99 / offP99, 3),
      floodDeliveredPerSecond: round(rate(defended)),
      floodOffDeliveredPerSecond: round(rate(undefended)),
      floodUnreachableEvents: unreachable(defended),
      floodOffUnreachableEvents: unreachable(undefended),
    },
    rows: [
      ['', 'defended', 'defences off', 'ratio'],
      ['event-loop stall, max (ms)', formatFigure(max), formatFigure(offMax), formatFigure(max / offMax, 3)],
      ['event-loop stall, p99 (ms)', formatFigure(p99), formatFigure(offP99), formatFigure(p99 / offP99, 3)],
      ['flooded messages delivered (/s)', formatFigure(rate(defended)), formatFigure(rate(undefended)), ''],
      [
        `member.unreachable events (${RUNS} runs)`,
        String(unreachable(defended)),
        String(unreachable(undefended)),
        '',
      ],
    ],
  };
}

const result: Figures = { runs: RUNS };
for (const section of SECTIONS) {
  const { figures, rows } = await section.measure();
  console.log(`\n${section.title}\n${formatTable(rows)}`);
  Object.assign(result, figures);
}
printResult(result);
process.exit(0);

function required(ms: number | undefined, what: string): number {
  if (ms === undefined) throw new Error(`${what}: not up within ${JOIN_LIMIT_MS} ms`);
  return ms;
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
