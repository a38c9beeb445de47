// `pnpm bench cluster-converge [--nodes=50] [--hogs=3] [--dump=DIR]`: starts N compiled-CLI nodes on
// 127.0.0.1 under manual downing (one per 200 ms, three seeds, as bench console does), optionally beside
// busy-loop CPU hogs, and times until every node logged all N members up. Under manual downing a member
// left unreachable holds every joiner out for good (Akka's convergence rule), so a start that never
// converges is the failure this bench looks for. When it does not converge within the deadline it
// writes every node's /cluster, /cluster/members (who observes whom), /metrics and event lines to DIR.
// Last JSON line: { nodes, hogs, converged, allUpMs, loadavg, targets }.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../packages/testkit/src/index.js';
import { allUpAt, type CliNode, killCliNodes, spawnCliNode } from './lib/cli-nodes.js';
import { printResult } from './lib/stats.js';

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const N = Number(arg('nodes', '50'));
const HOGS = Number(arg('hogs', '0'));
const DUMP = arg('dump', '');
const DEADLINE_MS = Number(arg('deadline-ms', '240000'));
const STAGGER_MS = 200;
const SECRET = 'converge-bench-secret-0123456789abcdef';
const TOKEN = 'converge-bench-token-0123456789abcdef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Busy-loop processes: the load under which starts of 50 stuck (session 38). */
function startHogs(n: number) {
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
}

async function dump(nodes: readonly CliNode[], dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await Promise.all(
    nodes.map(async (node, i) => {
      const [cluster, members, metrics] = await Promise.all([
        node.getJson('/cluster', 5000),
        node.getJson('/cluster/members', 5000),
        fetch(`http://127.0.0.1:${node.httpPort}/metrics`, { signal: AbortSignal.timeout(5000) })
          .then((r) => r.text())
          .catch(() => ''),
      ]);
      writeFileSync(
        join(dir, `n${i}.json`),
        JSON.stringify({ address: node.address, cluster, members }, null, 1),
      );
      writeFileSync(join(dir, `n${i}.metrics`), metrics);
      writeFileSync(
        join(dir, `n${i}.events`),
        node
          .events()
          .map((e) => JSON.stringify(e))
          .join('\n'),
      );
    }),
  );
}

async function main() {
  const hogs = startHogs(HOGS);
  const nodes: CliNode[] = [];
  try {
    const ports = await freePorts(2 * N);
    const seeds = ports
      .slice(0, 3)
      .map((p) => `127.0.0.1:${p}`)
      .join(',');
    const started = Date.now();
    for (let i = 0; i < N; i++) {
      nodes.push(
        spawnCliNode(
          {
            cluster: 'converge-bench',
            host: '127.0.0.1',
            port: ports[i]!,
            httpPort: ports[N + i]!,
            args: ['--seeds', seeds, '--name', `n${i}`, '--partitions', '0', '--downing', 'manual'],
          },
          { DOYEN_SECRET: SECRET, DOYEN_HTTP_TOKEN: TOKEN },
        ),
      );
      if (i < N - 1) await sleep(STAGGER_MS);
    }
    const deadline = started + DEADLINE_MS;
    let at = allUpAt(nodes, N);
    while (at === undefined && Date.now() < deadline) {
      await sleep(500);
      at = allUpAt(nodes, N);
    }
    const load = loadavg().map((x) => Math.round(x * 100) / 100);
    if (at === undefined && DUMP) await dump(nodes, DUMP);
    printResult({
      nodes: N,
      hogs: HOGS,
      converged: at !== undefined,
      allUpMs: at === undefined ? null : Math.round(at - started),
      // a node that exited or never joined (a start failure, not a membership one)
      exited: nodes.filter((x) => x.exitStatus() !== undefined).map((x) => x.address),
      neverJoined: nodes
        .filter((x) => !x.events().some((e) => e.event === 'member.up'))
        .map((x) => x.address),
      loadavg: load,
      // every start converges, within the deadline (bench console's wait is 240 s)
      targets: { converged: true, allUpMsBelow: DEADLINE_MS },
    });
  } finally {
    for (const h of hogs) h.kill('SIGKILL');
    await killCliNodes(nodes);
  }
}

await main();
