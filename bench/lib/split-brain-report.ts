// Table rows and JSON figures of the split-brain bench.
import type { StrategySample } from './split-brain-runs.js';
import { median } from './stats.js';
import { formatFigure } from './table.js';

/** etcd client URLs from `ETCD_ENDPOINTS` (comma-separated), or undefined when unset. */
export function etcdEndpointsFromEnv(): string[] | undefined {
  const endpoints = (process.env.ETCD_ENDPOINTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return endpoints.length > 0 ? endpoints : undefined;
}

export interface Figure {
  readonly median: number;
  readonly max: number;
  readonly samples: readonly number[];
}

export function figure(xs: readonly number[]): Figure {
  const ok = xs.filter((x) => !Number.isNaN(x));
  return ok.length === 0
    ? { median: Number.NaN, max: Number.NaN, samples: [] }
    : { median: median(ok), max: Math.max(...ok), samples: ok };
}

export function fig(x: number): string {
  return Number.isNaN(x) ? '-' : formatFigure(x);
}

export function round(x: number): number | null {
  return Number.isNaN(x) ? null : Math.round(x);
}

/**
 * Whether a side that downed itself logged more than one `sbr.decision`: its decider's update did not reach
 * the peers it downed, so they went down only later, deciding again by themselves.
 */
export function peersMissedDecision(s: StrategySample): boolean {
  if (s.survivors === 'none') return s.decisionLines.majority > 1 || s.decisionLines.minority > 1;
  return s.decisionLines[s.survivors === 'majority' ? 'minority' : 'majority'] > 1;
}

/**
 * One strategy's rows (figure, unit, median, max, target, met, samples) and JSON. The decision target is
 * judged on the median of the runs; `met` says `median` when some run exceeded it.
 */
export function strategyRows(
  label: string,
  xs: readonly StrategySample[],
  runs: number,
  targetMs: number,
): { rows: string[][]; json: Record<string, unknown>; decisionMet: boolean; outcomeMet: boolean } {
  const decision = figure(xs.map((s) => s.decisionMs));
  const downed = figure(xs.map((s) => s.downedMs));
  const both = figure(xs.map((s) => s.bothDecidedMs));
  const converge = figure(xs.map((s) => s.convergeMs));
  const others = figure(xs.map((s) => s.othersDownMs));
  const correct = xs.filter((s) => s.correct).length;
  const survivors = xs[0]?.survivors ?? '-';
  const decisionMet = xs.length === runs && decision.median <= targetMs;
  const outcomeMet = xs.length === runs && correct === runs;
  const row = (name: string, f: Figure, target?: number): string[] => [
    `  ${label}: ${name}`,
    'ms',
    fig(f.median),
    fig(f.max),
    target === undefined ? '' : `<= ${formatFigure(target)}`,
    target === undefined ? '' : !decisionMet ? 'NO' : f.max <= target ? 'yes' : 'median',
    f.samples.map(fig).join(' '),
  ];
  // The side(s) that down themselves: one decision each when the decider's update reaches its peers.
  const yielding = (s: StrategySample): string =>
    s.survivors === 'none'
      ? `${s.decisionLines.minority}+${s.decisionLines.majority}`
      : String(s.decisionLines[s.survivors === 'majority' ? 'minority' : 'majority']);
  const rows = [
    row('first sbr.decision', decision, targetMs),
    row('first member.downed', downed),
    row('both sides decided', both),
    row(survivors === 'none' ? 'all 5 down' : `the ${survivors} sees only itself up`, converge),
    ...(survivors === 'none'
      ? []
      : [row(`the ${survivors === 'majority' ? 'minority' : 'majority'} all down`, others)]),
    [
      `  ${label}: sbr.decision lines on the side(s) downing themselves`,
      'count',
      '',
      '',
      survivors === 'none' ? '1+1' : '1',
      '',
      xs.map(yielding).join(' '),
    ],
    [
      `  ${label}: runs with the expected outcome (${survivors === 'none' ? 'all down' : `${survivors} survives`})`,
      'count',
      `${correct}/${xs.length}`,
      '',
      `== ${runs}`,
      outcomeMet ? 'yes' : 'NO',
      '',
    ],
  ];
  const json = {
    decisionMedianMs: round(decision.median),
    decisionMaxMs: round(decision.max),
    decisionSamplesMs: decision.samples.map(round),
    firstDownedMedianMs: round(downed.median),
    bothDecidedMedianMs: round(both.median),
    convergeMedianMs: round(converge.median),
    convergeMaxMs: round(converge.max),
    otherSideDownMedianMs: round(others.median),
    otherSideDownMaxMs: round(others.max),
    yieldingSideDecisionLines: xs.map(yielding),
    survivors,
    correctRuns: correct,
    decisionTargetMet: decisionMet,
  };
  return { rows, json, decisionMet, outcomeMet };
}
