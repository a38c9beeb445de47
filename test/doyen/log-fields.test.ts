import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { type CliNode, getJson, killAll, runCliNode } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

describe('doyen node log lines', () => {
  it('every line of a node’s life carries node, pid and hostname (and no key twice)', async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    const first = runCliNode('logs', { port: p1!, httpPort: h1!, seeds: [p1!] }, ['--partitions', '4']);
    started.push(first);
    await eventually(
      async () => (await getJson(h1!, '/health/ready').catch(() => ({ status: 0 }))).status === 200,
      {
        timeoutMs: 20_000,
      },
    );
    const second = runCliNode('logs', { port: p2!, httpPort: h2!, seeds: [p1!] });
    started.push(second);
    await eventually(async () => (await getJson(h1!, '/cluster')).body.members?.length === 2, {
      timeoutMs: 20_000,
    });
    first.process.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    // the second is only the first's peer (its own lines are not checked): afterEach kills it, a
    // SIGTERM would wait out its leave phase (~11 s) once it is alone without its seed

    const lines = first.logs.filter((l) => l.startsWith('{'));
    // positive control: the life was logged, start to stop
    const events = lines.map((l) => JSON.parse(l).event);
    for (const e of [
      'http.listening',
      'member.up',
      'node.started',
      'node.signal',
      'shutdown.phase',
      'node.stopped',
    ])
      expect(events, e).toContain(e);
    for (const line of lines) {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      expect(parsed.node, line).toBe(`127.0.0.1:${p1}`);
      expect(parsed.pid, line).toBe(first.process.pid);
      expect(parsed.hostname, line).toBe(hostname());
      // a repeated key would show up twice in the raw line
      expect(line.match(/"node":/g), line).toHaveLength(1);
    }
    // numbered 1, 2, 3, … start to stop, none missing: the exit waited for its lines to be read
    expect(lines.map((l) => JSON.parse(l).logSeq)).toEqual(lines.map((_, i) => i + 1));
    expect(first.linesLost).toBe(0);
  });
});
