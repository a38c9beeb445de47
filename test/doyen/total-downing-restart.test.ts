import { describe, expect, it } from 'vitest';
import type { DoyenNode, NodeConfig } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { manualMembers } from '../support/manual-members.js';
import { eventually } from '../support/wait.js';

/**
 * Every member of three real nodes downed at once (the chaos runner's total downing, session 37):
 * each restarts in place as a new incarnation that may not form on silence. The node keeps the
 * operator's seeds as its forming seeds and the members it knew as its last membership, so the
 * first seed forms again once the other two ask it to join (with itself, three of three: a
 * majority of the members it knew), and they join it. The positive control gives the nodes no forming seeds (the restart
 * as it was): all three give up joining.
 */

const nodes = nodesClosedAfterEach();

async function threeDownedAtOnce(extra: Partial<NodeConfig>): Promise<DoyenNode[]> {
  const ports = await freePorts(3);
  const seeds = ports.map((port) => ({ host: '127.0.0.1', port: port! }));
  const three: DoyenNode[] = [];
  for (const port of ports) {
    const config = { ...manualMembers('total-downing'), ...extra, seeds };
    three.push(await startMemberNode(port!, ports[0]!, config, {}, nodes));
  }
  const [first] = three;
  await eventually(() => three.every((n) => n.cluster.state().membership?.members.length === 3), {
    timeoutMs: 15_000,
    what: 'three members up',
  });
  // the first seed (the coordinator) downs the two others, then itself, in one turn
  for (const n of [...three.slice(1), first!]) first!.cluster.down(n.system.nodeName);
  await eventually(() => three.every((n) => n.incarnations === 2), {
    timeoutMs: 15_000,
    what: 'all three restarted in place',
  });
  return three;
}

const upNames = (n: DoyenNode) =>
  (n.cluster.state().membership?.members ?? [])
    .filter((m) => m.status === 'up')
    .map((m) => m.address)
    .sort();

describe('a total downing of real nodes', () => {
  it('all three restart in place and form one cluster again, the first seed its coordinator', async () => {
    const three = await threeDownedAtOnce({});
    await eventually(() => three.every((n) => n.cluster.state().status === 'up' && upNames(n).length === 3), {
      timeoutMs: 30_000,
      what: 'one cluster of the three new incarnations',
    });
    const first = three[0]!.system.nodeName;
    for (const n of three) expect(n.cluster.state().coordinator?.address).toBe(first);
  }, 60_000);

  it('positive control: with no forming seeds (the old restart) nobody may form and all three give up', async () => {
    const three = await threeDownedAtOnce({
      clusterOptions: { downing: 'manual', formingSeeds: [], maxJoinAttempts: 3 },
    });
    await eventually(() => three.every((n) => n.cluster.state().status === 'join-failed'), {
      timeoutMs: 30_000,
      what: 'all three join-failed',
    });
  }, 60_000);
});
