import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bodyOrUndefined } from '../support/cli-body.js';
import { type CliNode, getJson, killAll, nodeArgs, runCli, runCliNode } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

function node(port: number, httpPort: number, seeds: number[], extra: string[] = []): CliNode {
  const n = runCliNode('cli-test', { port, httpPort, seeds }, extra);
  started.push(n);
  return n;
}

const clusterOf = (n: CliNode) => bodyOrUndefined(n, '/cluster');

describe('doyen node (child processes)', () => {
  it('three CLI nodes form a cluster; kill -9 of the coordinator; SIGTERM leaves gracefully and exits 0', async () => {
    const [p1, p2, p3, h1, h2, h3] = await freePorts(6);
    const seeds = [p1!, p2!];
    // start the second seed first: it keeps trying until the first seed is up
    const b = node(p2!, h2!, seeds, ['--name', 'byzantium']);
    const a = node(p1!, h1!, seeds, ['--name', 'athens']);
    await eventually(async () => (await clusterOf(a))?.status === 'up', {
      timeoutMs: 20_000,
      what: 'athens up',
    });
    const c = node(p3!, h3!, seeds, ['--name', 'cyrene']);
    await eventually(
      async () => {
        const views = await Promise.all([a, b, c].map(clusterOf));
        return views.every((v) => v?.members.filter((m: any) => m.status === 'up').length === 3) && views;
      },
      { timeoutMs: 30_000, what: 'three up members in every view' },
    );
    const view = await clusterOf(b);
    expect(view.coordinator).toBe(`127.0.0.1:${p1}`);
    expect(view.members.find((m: any) => m.name === 'athens').age).toBe(1);
    expect((await getJson(h3!, '/health/ready')).status).toBe(200);
    expect(await fetch(`http://127.0.0.1:${h3}/metrics`).then((r) => r.text())).toMatch(
      /doyen_cluster_members 3/,
    );

    // the next oldest takes over: byzantium or cyrene, whichever the first seed let in first
    // (byzantium retries its join while cyrene may get in between)
    const survivors = view.members.filter((m: any) => m.name !== 'athens');
    const next = survivors.sort((x: any, y: any) => x.age - y.age)[0].address as string;
    a.process.kill('SIGKILL');
    await eventually(
      async () => {
        const views = await Promise.all([b, c].map(clusterOf));
        return views.every(
          (v) => v?.coordinator === next && v.members.filter((m: any) => m.status === 'up').length === 2,
        );
      },
      { timeoutMs: 20_000, what: `the next oldest (${next}) to take over` },
    ).catch((error: Error) => {
      // say what the survivors went through
      const tail = (n: CliNode, name: string) => `--- ${name}\n${n.logs.slice(-30).join('\n')}`;
      throw new Error(`${error.message}\n${tail(b, 'byzantium')}\n${tail(c, 'cyrene')}`);
    });
    const downed = (await clusterOf(c)).members.find((m: any) => m.name === 'athens');
    expect(downed).toMatchObject({ status: 'down', reachable: false });

    c.process.kill('SIGTERM');
    expect(await c.exited).toEqual({ code: 0, signal: null });
    await eventually(async () => (await clusterOf(b))?.members.every((m: any) => m.name !== 'cyrene'), {
      what: 'cyrene removed',
    });
    const events = b.events().map((e) => e.event);
    for (const e of [
      'member.joined',
      'member.up',
      'member.unreachable',
      'member.downed',
      'member.removed',
      'coordinator.changed',
    ]) {
      expect(events).toContain(e);
    }
    expect(b.events().every((e) => typeof e.time === 'number')).toBe(true);
  });

  it('a join that cannot succeed exits non-zero with the reason', async () => {
    const [p1, p2, h] = await freePorts(3);
    const config = join(tmpdir(), `doyen-join-${process.pid}.json`);
    writeFileSync(
      config,
      JSON.stringify({ clusterOptions: { maxJoinAttempts: 2, joinTimeoutMs: 200, joinBackoffMinMs: 50 } }),
    );
    // the first seed is someone else, who never comes up
    const n = node(p2!, h!, [p1!, p2!], ['--config', config]);
    const exit = await n.exited;
    expect(exit.code).toBe(3);
    expect(n.logs.join('\n')).toMatch(/could not join the cluster: no seed answered after 2 attempts/);
  });

  it('bad arguments exit 2 naming them', async () => {
    const n = runCli(nodeArgs('x', 'notaport', 'a:1'));
    started.push(n);
    expect((await n.exited).code).toBe(2);
    expect(n.logs.join('\n')).toMatch(/--port must be an integer/);
  });

  it('--coordinator quorum: the allocator runs on the acting elected leader; kill -9 of it elects another', async () => {
    const [p1, p2, p3, h1, h2, h3] = await freePorts(6);
    const dir = mkdtempSync(join(tmpdir(), 'doyen-cli-votes-'));
    const seeds = [p1!];
    const nodes = [
      [p1!, h1!],
      [p2!, h2!],
      [p3!, h3!],
    ].map(([p, h], i) =>
      node(p!, h!, seeds, ['--coordinator', 'quorum', '--vote-file', join(dir, `vote-${i}.json`)]),
    );
    const agreed = async (live: CliNode[]) =>
      eventually(
        async () => {
          const views = await Promise.all(live.map(clusterOf));
          const leader = views[0]?.election?.leader;
          if (!leader || !views.every((v) => v?.coordinator === leader)) return false;
          const host = live[views.findIndex((v) => v.self === leader)];
          if (!host || !views.find((v) => v.self === leader).election.acting) return false;
          const singletons = (await getJson(host.httpPort!, '/singletons')).body as { runsHere: boolean }[];
          return singletons.some((x) => x.runsHere) && { leader, host };
        },
        { timeoutMs: 30_000, what: 'one acting elected leader running the allocator' },
      );
    const first = await agreed(nodes);
    first.host.process.kill('SIGKILL');
    const second = await agreed(nodes.filter((n) => n !== first.host));
    expect(second.leader).not.toBe(first.leader);
  });

  it('--coordinator etcd without --etcd, or an unknown coordinator, exits 2', async () => {
    const base = ['node', '--cluster', 'x', '--host', '127.0.0.1', '--port', '0', '--seeds', '127.0.0.1:1'];
    const etcd = runCli([...base, '--coordinator', 'etcd']);
    const bogus = runCli([...base, '--coordinator', 'raft']);
    started.push(etcd, bogus);
    expect((await etcd.exited).code).toBe(2);
    expect(etcd.logs.join('\n')).toMatch(/coordinator 'etcd' needs election.etcd.endpoints/);
    expect((await bogus.exited).code).toBe(2);
    expect(bogus.logs.join('\n')).toMatch(/coordinator must be one of emergent, quorum, etcd/);
  });
});
