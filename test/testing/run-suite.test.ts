import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/repo-root.js';

// `pnpm test`'s runner (test/support/run-suite.mjs) against a fake vitest: what each run was asked,
// the one summary line summing both, and the exit code when either run fails.
const RUNNER = join(REPO_ROOT, 'test/support/run-suite.mjs');

/** A stand-in for vitest: prints its arguments, writes the counts FAKE_<RUN> gives, exits with them. */
const FAKE_VITEST = `
import { writeFileSync } from 'node:fs';
const args = process.argv.slice(2);
const run = args.includes('beside') ? 'BESIDE' : 'MAIN';
const { passed, failed, skipped, code, write } = JSON.parse(process.env['FAKE_' + run] ?? '{}');
console.log('fake vitest', run, 'split=' + (process.env.DOYEN_TEST_SPLIT ?? ''), args.join(' '));
if (write !== false && process.env.DOYEN_TEST_SUMMARY_FILE)
  writeFileSync(process.env.DOYEN_TEST_SUMMARY_FILE, JSON.stringify({ passed, failed, skipped }));
process.exit(code ?? 0);
`;

function runSuite(env: Record<string, string>, args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'run-suite-test-'));
  const fake = join(dir, 'vitest.mjs');
  writeFileSync(fake, FAKE_VITEST);
  const result = spawnSync(process.execPath, [RUNNER, ...args], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      // this file runs inside `pnpm test`: none of its own run's settings may reach the fake
      DOYEN_TEST_BESIDE: '',
      DOYEN_TEST_SPLIT: '',
      DOYEN_TEST_SUMMARY_FILE: '',
      DOYEN_TEST_VITEST: fake,
      ...env,
    },
    encoding: 'utf8',
  });
  return { code: result.status, out: result.stdout, lastLine: result.stdout.trim().split('\n').at(-1) };
}

const counts = (passed: number, failed: number, skipped: number, more: object = {}) =>
  JSON.stringify({ passed, failed, skipped, ...more });

describe('pnpm test runs the simulations in a run of their own and sums both', () => {
  it('runs `shared` and `alone` in one run and `beside` in another, both split; one line sums them', () => {
    const { code, out, lastLine } = runSuite({ FAKE_MAIN: counts(10, 0, 2), FAKE_BESIDE: counts(5, 0, 1) });
    expect(code).toBe(0);
    expect(out).toContain('fake vitest MAIN split=1 run --project shared --project alone');
    expect(out).toContain('fake vitest BESIDE split=1 run --project beside');
    // the simulations' output follows the main run's
    expect(out.indexOf('fake vitest BESIDE')).toBeGreaterThan(out.indexOf('fake vitest MAIN'));
    expect(lastLine).toBe('15 passed, 0 failed, 3 skipped');
  });

  it('fails when the simulations fail, with their failures in the line', () => {
    const { code, lastLine } = runSuite({
      FAKE_MAIN: counts(10, 0, 0),
      FAKE_BESIDE: counts(4, 1, 0, { code: 1 }),
    });
    expect(code).toBe(1);
    expect(lastLine).toBe('14 passed, 1 failed, 0 skipped');
  });

  it('fails when the main run fails', () => {
    const { code, lastLine } = runSuite({
      FAKE_MAIN: counts(9, 2, 0, { code: 1 }),
      FAKE_BESIDE: counts(5, 0, 0),
    });
    expect(code).toBe(1);
    expect(lastLine).toBe('14 passed, 2 failed, 0 skipped');
  });

  it('counts a run that ended without its summary (a crash) as a failure', () => {
    const { code, lastLine } = runSuite({
      FAKE_MAIN: counts(10, 0, 0),
      FAKE_BESIDE: counts(0, 0, 0, { code: 1, write: false }),
    });
    expect(code).toBe(1);
    expect(lastLine).toBe('10 passed, 1 failed, 0 skipped');
  });

  it('with arguments (a file filter), runs one plain vitest with them, not split', () => {
    const { code, out } = runSuite({ FAKE_MAIN: counts(1, 0, 0) }, ['test/some.test.ts']);
    expect(code).toBe(0);
    expect(out).toContain('fake vitest MAIN split= run --reporter=default');
    expect(out).toContain('test/some.test.ts');
    expect(out).not.toContain('fake vitest BESIDE');
  });
});
