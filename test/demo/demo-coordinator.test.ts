import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { coordinatorNodeArgs } from '../../apps/partition-demo/src/coordinator-args.js';
import { describe as describeLine } from '../../apps/partition-demo/src/events.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('partition demo: --coordinator', () => {
  it('turns the mode into doyen node arguments, and says what is wrong with a bad request', () => {
    expect(coordinatorNodeArgs(undefined, undefined)).toEqual([]);
    expect(coordinatorNodeArgs('emergent', undefined)).toEqual([]);
    expect(coordinatorNodeArgs('quorum', undefined)).toEqual(['--coordinator', 'quorum']);
    expect(coordinatorNodeArgs('etcd', 'http://127.0.0.1:2379')).toEqual([
      '--coordinator',
      'etcd',
      '--etcd',
      'http://127.0.0.1:2379',
    ]);
    expect(coordinatorNodeArgs('etcd', undefined)).toMatch(/needs --etcd/);
    expect(coordinatorNodeArgs('quorum', 'http://x:1')).toMatch(/only goes with --coordinator etcd/);
    expect(coordinatorNodeArgs('raft', undefined)).toMatch(/must be emergent, quorum or etcd/);
  });

  it('shows a node that starts leading and may act; other election views are not news', () => {
    const nameOf = (a: string) => (a === '127.0.0.1:4001' ? 'athens' : a);
    const line = { event: 'election.leader', algorithm: 'quorum', node: '127.0.0.1:4001', term: 3 };
    expect(describeLine({ ...line, role: 'leading', acting: true }, nameOf)).toMatchObject({
      event: 'election.leader',
      text: 'athens leads (quorum, term 3)',
    });
    expect(describeLine({ ...line, role: 'leading', acting: false }, nameOf)).toBeUndefined();
    expect(describeLine({ ...line, role: 'following', acting: false }, nameOf)).toBeUndefined();
  });

  it('runs five real nodes with a quorum-elected coordinator that they all agree on, allocator included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-demo-quorum-'));
    const script = join(dir, 'quorum.demo');
    writeFileSync(script, 'wait-until converged 5 60s\nexpect partitions-balanced\n');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=@doyen/source',
        'apps/partition-demo/src/main.ts',
        '--coordinator',
        'quorum',
        '--script',
        script,
        '--no-tty',
        '--logs',
        join(dir, 'logs'),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code, output.split('\n').slice(-40).join('\n')).toBe(0);
    expect(output).toMatch(/script quorum\.demo passed/);
    expect(output).toMatch(/election\.leader\s+\S+ leads \(quorum, term \d+\)/);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);
});
