import { afterEach, describe, expect, it } from 'vitest';
import { bodyOrUndefined } from '../support/cli-body.js';
import { type CliNode, killAll, runCliNode } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

function node(port: number, httpPort: number, seeds: number[], name: string): CliNode {
  const n = runCliNode('singleton-cli', { port, httpPort, seeds }, ['--name', name]);
  started.push(n);
  return n;
}

const get = bodyOrUndefined;

describe('the partition allocator singleton in real processes', () => {
  it('runs on the oldest, comes back elsewhere after kill -9, and is handed over on SIGTERM', async () => {
    const [p1, p2, p3, h1, h2, h3] = await freePorts(6);
    const seeds = [p1!, p2!];
    const a = node(p1!, h1!, seeds, 'athens');
    await eventually(async () => (await get(a, '/cluster'))?.status === 'up', { timeoutMs: 20_000 });
    const b = node(p2!, h2!, seeds, 'byzantium');
    await eventually(async () => (await get(b, '/cluster'))?.status === 'up', { timeoutMs: 20_000 });
    const c = node(p3!, h3!, seeds, 'cyrene');
    const allocatorAt = async (n: CliNode) =>
      ((await get(n, '/singletons')) ?? [])[0] as { node: string; runsHere: boolean } | undefined;
    await eventually(
      async () => {
        const tables = await Promise.all([a, b, c].map((n) => get(n, '/partitions')));
        return tables.every(
          (t) => t && Object.keys(t.counts).length === 3 && t.version === tables[0].version,
        );
      },
      { timeoutMs: 30_000, what: 'one table over three nodes everywhere' },
    );
    expect((await allocatorAt(a))?.runsHere).toBe(true);
    expect((await allocatorAt(c))?.node).toBe(`127.0.0.1:${p1}`);
    // the host lease as each node knows it: A holds it, C's vote is bound to A
    const aKey = (await get(a, '/cluster')).self as string;
    const leaseAt = async (n: CliNode) => ((await get(n, '/singletons')) ?? [])[0]?.lease;
    expect(await leaseAt(a)).toMatchObject({ held: true, blockedBy: null });
    await eventually(async () => (await leaseAt(c))?.votedFor?.startsWith(`${aKey}#`), {
      what: "C's vote bound to A",
    });
    expect(await leaseAt(c)).toMatchObject({ held: false, blockedBy: null });
    const metrics = await fetch(`http://127.0.0.1:${h1}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/doyen_singleton_lease_changes_total\{scope="",change="acquired"\} [1-9]/);
    const counts = Object.values((await get(c, '/partitions')).counts as Record<string, number>).sort();
    expect(counts).toEqual([90, 90, 91]);

    a.process.kill('SIGKILL');
    await eventually(async () => (await allocatorAt(b))?.runsHere === true, {
      timeoutMs: 20_000,
      what: 'failover to byzantium',
    });
    await eventually(
      async () => {
        const t = await get(c, '/partitions');
        return (
          t &&
          Object.keys(t.counts).length === 2 &&
          Object.values(t.counts as Record<string, number>)
            .sort()
            .join() === '135,136'
        );
      },
      { timeoutMs: 20_000, what: 'the table over the two survivors' },
    );

    b.process.kill('SIGTERM');
    expect((await b.exited).code).toBe(0);
    await eventually(async () => (await allocatorAt(c))?.runsHere === true, {
      timeoutMs: 20_000,
      what: 'hand-over to cyrene',
    });
    expect(b.events().some((e) => e.event === 'singleton.handed-over')).toBe(true);
    expect(c.events().some((e) => e.event === 'singleton.started')).toBe(true);
  });
});
