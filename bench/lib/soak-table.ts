// The soak's table and its JSON line: each figure beside its target.

import { type HeapSeries, missedTargets, SOAK_TARGETS } from './soak-report.js';
import type { SoakResult } from './soak-run.js';
import { formatFigure } from './table.js';

export const formatBytes = (b: number) => `${formatFigure(b / 2 ** 20, 1)} MiB`;

/** The JSON line's object: options, figures beside targets, what was missed. */
export function soakSummary(result: SoakResult) {
  const f = result.figures;
  const witness = f.heap.filter((h) => h.witness).sort((a, b) => b.spanMs - a.spanMs)[0];
  const series = (h: HeapSeries) => ({
    proc: h.proc,
    witness: h.witness,
    spanS: Math.round(h.spanMs / 1000),
    heapStart: h.start.heapUsed,
    heapMiddle: h.middle.heapUsed,
    heapEnd: h.end.heapUsed,
    rssStart: h.start.rss,
    rssMiddle: h.middle.rss,
    rssEnd: h.end.rss,
    codeStart: h.start.codeSpace,
    codeEnd: h.end.codeSpace,
    heapRatio: Number(h.heapRatio.toFixed(4)),
    dataRatio: Number(h.dataRatio.toFixed(4)),
  });
  return {
    bench: 'soak',
    seed: result.options.seed,
    minutes: result.options.minutes,
    runS: Math.round(result.runMs / 1000),
    warmupS: result.options.warmupMs / 1000,
    faults: result.faults,
    faultKinds: countBy(result.record.faults.map((w) => w.fault.kind)),
    pauseBoundMs: result.options.pauseBoundMs,
    longPauses: result.options.longPauses,
    pauses: f.pauses,
    processes: result.processes,
    notWholeAfterFault: f.notWhole,
    witness: witness && series(witness),
    witnessHeapRatio: f.witnessHeapRatio,
    witnessDataRatio: f.witnessDataRatio,
    maxLongHeapRatio: f.maxLongHeapRatio,
    targetHeapRatio: SOAK_TARGETS.heapRatio,
    heap: f.heap.map(series),
    asks: f.asks,
    targetHangingAsks: SOAK_TARGETS.hangingAsks,
    overlaps: f.overlaps,
    targetOverlaps: SOAK_TARGETS.overlaps,
    overlapsBeyondPauseBound: f.overlapsBeyondPauseBound,
    overlapMs: {
      within: f.overlapVerdicts.filter((v) => !v.beyondPauseBound).map((v) => v.overlapMs),
      beyondPauseBound: f.overlapVerdicts.filter((v) => v.beyondPauseBound).map((v) => v.overlapMs),
    },
    downings: f.downings.length,
    falseDownings: f.falseDownings,
    targetFalseDownings: SOAK_TARGETS.falseDownings,
    errorLines: Object.fromEntries(result.record.errorLines),
    targetsMissed: missedTargets(f),
  };
}

function countBy(xs: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

/** One row per process series, then the headline figures beside their targets. */
export function soakRows(result: SoakResult): string[][] {
  const f = result.figures;
  const rows: string[][] = [
    [
      'process',
      'span',
      'heap start',
      'heap mid',
      'heap end',
      'end/start',
      'w/o code',
      'rss start',
      'rss mid',
      'rss end',
    ],
  ];
  for (const h of f.heap) {
    rows.push([
      `${h.proc}${h.witness ? ' (witness)' : ''}`,
      `${formatFigure(h.spanMs / 1000)} s`,
      formatBytes(h.start.heapUsed),
      formatBytes(h.middle.heapUsed),
      formatBytes(h.end.heapUsed),
      `×${h.heapRatio.toFixed(3)}`,
      `×${h.dataRatio.toFixed(3)}`,
      formatBytes(h.start.rss),
      formatBytes(h.middle.rss),
      formatBytes(h.end.rss),
    ]);
  }
  const met = (ok: boolean) => (ok ? 'yes' : 'NO');
  const a = f.asks;
  rows.push([]);
  rows.push(['figure', 'value', 'target', 'met']);
  rows.push([
    'witness heap end / after warm-up',
    f.witnessHeapRatio === undefined ? '-' : `×${f.witnessHeapRatio.toFixed(3)}`,
    `≤ ×${SOAK_TARGETS.heapRatio}`,
    met(f.witnessHeapRatio !== undefined && f.witnessHeapRatio <= SOAK_TARGETS.heapRatio),
  ]);
  rows.push([
    '  the same without compiled code',
    f.witnessDataRatio === undefined ? '-' : `×${f.witnessDataRatio.toFixed(3)}`,
    '',
    '',
  ]);
  rows.push([
    'largest heap ratio, processes ≥ half the run',
    f.maxLongHeapRatio === undefined ? '-' : `×${f.maxLongHeapRatio.toFixed(3)}`,
    `≤ ×${SOAK_TARGETS.heapRatio}`,
    f.maxLongHeapRatio === undefined ? '-' : met(f.maxLongHeapRatio <= SOAK_TARGETS.heapRatio),
  ]);
  rows.push(['asks sent', formatFigure(a.sent), '', '']);
  rows.push(['  answered', formatFigure(a.answered), '', '']);
  rows.push(['  failed with an error', formatFigure(a.failed), '', '']);
  rows.push(['  cut off by kill -9 of the asker', formatFigure(a.cutOff), '', '']);
  rows.push(['  left hanging', formatFigure(a.hanging), '0', met(a.hanging === 0)]);
  const bound = result.options.pauseBoundMs;
  rows.push([
    `pauses within / beyond the ${bound} ms bound`,
    `${f.pauses.within} / ${f.pauses.beyond}` +
      (f.pauses.maxStalledMs === undefined ? '' : ` (longest ${formatFigure(f.pauses.maxStalledMs)} ms)`),
    '',
    '',
  ]);
  rows.push(['overlaps within the stated assumptions', formatFigure(f.overlaps), '0', met(f.overlaps === 0)]);
  rows.push([
    `  during a pause beyond ${bound} ms (expected)`,
    formatFigure(f.overlapsBeyondPauseBound),
    '',
    '',
  ]);
  rows.push(['downings (member incarnations)', formatFigure(f.downings.length), '', '']);
  rows.push([
    '  false (quiet period or untouched member)',
    formatFigure(f.falseDownings),
    '0',
    met(f.falseDownings === 0),
  ]);
  rows.push(['faults not recovered within 60 s', formatFigure(f.notWhole), '', '']);
  return rows.map((r) => (r.length === 0 ? [''] : r));
}
