/**
 * Idle cost of a five-node cluster in one process (real WebSocket transport on 127.0.0.1):
 * forms the cluster, lets it settle, then reads process.cpuUsage over 10 s of idleness.
 * Prints one JSON line: CPU % of one core for the process and per node.
 * Run: node --import tsx --conditions=@doyen/source test/cluster/idle-cost.measure.ts
 */
import { freePorts, startClusterNode } from '../support/cluster-nodes.js';

const N = Number(process.env.NODES ?? 5);
const IDLE_MS = Number(process.env.IDLE_MS ?? 10_000);

const ports = await freePorts(N);
const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
const nodes = [];
let unreachable = 0;
for (const port of ports) {
  const node = await startClusterNode(port, seeds, { downing: 'keep-majority' });
  if (nodes.length === 0)
    node.cluster.subscribe((e) => void (e.type === 'member.unreachable' && unreachable++));
  nodes.push(node);
  // the first two one after the other, then the rest at once (a join wave)
  if (nodes.length <= 2) await new Promise((r) => setTimeout(r, 300));
}
const deadline = Date.now() + 30_000;
while (
  !nodes.every((n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === N)
) {
  if (Date.now() > deadline) throw new Error('cluster did not form');
  await new Promise((r) => setTimeout(r, 100));
}
await new Promise((r) => setTimeout(r, 3000));
const before = process.cpuUsage();
const t0 = process.hrtime.bigint();
await new Promise((r) => setTimeout(r, IDLE_MS));
const used = process.cpuUsage(before);
const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
const cpu = ((used.user + used.system) / wallUs) * 100;
console.log(
  JSON.stringify({
    nodes: N,
    idleMs: IDLE_MS,
    cpuPercentOfOneCore: +cpu.toFixed(2),
    perNode: +(cpu / N).toFixed(2),
    unreachableSeenByCoordinator: unreachable,
  }),
);
for (const n of nodes) {
  n.cluster.stop();
  await n.transport.close(0);
}
process.exit(0);
