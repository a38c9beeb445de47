// `pnpm test`: the whole suite as two vitest runs at once (vitest.config.ts, DOYEN_TEST_SPLIT).
// The deterministic simulations (project `beside`, CPU only, no wall-clock bound) run niced in a
// run of their own for the whole suite, on the CPU the other files leave idle; the `shared` files
// and then the `alone` files run in the other, as before. Inside one vitest run the simulations
// could only run beside the `alone` files (a group shares one worker count), which left them
// the last group's bottleneck. The simulations' output follows the main run's; one summary line
// ends it (the one CI reads). Arguments (a file filter, a reporter) or DOYEN_TEST_BESIDE=off: one
// plain vitest run, as before.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
/** vitest's own entry (DOYEN_TEST_VITEST: another script, for run-suite.test.ts). */
const VITEST =
  process.env.DOYEN_TEST_VITEST ??
  fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));
const REPORTERS = ['--reporter=default', '--reporter=./test/support/summary-reporter.ts'];

/** Runs vitest; resolves with its exit code (1 when it was killed by a signal). */
function vitest(argv, env, stdio) {
  const child = spawn(process.execPath, [VITEST, 'run', ...argv], {
    env: { ...process.env, ...env },
    stdio,
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  return { child, exited };
}

if (args.length > 0 || process.env.DOYEN_TEST_BESIDE === 'off') {
  const { exited } = vitest([...REPORTERS, ...args], {}, 'inherit');
  process.exitCode = await exited;
} else {
  const dir = mkdtempSync(join(tmpdir(), 'doyen-suite-'));
  const summary = (name) => join(dir, `${name}.json`);
  const split = { DOYEN_TEST_SPLIT: '1' };
  const beside = vitest(
    ['--project', 'beside', ...REPORTERS],
    { ...split, DOYEN_TEST_SUMMARY_FILE: summary('beside') },
    ['ignore', 'pipe', 'pipe'],
  );
  const besideOutput = [];
  beside.child.stdout.on('data', (chunk) => besideOutput.push(chunk));
  beside.child.stderr.on('data', (chunk) => besideOutput.push(chunk));
  const main = vitest(
    ['--project', 'shared', '--project', 'alone', ...REPORTERS],
    { ...split, DOYEN_TEST_SUMMARY_FILE: summary('main') },
    'inherit',
  );
  // a Ctrl-C reaches both (same process group); a TERM from a CI runner is passed on
  process.once('SIGTERM', () => {
    for (const run of [main, beside]) run.child.kill('SIGTERM');
  });
  const mainCode = await main.exited;
  if (beside.child.exitCode === null)
    process.stdout.write('\n== the simulations (project `beside`) are still running: waiting for them\n');
  const besideCode = await beside.exited;
  process.stdout.write('\n== the simulations (project `beside`, run niced beside the others)\n');
  process.stdout.write(Buffer.concat(besideOutput));
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const name of ['main', 'beside']) {
    try {
      const read = JSON.parse(readFileSync(summary(name), 'utf8'));
      for (const key of Object.keys(counts)) counts[key] += read[key];
    } catch {
      // a run that ended before its reporter wrote (a crash, a config error): counted as a failure
      counts.failed++;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  process.exitCode = mainCode !== 0 || besideCode !== 0 || counts.failed > 0 ? 1 : 0;
}
