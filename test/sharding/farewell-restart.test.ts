import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromTransition } from '../../packages/core/src/index.js';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { jsonLogCapture } from '../support/json-log.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

/** 48 partitions over 3 nodes: 16 each. */
const PARTITIONS = 48;

const counter = fromTransition((state: { readonly n: number }) => ({ n: state.n + 1 }), { n: 0 });

/**
 * Issue 29's rolling restart on real doyen nodes: c shuts down (retires, leaves) and comes back as
 * a new incarnation on the same port. The partitions the join table moves back to c are drained on
 * a and b, which hand off once every member of their view marked that table: the departed
 * incarnation, absent until fenced, never does. Its `sharding.farewell` (sent when its region
 * closes, behind all it sent) releases them at once; without it they wait for its fence, the
 * lease plus the pause bound (here 5 s + 2 s, so the two differ by seconds, not by noise).
 * Returns ms from the join table (on a) to every partition of c's share active on c.
 */
async function restartBack(farewell: boolean): Promise<{ ms: number }> {
  const ports = await freePorts(3);
  const config = {
    cluster: 'farewell',
    secret: randomBytes(8).toString('hex'),
    partitions: { count: PARTITIONS },
    hostLease: { leaseMs: 5000, pauseBoundMs: 2000 },
    setup: (node: DoyenNode) => {
      node.sharding!.register('counter', counter);
    },
  };
  const start = async (i: number) => {
    const { lines, logger } = jsonLogCapture('info');
    return { node: await startMemberNode(ports[i]!, ports[0]!, config, { logger }, nodes), lines };
  };
  const a = await start(0);
  const b = await start(1);
  const c1 = await start(2);
  await eventually(
    () =>
      [a.node, b.node, c1.node].every((n) => n.sharding!.shards().activePartitions.length === PARTITIONS / 3),
    { timeoutMs: 30_000, what: '16 partitions active on each node' },
  );
  if (!farewell) {
    // the defence off: c's region closes without telling anyone
    const region = c1.node.sharding!.region;
    const close = region.close.bind(region);
    region.close = () => close([]);
  }
  await c1.node.shutdown();
  const restartedAt = Date.now();
  const c2 = await start(2);
  await eventually(() => c2.node.sharding!.shards().activePartitions.length === PARTITIONS / 3, {
    timeoutMs: 20_000,
    what: "c's share active on its next incarnation",
  });
  const activeAt = Date.now();
  // the first table on a with three owners again: the one that moves c's share back
  const joinTable = a.lines.find(
    (l) =>
      l.event === 'partitions.table' &&
      Number(l.time) >= restartedAt &&
      Object.keys((l.counts as Record<string, number> | undefined) ?? {}).length === 3,
  );
  expect(joinTable, 'the join table logged on a').toBeDefined();
  for (const n of [a.node, b.node]) expect(n.sharding!.shards().activePartitions.length).toBe(PARTITIONS / 3);
  return { ms: activeAt - Number(joinTable!.time) };
}

describe('a restarted node gets its partitions back without waiting for its old incarnation’s fence', () => {
  it('with the farewell: back well within the lease', async () => {
    const { ms } = await restartBack(true);
    console.log(`join table -> c's 16 partitions active on its next incarnation: ${ms} ms`);
    expect(ms).toBeLessThan(4000);
  }, 90_000);

  it('positive control: without it the hand-offs wait for the fence (lease + pause bound)', async () => {
    const { ms } = await restartBack(false);
    console.log(`without the farewell: ${ms} ms`);
    expect(ms).toBeGreaterThan(4000);
  }, 90_000);
});
