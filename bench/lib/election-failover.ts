// Singleton failover by coordinator mode, with real nodes: five `startNode` nodes in this process on 127.0.0.1
// (defaults: keep-majority, the partition allocator over 271 partitions), `coordinator` emergent or quorum.
// The node that runs the allocator is closed at once (a crash: no leave, no hand-over); the figure is the wall
// time from the close to the allocator running on another node (polled every 2 ms).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../packages/core/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from './free-ports.js';
import { waitFor } from './timeout.js';

const SIZE = 5;
const TIMEOUT_MS = 30_000;

const runsAllocator = (n: DoyenNode) => n.singletons.list().some((s) => s.runsHere);

export async function singletonFailoverMs(coordinator: 'emergent' | 'quorum', run: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'doyen-bench-votes-'));
  const ports = await freePorts(SIZE);
  const nodes: DoyenNode[] = [];
  try {
    for (const [i, port] of ports.entries()) {
      nodes.push(
        await startNode(
          {
            cluster: `bench-election-${coordinator}-${run}`,
            host: '127.0.0.1',
            port,
            seeds: [{ host: '127.0.0.1', port: ports[0]! }],
            secret: 'bench-election',
            coordinator,
            ...(coordinator === 'quorum' ? { election: { voteFile: join(dir, `${i}.json`) } } : {}),
          },
          { logger: silentLogger() },
        ),
      );
    }
    await waitFor(
      () =>
        nodes.every(
          (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === SIZE,
        ) && nodes.filter(runsAllocator).length === 1,
      TIMEOUT_MS,
      `${coordinator}: five up, one allocator`,
      5,
    );
    // let the first allocation and heartbeat history settle
    await new Promise((r) => setTimeout(r, 1_500));
    const host = nodes.find(runsAllocator)!;
    const t0 = performance.now();
    await host.close();
    const rest = nodes.filter((n) => n !== host);
    await waitFor(() => rest.some(runsAllocator), TIMEOUT_MS, `${coordinator}: allocator elsewhere`, 2);
    return performance.now() - t0;
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}
