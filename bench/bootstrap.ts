// `pnpm bench bootstrap`: time from the last start to one cluster, for 5 and 15 compiled CLI
// nodes on this machine (each on its own loopback address 127.0.1.i, as pods have their own IPs),
// found through the A records of a real DNS server (Debian's dnsmasq on 127.0.0.1), beside the
// same nodes given a static seed list. DNS runs twice: with the defaults (Akka's: contact points
// stable for 5 s, probed every 1 s) and tuned (stable for 1 s, probed every 250 ms): the stable
// margin is a floor only the forming node pays; the others join as soon as it answers.
// BOOTSTRAP_SIZES=5,15 and BOOTSTRAP_RUNS=3 (medians) change the defaults.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../packages/testkit/src/index.js';
import { dnsmasqArgs, dnsmasqMissing, waitUntilDnsAnswers } from '../test/support/dnsmasq.js';
import { allUp, type CliNode, killCliNodes, spawnCliNode } from './lib/cli-nodes.js';
import { installSignalCleanup, liveProcesses, OwnedProcess } from './lib/node-processes.js';
import { median, printResult } from './lib/stats.js';
import { waitFor } from './lib/timeout.js';

const SECRET = 'bootstrap-bench-secret-0123456789abcdef';
const SERVICE = 'doyen.bench.test';
const STAGGER_MS = 100;

type Mode = 'static' | 'dns' | 'dns-tuned';

async function startDns(hostsDir: string): Promise<{ server: string; process: OwnedProcess }> {
  const [port] = await freePorts(1);
  const dns = OwnedProcess.spawn({
    command: 'dnsmasq',
    args: dnsmasqArgs({ listen: '127.0.0.1', port: port!, hostsDir }),
    keepLogs: false,
  });
  const server = `127.0.0.1:${port}`;
  await waitUntilDnsAnswers(server);
  return { server, process: dns };
}

/** One run: N nodes started 100 ms apart; ms from the last start until every one sees N up. */
async function run(mode: Mode, n: number, dnsServer: string, hostsDir: string, run: number): Promise<number> {
  const [port, httpPort] = await freePorts(2);
  // a fresh /24 per run, so no run meets an earlier run's sockets
  const subnet = `127.${1 + (run % 200)}.${n}`;
  const hosts = Array.from({ length: n }, (_, i) => `${subnet}.${i + 1}`);
  writeFileSync(join(hostsDir, 'service'), `${hosts.map((h) => `${h} ${SERVICE}`).join('\n')}\n`, {
    mode: 0o644,
  });
  const discovery =
    mode === 'static'
      ? [
          '--seeds',
          hosts
            .slice(0, 3)
            .map((h) => `${h}:${port}`)
            .join(','),
        ]
      : [
          '--discovery',
          'dns',
          '--service',
          SERVICE,
          '--dns-server',
          dnsServer,
          ...(mode === 'dns-tuned' ? ['--stable-margin-ms', '1000', '--discovery-interval-ms', '250'] : []),
        ];
  const nodes: CliNode[] = [];
  for (const host of hosts) {
    nodes.push(
      spawnCliNode(
        {
          cluster: 'boot',
          host,
          port: port!,
          httpPort: httpPort!,
          args: [...discovery, '--partitions', '0'],
        },
        { DOYEN_SECRET: SECRET },
      ),
    );
    if (nodes.length < n) await new Promise((r) => setTimeout(r, STAGGER_MS));
  }
  const lastStart = performance.now();
  const upAt = await waitFor(() => allUp(nodes, n), 120_000, `${n} nodes (${mode}) in one cluster`, 50);
  const formed = nodes.filter((x) => x.events().some((e) => e.event === 'bootstrap.form')).length;
  await killCliNodes(nodes);
  if (mode !== 'static' && formed !== 1)
    throw new Error(`${formed} nodes formed a cluster (${mode}, N=${n})`);
  return Math.round(upAt - lastStart);
}

installSignalCleanup();
const missing = dnsmasqMissing();
if (missing.length > 0) {
  process.stderr.write(`bench bootstrap needs ${missing.join(', ')}\n`);
  process.exit(2);
}
const sizes = (process.env.BOOTSTRAP_SIZES ?? '5,15').split(',').map(Number);
const runs = Number(process.env.BOOTSTRAP_RUNS ?? 3);
const hostsDir = mkdtempSync(join(tmpdir(), 'doyen-bench-dns-'));
chmodSync(hostsDir, 0o755);
writeFileSync(join(hostsDir, 'service'), '\n', { mode: 0o644 });
const dns = await startDns(hostsDir);
const result: Record<string, unknown> = { bench: 'bootstrap' };
let k = 0;
try {
  for (const n of sizes) {
    const figures: Record<Mode, number[]> = { static: [], dns: [], 'dns-tuned': [] };
    for (let r = 0; r < runs; r++) {
      for (const mode of ['static', 'dns', 'dns-tuned'] as const) {
        const ms = await run(mode, n, dns.server, hostsDir, k++);
        figures[mode].push(ms);
        process.stderr.write(`N=${n} ${mode} run ${r + 1}: ${ms} ms\n`);
      }
    }
    const m = (mode: Mode) => median(figures[mode]);
    Object.assign(result, {
      [`staticSeedsMs@${n}`]: m('static'),
      [`dnsMs@${n}`]: m('dns'),
      [`dnsVsStatic@${n}`]: +(m('dns') / m('static')).toFixed(2),
      [`dnsTunedMs@${n}`]: m('dns-tuned'),
      [`dnsTunedVsStatic@${n}`]: +(m('dns-tuned') / m('static')).toFixed(2),
    });
  }
} finally {
  dns.process.kill9();
  await dns.process.exited;
  rmSync(hostsDir, { recursive: true, force: true });
}
result.runs = runs;
result.leftRunning = liveProcesses();
printResult(result);
