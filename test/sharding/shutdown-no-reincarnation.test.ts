import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromTransition } from '../../packages/core/src/index.js';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { jsonLogCapture, type LogLine } from '../support/json-log.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

const PARTITIONS = 30;

const counter = fromTransition((state: { readonly n: number }) => ({ n: state.n + 1 }), { n: 0 });

/**
 * A node in its coordinated shutdown (SIGTERM) that is downed, or whose owner lease is fenced
 * (the voters fence a removed member), used to take the "downed" path: the leaving process
 * restarted as a new incarnation, joined the cluster again, took partitions (tokens created
 * there), and then its shutdown ended the process, so those partitions died as in a kill -9
 * (seen in the sharding bench's rolling restart: asks timing out, recoveries, a rejoin racing the
 * next restart). A node that is shutting down never re-incarnates, and its retire step stops
 * waiting once it is down (it used to wait out the whole phase). Here c's shutdown is held (an
 * app task in the before-leave phase) until a has downed it, so the down surely comes while it is
 * shutting down.
 */
describe('a node downed during its shutdown does not come back as a new incarnation', () => {
  it('c is downed mid-shutdown: no restart, one setup, never a member again', async () => {
    const ports = await freePorts(3);
    const secret = randomBytes(8).toString('hex');
    const logs = new Map<DoyenNode, LogLine[]>();
    const config = {
      cluster: 'no-reincarnation',
      secret,
      partitions: { count: PARTITIONS },
      // the leave of a downed node does not complete: its phase gives up soon
      shutdown: { phaseTimeoutsMs: { 'before-leave': 20_000, leave: 1000 } },
      setup: (node: DoyenNode) => {
        node.sharding!.register('counter', counter);
      },
    };
    const start = async (i: number) => {
      const { lines, logger } = jsonLogCapture('info');
      const node = await startMemberNode(ports[i]!, ports[0]!, config, { logger }, nodes);
      logs.set(node, lines);
      return node;
    };
    const a = await start(0);
    const b = await start(1);
    const c = await start(2);
    await eventually(
      () => [a, b, c].every((n) => n.sharding!.shards().activePartitions.length === PARTITIONS / 3),
      { timeoutMs: 30_000, what: 'partitions active on each node' },
    );
    const cLines = logs.get(c)!;
    const cAddress = `127.0.0.1:${ports[2]}`;
    c.coordinatedShutdown.addTask('before-leave', 'test.downed-while-leaving', async () => {
      a.cluster.down(cAddress);
      await eventually(() => cLines.some((l) => l.event === 'node.status' && l.status === 'down'), {
        timeoutMs: 15_000,
        what: 'c saw itself downed',
      });
    });
    await c.shutdown();
    expect(cLines.some((l) => l.event === 'node.status' && l.status === 'down')).toBe(true);
    expect(cLines.filter((l) => l.event === 'node.restart')).toEqual([]);
    expect(cLines.some((l) => l.event === 'node.restart-skipped')).toBe(true);
    expect(cLines.filter((l) => l.event === 'node.setup')).toHaveLength(1);
    // the retire step stopped waiting once c was down (nothing could be handed off any more)
    expect(cLines.find((l) => l.event === 'partitions.retire-incomplete')?.reason).toBe('ended');
    // a and b hold every partition; c's address is no member of theirs
    await eventually(
      () =>
        a.sharding!.shards().activePartitions.length + b.sharding!.shards().activePartitions.length ===
        PARTITIONS,
      { timeoutMs: 20_000, what: 'every partition on a and b' },
    );
    for (const n of [a, b])
      expect(n.cluster.state().membership?.members.filter((m) => m.address === cAddress) ?? []).toEqual([]);
  }, 90_000);
});
