import { describe, expect, it } from 'vitest';
import type { ActorRef, Message } from '../../packages/core/src/index.js';
import { ClusterSingletons, managerPath, proxyPath } from '../../packages/singleton/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { clusterNodesClosedAfterEach } from '../support/cluster-nodes-closed.js';
import { type Notes, notebook } from '../support/sim-singletons.js';
import { eventually } from '../support/wait.js';

/**
 * A lying member (C) tries to take a singleton away from its host (A) and to divert B's proxy,
 * while B keeps sending through its proxy. Nothing legitimate may be lost: every note B sent
 * arrives once, in order, at the one instance, which stays on A.
 */
describe('forged singleton messages from an authenticated member', () => {
  const nodes = clusterNodesClosedAfterEach();

  it('cannot take the instance or divert a proxy; every message through the proxy arrives once, in order', async () => {
    const [pa, pb, pc] = await freePorts(3);
    const seeds = [{ host: '127.0.0.1', port: pa! }];
    const a = await startClusterNode(pa!, seeds);
    await a.cluster.whenUp();
    const b = await startClusterNode(pb!, seeds);
    await b.cluster.whenUp();
    const c = await startClusterNode(pc!, seeds);
    await c.cluster.whenUp();
    nodes.push(a, b, c);
    const proxies = new Map<ClusterNode, ActorRef>();
    for (const [n, name] of [
      [a, 'a'],
      [b, 'b'],
      [c, 'c'],
    ] as const) {
      n.transport.system.messageTypes.register(['test.note', 'test.get', 'test.notes']);
      const singletons = new ClusterSingletons(n.transport.system, n.cluster);
      proxies.set(n, singletons.register('notebook', notebook(name)));
    }
    const ask = (n: ClusterNode) =>
      proxies.get(n)!.ask<Notes>((replyTo) => ({ type: 'test.get', replyTo }) as Message, { timeout: 3000 });
    await eventually(async () => (await ask(b).catch(() => undefined))?.node === 'a', {
      what: 'the notebook running on A and reachable from B',
    });

    const sys = (n: ClusterNode) => n.transport.system;
    const forged = (n: ClusterNode) => sys(n).metrics.value('doyen_wire_forged_total');
    const received = (n: ClusterNode) =>
      sys(n).metrics.value('doyen_wire_messages_received_total', { lane: 'system' });
    const aManager = sys(c).remoteRef(sys(a).node, managerPath('notebook'));
    const bProxy = sys(c).remoteRef(sys(b).node, proxyPath('notebook'));
    const cManager = sys(c).remoteRef(sys(c).node, managerPath('notebook'));
    const cInbox = sys(c).remoteRef(sys(c).node, '/user/singleton-notebook');
    const aReceivedBefore = received(a);
    const bReceivedBefore = received(b);

    let seq = 0;
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5; i++)
        proxies.get(b)!.send({ type: 'test.note', from: 'b', seq: ++seq } as Message);
      // in its own name: C is not the node A takes for the new oldest, nor B's oldest
      aManager.send({ type: 'singleton.hand-over-to-me', name: 'notebook', replyTo: cManager } as Message);
      // a hand-over "started", then C's inbox offered as the instance's: a proxy that believed
      // both would send B's notes to C
      bProxy.send({ type: 'singleton.hand-over-started', name: 'notebook', inbox: cInbox } as Message);
      bProxy.send({ type: 'singleton.identity', name: 'notebook', inbox: cInbox } as Message);
      // in another's name: dropped at the boundary
      aManager.send({
        type: 'singleton.hand-over-to-me',
        name: 'notebook',
        replyTo: sys(c).remoteRef(sys(b).node, managerPath('notebook')),
      } as Message);
      await new Promise((r) => setTimeout(r, 10));
    }
    // positive controls: C's own-name messages reached A's manager and B's proxy (refused there
    // by the protocol), the other-name ones were counted as forged
    await eventually(() => received(a) >= aReceivedBefore + 20 && received(b) >= bReceivedBefore + 40, {
      what: "C's messages received by A and B",
    });
    await eventually(() => forged(a) >= 20, { what: 'the forged hand-over requests counted' });

    const notes = await eventually(
      async () => {
        const r = await ask(b).catch(() => undefined);
        return r && r.notes.filter((n) => n.startsWith('b:')).length === seq && r;
      },
      { what: "all of B's notes at the instance" },
    );
    expect(notes.node).toBe('a');
    expect(notes.notes).toEqual(Array.from({ length: seq }, (_, i) => `b:${i + 1}`));
    expect(sys(a).lookup('/user/singleton-notebook-instance')).toBeDefined();
    expect(sys(c).lookup('/user/singleton-notebook-instance')).toBeUndefined();
    expect(a.cluster.state().membership!.members).toHaveLength(3);
  });
});
