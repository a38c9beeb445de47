import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let demo: ChildProcess | undefined;
// a failed or timed-out run: SIGTERM makes the demo stop its nodes before it exits
afterEach(() => {
  if (demo && demo.exitCode === null && demo.signalCode === null) demo.kill('SIGTERM');
});

/** Runs `pnpm demo` with `args` (plain output) to its exit; its exit code and everything it printed. */
async function runDemo(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@doyen/source', 'apps/partition-demo/src/main.ts', ...args, '--no-tty'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  demo = child;
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, output };
}

describe('partition demo, scripted (real node processes)', () => {
  it('runs scripts/ci.demo to the end, every expectation holds, and no node is left running', async () => {
    const { code, output } = await runDemo(['--script', 'apps/partition-demo/scripts/ci.demo']);
    const tail = output.split('\n').slice(-60).join('\n');
    expect(code, tail).toBe(0);
    expect(output).toMatch(/script ci\.demo passed: \d+ steps, \d+ expectations held/);
    expect(output).toMatch(/all nodes stopped/);

    // every node the demo spawned (its log names the pid) is gone
    const logDir = /all nodes stopped; logs in (.+)$/m.exec(output)![1]!.trim();
    const pids = readdirSync(logDir).flatMap((f) =>
      [...readFileSync(join(logDir, f), 'utf8').matchAll(/demo: spawn #\d+ pid (\d+)/g)].map((m) =>
        Number(m[1]),
      ),
    );
    expect(pids.length).toBeGreaterThanOrEqual(6);
    expect(pids.filter(isRunning)).toEqual([]);
    rmSync(logDir, { recursive: true, force: true });
  }, 150_000); // about 25 s alone; a loaded 2-CPU runner can take several times that

  // in this file, so it never overlaps the tour above: both start node processes on 2 cores
  it('runs three real nodes with a quorum-elected coordinator that they all agree on, allocator included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-demo-quorum-'));
    const script = join(dir, 'quorum.demo');
    writeFileSync(script, 'wait-until converged 3 60s\nexpect partitions-balanced\n');
    const { code, output } = await runDemo([
      ...['--nodes', '3', '--coordinator', 'quorum'],
      ...['--script', script, '--logs', join(dir, 'logs')],
    ]);
    expect(code, output.split('\n').slice(-40).join('\n')).toBe(0);
    expect(output).toMatch(/script quorum\.demo passed/);
    expect(output).toMatch(/election\.leader\s+\S+ leads \(quorum, term \d+\)/);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  // the cart tour: sharded carts under load through a kill -9 and a rolling restart (cart-book.ts
  // says what "exact" means); in this file too, for the same reason
  it('runs scripts/carts.demo: every cart exact after a kill -9, none restarted empty by a rolling restart', async () => {
    const { code, output } = await runDemo(['--script', 'apps/partition-demo/scripts/carts.demo']);
    expect(code, output.split('\n').slice(-60).join('\n')).toBe(0);
    expect(output).toMatch(/script carts\.demo passed/);
    // the kill -9 check saw carts restart empty (the killed node's), the planned moves' none
    expect(output).toMatch(
      /carts exact, (?:\d+ within their unanswered adds, )?[1-9]\d* restarted empty after a crash/,
    );
    const logDir = /all nodes stopped; logs in (.+)$/m.exec(output)![1]!.trim();
    rmSync(logDir, { recursive: true, force: true });
  }, 240_000);
});
