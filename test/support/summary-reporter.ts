import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with the plain `N passed, N failed, N skipped` line CI reads; with
 * DOYEN_TEST_SUMMARY_FILE set (run-suite.mjs, one of two runs), writes the counts there instead, for
 * the one line that sums both runs.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (m.state() === 'failed' && [...m.children.allTests()].length === 0) failed++;
    }
    const file = process.env.DOYEN_TEST_SUMMARY_FILE;
    if (file) writeFileSync(file, JSON.stringify({ passed, failed, skipped }));
    else process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
