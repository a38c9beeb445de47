import { afterEach, describe, expect, it } from 'vitest';
import { type Membership, memberKey, type Update } from '../../packages/cluster/src/index.js';
import type { ActorRef, Message } from '../../packages/core/src/index.js';
import { type ClusterNode, startUpCluster } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * An authenticated peer that lies: a real member (C) of a three-node cluster sends membership
 * messages that speak for others or that only the coordinator may send. Each attack is paired
 * with the honest message it imitates (the positive control), so the drop is the identity check
 * and not a broken message.
 */
describe('forged membership messages from an authenticated member', () => {
  let nodes: ClusterNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((n) => n.transport.close(0)));
    nodes = [];
  });

  async function threeNodes() {
    const [a, b, c] = await startUpCluster([{}, {}, {}], nodes);
    return { a: a!, b: b!, c: c! };
  }

  const membershipRef = (from: ClusterNode, to: ClusterNode): ActorRef =>
    from.transport.system.remoteRef(to.transport.system.node, '/system/membership');
  const forged = (n: ClusterNode) => n.transport.system.metrics.value('doyen_wire_forged_total');
  const received = (n: ClusterNode) =>
    n.transport.system.metrics.value('doyen_wire_messages_received_total', { lane: 'system' });
  const version = (n: ClusterNode) => n.cluster.state().membership!.version;

  it('a member cannot speak for another: forged down requests and downed-notices are dropped and counted', async () => {
    const { a, b, c } = await threeNodes();
    const bKey = b.cluster.self.key;
    const aKey = a.cluster.self.key;
    // C asks the coordinator to down B in A's name, and tells B that A downed it
    membershipRef(c, a).send({ type: 'membership.down', member: bKey, by: aKey } as Message);
    membershipRef(c, b).send({ type: 'membership.downed-notice', by: aKey } as Message);
    await eventually(() => forged(a) >= 1 && forged(b) >= 1, { what: 'both forgeries counted' });
    await new Promise((r) => setTimeout(r, 300));
    expect(b.cluster.state().status).toBe('up');
    expect(a.cluster.state().membership!.members.map(memberKey)).toContain(bKey);
    // positive control: the same down request in C's own name passes the boundary and is acted on
    // (a member may ask the coordinator to down another, as Akka's Down; the management token
    // guards who may ask at the edge)
    const before = received(a);
    membershipRef(c, a).send({ type: 'membership.down', member: bKey, by: c.cluster.self.key } as Message);
    await eventually(() => received(a) > before, { what: 'the honest request received' });
    await eventually(() => !a.cluster.state().membership!.members.some((m) => memberKey(m) === bKey), {
      what: 'B downed on the honest request',
    });
  });

  it("a downed-notice in the sender's own name is believed: a down is final, whoever took it", async () => {
    const { b, c } = await threeNodes();
    // C is not B's coordinator; its word alone takes B out, as C asking the coordinator would
    membershipRef(c, b).send({ type: 'membership.downed-notice', by: c.cluster.self.key } as Message);
    await eventually(() => b.cluster.state().status === 'down', { what: 'B took itself out' });
    expect(forged(b)).toBe(0);
  });

  it('a member that is not the coordinator cannot rewrite the membership', async () => {
    const { a, b, c } = await threeNodes();
    const m = b.cluster.state().membership!;
    // C makes itself the oldest and drops A (B stays in it: an update leaving B out would be C's
    // word that it downed B, which B believes, as it would if C asked A to down it)
    const coordinatorOnly: Membership = {
      ...m,
      version: m.version + 100,
      members: m.members
        .filter((x) => memberKey(x) !== a.cluster.self.key)
        .map((x) => (memberKey(x) === c.cluster.self.key ? { ...x, age: 0 } : x)),
    };
    // in C's own name (its replyTo is its own membership actor): passes the boundary, the
    // protocol refuses it because B takes A, not C, for its coordinator
    const update: Update = {
      type: 'membership.update',
      membership: coordinatorOnly,
      replyTo: membershipRef(c, c),
    };
    const before = received(b);
    membershipRef(c, b).send(update as unknown as Message);
    await eventually(() => received(b) > before, { what: 'the update received by B' });
    await new Promise((r) => setTimeout(r, 300));
    expect(version(b)).toBe(m.version);
    expect(b.cluster.state().membership!.members).toHaveLength(3);
    expect(b.cluster.state().coordinator?.address).toBe(a.cluster.self.address);
    // the same update claiming to come from A's membership actor: forged at the boundary
    const claimingA: Update = { ...update, replyTo: membershipRef(c, a) };
    membershipRef(c, b).send(claimingA as unknown as Message);
    await eventually(() => forged(b) >= 1, { what: 'the forgery counted' });
    expect(version(b)).toBe(m.version);
    // positive control: an update from the coordinator itself is adopted
    const fromA: Update = {
      type: 'membership.update',
      membership: { ...m, version: m.version + 1 },
      replyTo: membershipRef(a, a),
    };
    membershipRef(a, b).send(fromA as unknown as Message);
    await eventually(() => version(b) === m.version + 1, { what: "B adopts the coordinator's update" });
  });

  it('a join is admitted only from the joining node itself', async () => {
    const { a, b, c } = await threeNodes();
    const fake = { host: '127.0.0.9', port: 2552, uid: 'f0f0f0f0' };
    // C joins a node that does not exist, speaking for it
    membershipRef(c, a).send({
      type: 'membership.join',
      node: fake,
      name: 'fake',
      roles: [],
      replyTo: c.transport.system.remoteRef(fake, '/system/membership'),
    } as Message);
    await eventually(() => forged(a) >= 1, { what: 'the forged join counted' });
    await new Promise((r) => setTimeout(r, 300));
    expect(a.cluster.state().membership!.members.map((x) => x.address)).not.toContain('127.0.0.9:2552');
    expect(b.cluster.state().membership!.members).toHaveLength(3);
  });
});
