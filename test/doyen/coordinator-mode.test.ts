import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidConfigError, silentLogger } from '../../packages/core/src/index.js';
import { type DoyenNode, type NodeConfig, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach } from '../support/doyen-nodes.js';
import { etcdForSuite, uniqueCluster } from '../support/etcd.js';
import { NODE_CONFIG_BASE } from '../support/node-config-base.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

const http = (port: number, path: string) =>
  fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => (await r.json()) as any);

async function startThree(cluster: string, extra: (i: number) => Partial<NodeConfig>) {
  const ports = await freePorts(6);
  const started: { node: DoyenNode; address: string; http: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const node = await startNode(
      {
        cluster,
        host: '127.0.0.1',
        port: ports[i]!,
        httpPort: ports[3 + i]!,
        seeds: [{ host: '127.0.0.1', port: ports[0]! }],
        secret: 's',
        partitions: { count: 12 },
        ...extra(i),
      },
      { logger: silentLogger() },
    );
    nodes.push(node);
    started.push({ node, address: `127.0.0.1:${ports[i]}`, http: ports[3 + i]! });
  }
  return started;
}

/** The one node whose allocator singleton runs, once every node agrees on the acting coordinator. */
async function agreedCoordinator(live: { node: DoyenNode; address: string; http: number }[], what: string) {
  return eventually(
    async () => {
      const views = await Promise.all(live.map((n) => http(n.http, '/cluster')));
      const leader = views[0].coordinator as string | null;
      if (!leader || !views.every((v) => v.coordinator === leader)) return false;
      const acting = live.filter((n) => n.node.coordinator?.view().acting).map((n) => n.address);
      const running = live
        .filter((n) => n.node.singletons.list().some((s) => s.runsHere))
        .map((n) => n.address);
      if (acting.length !== 1 || acting[0] !== leader || running.length !== 1 || running[0] !== leader) {
        return false;
      }
      return { leader, views };
    },
    { timeoutMs: 15_000, what },
  );
}

describe("startNode({ coordinator: 'quorum' })", () => {
  it('runs the allocator on the acting generation-clock leader, reports it in /cluster, fails over on a crash', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-votes-'));
    const started = await startThree('quorum-mode', (i) => ({
      coordinator: 'quorum',
      election: { voteFile: join(dir, `node-${i}.json`) },
    }));
    const { leader, views } = await agreedCoordinator(started, 'one acting quorum leader');
    for (const v of views) {
      expect(v.election).toMatchObject({ mode: 'quorum', leader });
      expect(v.election.term).toBeGreaterThan(0);
    }
    // the votes are on disk
    const vote = JSON.parse(readFileSync(join(dir, 'node-1.json'), 'utf8'));
    expect(vote.generation).toBeGreaterThan(0);

    const crashed = started.find((n) => n.address === leader)!;
    await crashed.node.close();
    const rest = started.filter((n) => n !== crashed);
    const after = await agreedCoordinator(rest, 'a new acting quorum leader');
    expect(after.leader).not.toBe(leader);
  });

  it('refuses a config it cannot keep safe', async () => {
    const base = NODE_CONFIG_BASE;
    await expect(startNode({ ...base, coordinator: 'etcd' })).rejects.toThrow(InvalidConfigError);
    await expect(
      startNode({ ...base, coordinator: 'quorum', clusterOptions: { downing: 'auto' } }),
    ).rejects.toThrow(/downing 'auto'/);
    await expect(startNode({ ...base, coordinator: 'raft' as never })).rejects.toThrow(/coordinator must be/);
    // a vote file that cannot be read back is refused, naming it, before anything is bound
    const corrupt = join(mkdtempSync(join(tmpdir(), 'doyen-votes-')), 'vote.json');
    writeFileSync(corrupt, '{"generation": "seven"');
    await expect(
      startNode(
        { ...base, coordinator: 'quorum', election: { voteFile: corrupt } },
        { logger: silentLogger() },
      ),
    ).rejects.toThrow(corrupt);
  });
});

const endpoints = etcdForSuite("startNode({ coordinator: 'etcd' })");

describe.skipIf(!endpoints)("startNode({ coordinator: 'etcd' }) against a real etcd", () => {
  it('runs the allocator on the etcd lease holder only, and moves it when the holder crashes', async () => {
    const started = await startThree(uniqueCluster('etcd-mode'), () => ({
      coordinator: 'etcd',
      election: { etcd: { endpoints: endpoints!, ttlMs: 2000 } },
    }));
    const { leader, views } = await agreedCoordinator(started, 'one etcd lease holder');
    for (const v of views) expect(v.election).toMatchObject({ mode: 'etcd', leader });
    const crashed = started.find((n) => n.address === leader)!;
    await crashed.node.close();
    const rest = started.filter((n) => n !== crashed);
    const after = await agreedCoordinator(rest, 'a new etcd lease holder');
    expect(after.leader).not.toBe(leader);
  });
});
