// Child process for the singleton bench: one doyen node (startNode, defaults: the partition-allocator singleton
// over 271 partitions) on 127.0.0.1 that reports over IPC when it is up, the singleton / allocator log lines it
// writes and a few cluster events, each with a wall-clock timestamp (see singleton-messages.ts).
//   --port P             port to bind (the first seed's own port lets it form the cluster)
//   --seeds H:P,H:P      seed addresses
// It exits on SIGTERM (closing the node, not leaving), after a graceful leave asked over IPC ({ cmd: 'leave' }),
// and when the IPC channel closes (the parent went away).
import { parseArgs } from 'node:util';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { logLineSink } from './log-lines.js';
import { nodeProcessChild } from './node-process-child.js';
import { eventReport, membershipFigures } from './node-reports.js';
import {
  FORWARDED_CLUSTER_EVENTS,
  FORWARDED_LOG_EVENTS,
  type NodeCommand,
  type NodeReport,
  SINGLETON_CLUSTER,
  SINGLETON_SECRET,
  wallMs,
} from './singleton-messages.js';

const { report, fail, reportUp, beginExit, orphaned, closeWith } =
  nodeProcessChild<NodeReport>('singleton-node');
let node: DoyenNode | undefined;
closeWith(() => node?.close() ?? Promise.resolve());

const { values } = parseArgs({
  options: { port: { type: 'string' }, seeds: { type: 'string' } },
  strict: true,
});
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0 || !values.seeds) {
  console.error('usage: singleton-node --port P --seeds H:P[,H:P]');
  process.exit(2);
}
const { createLogger, parseNodeAddress } = await import('../../packages/core/src/index.js');
const { startNode } = await import('../../packages/doyen/src/index.js');
const seeds = values.seeds.split(',').map((s) => parseNodeAddress(s.trim()));
if (!process.connected) orphaned();

// The node logs at info (singleton.started is an info line) into this stream: the lines the bench needs go
// over IPC with the time they were written; everything else is dropped.
const destination = logLineSink(
  wallMs,
  (entry, t, line) => {
    const event = entry.event ?? 'other';
    const level = entry.level ?? 30;
    if (!FORWARDED_LOG_EVENTS.has(event) && level < 40) return;
    report({
      kind: 'log',
      event,
      level,
      singleton: entry.singleton as string | undefined,
      moved: entry.moved as number | undefined,
      reason: entry.reason as string | undefined,
      version: entry.version as number | undefined,
      t,
    });
    if (level >= 50) process.stderr.write(`${line}\n`);
  },
  (line) => process.stderr.write(`${line}\n`),
);

try {
  node = await startNode(
    {
      cluster: SINGLETON_CLUSTER,
      host: '127.0.0.1',
      port,
      seeds,
      secret: SINGLETON_SECRET,
    },
    { logger: createLogger({ level: 'info', destination }), waitUntilUp: false },
  );
} catch (error) {
  fail(error);
}

if (node) {
  const doyen = node;
  // A downed node restarts in this process as a new incarnation with a new Cluster: follow it, so the events
  // of every incarnation are reported (the first events of a new one may come up to 20 ms late: its join).
  let followed: typeof doyen.cluster | undefined;
  const follow = () => {
    if (followed === doyen.cluster) return;
    followed = doyen.cluster;
    followed.subscribe((event) => {
      if (FORWARDED_CLUSTER_EVENTS.has(event.type)) report(eventReport(event));
    });
  };
  follow();
  setInterval(follow, 20).unref();
  await reportUp(doyen.cluster);

  process.on('message', (command: NodeCommand) => {
    if (command.cmd === 'leave') {
      if (beginExit(20_000)) void doyen.shutdown().finally(() => process.exit(0));
      return;
    }
    const s = doyen.cluster.state();
    const table = doyen.partitions?.table();
    report({
      kind: 'state',
      id: command.id,
      address: doyen.cluster.self.address,
      uid: doyen.cluster.self.uid,
      ...membershipFigures(s),
      running: doyen.singletons
        .list()
        .filter((x) => x.runsHere)
        .map((x) => x.name),
      tableVersion: table?.version ?? 0,
      owners: table ? [...table.owners] : [],
    });
  });
}
