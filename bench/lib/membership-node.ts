// Child process for the membership bench: one doyen node (startNode) on 127.0.0.1 that reports over IPC when
// it is up and every cluster event it publishes, with wall-clock timestamps (see membership-messages.ts).
//   --port P             port to bind (the first seed's own port lets it form the cluster)
//   --seeds H:P,H:P      seed addresses
//   --downing MODE       cluster downing mode (the cluster's default when absent)
//   --stall B/E/F        once up, block the event loop for B ms every E ms, for F ms (e.g. 100/500/30000);
//                        the parent can also start a stall over IPC ({ cmd: 'stall', ... })
// It exits on SIGTERM (closing the node, not leaving) and when the IPC channel closes (the parent went away).
import { parseArgs } from 'node:util';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import {
  MEMBERSHIP_CLUSTER,
  MEMBERSHIP_SECRET,
  type NodeCommand,
  type NodeReport,
} from './membership-messages.js';
import { nodeProcessChild } from './node-process-child.js';
import { eventReport, membershipFigures } from './node-reports.js';

const { report, fail, reportUp, exit, orphaned, closeWith } = nodeProcessChild<NodeReport>('membership-node');
let node: DoyenNode | undefined;
closeWith(() => node?.close() ?? Promise.resolve());

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    seeds: { type: 'string' },
    stall: { type: 'string' },
    downing: { type: 'string' },
  },
  strict: true,
});
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0 || !values.seeds) {
  console.error(
    'usage: membership-node --port P --seeds H:P[,H:P] [--downing MODE] [--stall BUSY/EVERY/FOR]',
  );
  process.exit(2);
}
const { parseNodeAddress } = await import('../../packages/core/src/index.js');
const { startNode } = await import('../../packages/doyen/src/index.js');
const seeds = values.seeds.split(',').map((s) => parseNodeAddress(s.trim()));
if (!process.connected) orphaned();

try {
  node = await startNode(
    {
      cluster: MEMBERSHIP_CLUSTER,
      host: '127.0.0.1',
      port,
      seeds,
      secret: MEMBERSHIP_SECRET,
      logLevel: 'warn',
      ...(values.downing ? { clusterOptions: { downing: values.downing as never } } : {}),
    },
    { waitUntilUp: false },
  );
} catch (error) {
  fail(error);
}

if (node) {
  const doyen = node;
  // Subscribe before waiting, so the events of the join itself are reported too.
  doyen.cluster.subscribe((event) => report(eventReport(event)));
  await reportUp(doyen.cluster);

  process.on('message', (command: NodeCommand) => {
    switch (command.cmd) {
      case 'state': {
        const s = doyen.cluster.state();
        report({
          kind: 'state',
          id: command.id,
          ...membershipFigures(s),
          coordinator: s.coordinator?.address,
        });
        return;
      }
      case 'stall':
        stall(command.busyMs, command.everyMs, command.forMs);
        return;
    }
  });

  if (values.stall) {
    const [busyMs, everyMs, forMs] = values.stall.split('/').map(Number);
    if (!(busyMs! > 0 && everyMs! > 0 && forMs! > 0)) {
      console.error(`--stall needs BUSY/EVERY/FOR in ms, got ${values.stall}`);
      exit(2);
    } else {
      stall(busyMs!, everyMs!, forMs!);
    }
  }
}

/** Blocks this process's event loop for `busyMs` every `everyMs`, for `forMs`, then reports. */
function stall(busyMs: number, everyMs: number, forMs: number): void {
  const until = Date.now() + forMs;
  let stalls = 0;
  let lastTick = performance.now();
  let maxTimerGapMs = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    maxTimerGapMs = Math.max(maxTimerGapMs, now - lastTick);
    lastTick = now;
  }, 10);
  const busy = setInterval(() => {
    if (Date.now() >= until) {
      clearInterval(busy);
      clearInterval(probe);
      report({ kind: 'stall-done', stalls, maxTimerGapMs });
      return;
    }
    stalls++;
    const end = Date.now() + busyMs;
    while (Date.now() < end) {
      // busy: nothing else runs on this event loop meanwhile
    }
  }, everyMs);
}
