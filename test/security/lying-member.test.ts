import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import type { Message } from '../../packages/core/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * Issue 25, item 4: a real, authenticated member reports others unreachable while everyone else
 * hears them fine. It speaks for itself (the report names it as observer, which the wire allows),
 * over its own connection, to every member, the coordinator included and about the coordinator.
 * Before, the coordinator counted itself unreachable, nobody decided and joiners stayed joining.
 * Now the resolver takes it as the indirectly connected case within stable-after: the liar goes,
 * the members it named stay, and a node joining meanwhile becomes up.
 */
describe('a lying member over real sockets', () => {
  let nodes: ClusterNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((n) => n.transport.close(0)));
    nodes = [];
  });

  const STABLE_AFTER = 3000;
  const config: Partial<ClusterConfig> = {
    sbr: { stableAfterMs: STABLE_AFTER, downIfAlone: true, acquireLeaseDelayForMinorityMs: 0 },
  };
  const up = (n: ClusterNode, count: number) =>
    n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === count;

  it('the rogue is downed within stable-after; the coordinator and the member it named stay; a joiner becomes up meanwhile', async () => {
    const [pa, pb, pc, pd, pe] = await freePorts(5);
    const seeds = [{ host: '127.0.0.1', port: pa! }];
    const a = await startClusterNode(pa!, seeds, config);
    await a.cluster.whenUp();
    const b = await startClusterNode(pb!, seeds, config);
    const c = await startClusterNode(pc!, seeds, config);
    const rogue = await startClusterNode(pd!, seeds, config);
    nodes = [a, b, c, rogue];
    await Promise.all(nodes.map((n) => n.cluster.whenUp()));
    await eventually(() => nodes.every((n) => up(n, 4)), { what: 'four up members everywhere' });

    const rogueKey = rogue.cluster.self.key;
    const [aKey, bKey] = [a.cluster.self.key, b.cluster.self.key];
    const report = {
      type: 'membership.reachability',
      observer: rogueKey,
      changes: [
        { subject: aKey, reachable: false },
        { subject: bKey, reachable: false },
      ],
    } as Message;
    const liedAt = Date.now();
    for (const to of [a, b, c]) {
      rogue.transport.system.remoteRef(to.transport.system.node, '/system/membership').send(report);
    }
    // positive control: the forged-but-self-signed reports pass the wire and stand in every view
    await eventually(
      () =>
        [a, b, c].every(
          (n) =>
            n.cluster.unreachableObservers()[aKey]?.includes(rogueKey) &&
            n.cluster.unreachableObservers()[bKey]?.includes(rogueKey),
        ),
      { what: 'the lie in every view' },
    );
    expect(a.transport.system.metrics.value('doyen_wire_forged_total')).toBe(0);

    // a node joins while the lie stands, and becomes up before the resolver has spoken
    const e = await startClusterNode(pe!, seeds, config);
    nodes.push(e);
    await e.cluster.whenUp();
    await eventually(() => up(a, 5), { what: 'the joiner up', timeoutMs: STABLE_AFTER });
    const upAt = Date.now();
    expect(rogue.cluster.state().status).toBe('up');
    expect(a.cluster.unreachableObservers()[bKey]).toEqual([rogueKey]);

    await eventually(() => rogue.cluster.state().status === 'down', {
      what: 'the rogue downed',
      timeoutMs: STABLE_AFTER + 3000,
    });
    // stable-after from the last change (the joiner's up restarts it, as in Akka), plus slack
    expect(Date.now() - Math.max(liedAt, upAt)).toBeLessThan(STABLE_AFTER + 2000);
    expect(
      a.transport.system.metrics.value('doyen_sbr_decisions_total', {
        decision: 'down-indirectly-connected',
        by: 'decider',
      }),
    ).toBe(1);
    const honest = [a, b, c, e];
    await eventually(
      () =>
        honest.every(
          (n) =>
            n.cluster.state().status === 'up' &&
            up(n, 4) &&
            Object.keys(n.cluster.unreachableObservers()).length === 0,
        ),
      { what: 'the four honest members up, nobody unreachable' },
    );
    expect(a.cluster.state().isCoordinator).toBe(true);
  });
});
