import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canUseNetns, netnsSkipMessage } from '../support/netns.js';
import { REPO_ROOT } from '../support/repo-root.js';
import { eventually } from '../support/wait.js';

/**
 * `pnpm chaos sharding` is stopped by SIGINT or SIGTERM at once, mid-run (a 200-run series is
 * stopped that way): its node processes are killed, its namespaces deleted, and its results file
 * says where it stopped, below the lines of the runs it finished.
 */
const ok = canUseNetns();
if (!ok) console.warn(netnsSkipMessage());

const work = mkdtempSync(join(tmpdir(), 'doyen-chaos-stop-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const namespacesOf = (pid: number) =>
  execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter((ns) => ns.endsWith(`-chaos-${pid}`));

const pidsIn = (ns: string) =>
  execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);

/** Running, or a zombie not reaped yet (either answers signal 0). */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!ok)('chaos runner stopped by a signal', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s: nodes killed, namespaces deleted, the stop recorded',
    async (signal) => {
      const out = join(work, `${signal}.jsonl`);
      // from source: the test needs no fresh build
      const runner = spawn(
        process.execPath,
        [
          ...[
            '--conditions=@doyen/source',
            '--import',
            import.meta.resolve('tsx'),
            join(REPO_ROOT, 'bench/chaos.ts'),
          ],
          ...['sharding', '--runs', '2', '--seed', '11', '--from-source', '--out', out],
        ],
        { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      runner.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => runner.on('exit', (code) => resolve(code)));
      const pid = runner.pid!;
      // mid-run: the six namespaces exist and node processes run in them
      const nodes = await eventually(
        () => {
          const namespaces = namespacesOf(pid);
          const pids = namespaces.flatMap(pidsIn);
          return namespaces.length === 7 && pids.length >= 3 && pids;
        },
        { timeoutMs: 60_000, intervalMs: 200, what: `the runner's namespaces and nodes (${stderr})` },
      );
      runner.kill(signal);
      expect(await exited, stderr).toBe(130);
      expect(namespacesOf(pid)).toEqual([]);
      // SIGKILLed before the runner exited; gone once init has reaped them
      await eventually(() => nodes.every((n) => !alive(n)), { timeoutMs: 5_000, what: 'the nodes gone' });
      const lines = readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.at(-1)).toMatchObject({ stopped: signal, abandonedSeed: 11 });
      expect(stderr).toContain(`${signal}: stopping; run of seed 11 abandoned`);
    },
    90_000,
  );
});
