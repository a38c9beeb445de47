import { afterEach, describe, expect, it } from 'vitest';
import { downMembers, memberKey } from '../../packages/cluster/src/index.js';
import type { Message } from '../../packages/core/src/index.js';
import {
  BatchEncoder,
  batchFrameOf,
  CloseCode,
  HandshakeKind,
  NodeIdentity,
  type WireConfig,
} from '../../packages/wire/src/index.js';
import { type ClusterNode, freePorts, startUpCluster } from '../support/cluster-nodes.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake, type RawPeerWithChallenge, startFakeAcceptor } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

/**
 * The cluster secret is shared: any holder can compute any node's proof, and on one host (or
 * behind one node IP, or under host names) the source-address check binds nothing. Each node
 * incarnation therefore signs its handshakes with its own Ed25519 key, the coordinator admits
 * that key with the member, and a connection that claims a member must sign with the member's
 * key. Every attack below runs from 127.0.0.1, the members' own IP, with the secret; each has a
 * positive control where it does reach its target (keys not checked, or the real key used).
 */
describe('a member identity needs its private key, not the shared secret', () => {
  let nodes: ClusterNode[] = [];
  let single: TestNode | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
    await Promise.all(nodes.map((n) => n.transport.close(0)));
    await single?.transport.close(0);
    nodes = [];
    single = undefined;
  });

  const cluster = (wires: Partial<WireConfig>[]) => startUpCluster(wires, nodes);

  /** A raw peer from 127.0.0.1 that completes a hello claiming `claim`, signed with `identity`. */
  async function claimTowards(
    target: ClusterNode | TestNode,
    claim: { host: string; port: number; uid: string },
    identity: NodeIdentity,
    cluster = 'it',
    secret = 's',
  ): Promise<{ peer: RawPeerWithChallenge; reply: unknown[] | undefined }> {
    const peer = await connectRaw(target.transport.port);
    cleanups.push(() => peer.socket.terminate());
    const reply = await Promise.race([
      handshake(peer, { cluster, secret, lane: 'system', identity, ...claim }) as Promise<unknown[]>,
      peer.closed.then(() => undefined),
    ]);
    return { peer, reply };
  }

  const rejected = (n: ClusterNode | TestNode, reason: string) =>
    n.transport.system.metrics.value('doyen_wire_rejected_total', { reason });
  const nodeOf = (n: ClusterNode) => n.transport.system.node;

  it('members carry the key each node proved, and every node knows every key', async () => {
    await cluster([{}, {}, {}]);
    for (const n of nodes) {
      const members = n.cluster.state().membership!.members;
      for (const other of nodes) {
        const m = members.find((x) => memberKey(x) === memberKey(nodeOf(other)))!;
        expect(m.publicKey).toBe(other.transport.system.publicKey);
        expect(n.transport.system.peerKeys.get(memberKey(m))).toBe(other.transport.system.publicKey);
      }
    }
  });

  it('a secret holder speaking as the coordinator is refused; where keys are not checked it rewrites the view', async () => {
    const coordinatorKey = NodeIdentity.generate();
    // C does not check keys: the positive control, the shared-secret-only handshake of before
    const [a, b, c] = await cluster([{ identityKey: coordinatorKey.toPem() }, {}, { checkPeerKeys: false }]);
    const attacker = NodeIdentity.generate();
    const asA = nodeOf(a!);

    const towardsB = await claimTowards(b!, asA, attacker);
    expect(towardsB.reply).toBeUndefined();
    expect(await towardsB.peer.closed).toMatchObject({
      code: CloseCode.wrongKey,
      reason: 'handshake failed',
    });
    expect(rejected(b!, 'wrong-key')).toBe(1);

    // positive control 1: the same claim signed with the coordinator's real key is welcomed by B
    const withRealKey = await claimTowards(b!, asA, coordinatorKey);
    expect(withRealKey.reply?.[0]).toBe(HandshakeKind.Welcome);

    // positive control 2: C takes the impostor for the coordinator, and a forged update downs B
    const towardsC = await claimTowards(c!, asA, attacker);
    expect(towardsC.reply?.[0]).toBe(HandshakeKind.Welcome);
    const mine = c!.cluster.state().membership!;
    const forged = downMembers(mine, [memberKey(nodeOf(b!))]);
    const replyTo = a!.transport.system.remoteRef(asA, '/system/membership');
    const update = { type: 'membership.update', membership: forged, replyTo } as Message;
    towardsC.peer.sendRaw(
      new BatchEncoder().encode(batchFrameOf([['/system/membership', nodeOf(c!).uid, null, update]])),
    );
    await eventually(
      () => !c!.cluster.state().membership!.members.some((m) => memberKey(m) === memberKey(nodeOf(b!))),
      { what: 'C adopted the forged update' },
    );
    // B, which checks keys, never heard the impostor: A and B still see three members
    for (const n of [a!, b!])
      expect(n.cluster.state().membership!.members.map(memberKey)).toContain(memberKey(nodeOf(b!)));
  });

  it('a join from a new incarnation of a live member is refused unless it proves that member key; the coordinator is never replaced', async () => {
    const bKey = NodeIdentity.generate();
    const [a, b] = await cluster([{}, { identityKey: bKey.toPem() }]);
    const attacker = NodeIdentity.generate();
    const membership = () => a!.cluster.state().membership!;
    const joinAs = async (uid: string, port: number, identity: NodeIdentity) => {
      const claim = { host: '127.0.0.1', port, uid };
      const { peer, reply } = await claimTowards(a!, claim, identity);
      expect(reply?.[0]).toBe(HandshakeKind.Welcome);
      const replyTo = a!.transport.system.remoteRef(claim, '/system/membership');
      const join = {
        type: 'membership.join',
        node: claim,
        name: `joiner-${uid}`,
        roles: [],
        replyTo,
        publicKey: identity.publicKey,
      } as Message;
      peer.sendRaw(
        new BatchEncoder().encode(batchFrameOf([['/system/membership', nodeOf(a!).uid, null, join]])),
      );
      return peer;
    };
    const version = membership().version;
    await joinAs('imposterb', nodeOf(b!).port, attacker);
    await joinAs('imposter', nodeOf(a!).port, attacker);
    await new Promise((r) => setTimeout(r, 400));
    expect(membership().version).toBe(version);
    expect(membership().members.map(memberKey).sort()).toEqual(
      [memberKey(nodeOf(a!)), memberKey(nodeOf(b!))].sort(),
    );
    // positive control: a restart that proves B's stable key replaces B's old incarnation at once
    await joinAs('restartedb', nodeOf(b!).port, bKey);
    await eventually(
      () => membership().members.some((m) => m.uid === 'restartedb' && m.publicKey === bKey.publicKey),
      { what: 'the proven restart admitted' },
    );
    expect(membership().members.some((m) => m.uid === nodeOf(b!).uid)).toBe(false);
  });

  it('a join that claims another key than its connection proved is forged', async () => {
    const [a] = await cluster([{}]);
    const own = NodeIdentity.generate();
    const other = NodeIdentity.generate();
    const send = async (uid: string, claimedKey: string) => {
      const claim = { host: '127.0.0.1', port: 1, uid };
      const { peer } = await claimTowards(a!, claim, own);
      const replyTo = a!.transport.system.remoteRef(claim, '/system/membership');
      const join = { type: 'membership.join', node: claim, name: uid, roles: [], replyTo } as Record<
        string,
        unknown
      >;
      if (claimedKey) join.publicKey = claimedKey;
      peer.sendRaw(
        new BatchEncoder().encode(batchFrameOf([['/system/membership', nodeOf(a!).uid, null, join]])),
      );
    };
    const forged = () => a!.transport.system.metrics.value('doyen_wire_forged_total');
    await send('otherkey', other.publicKey);
    await send('nokey', '');
    await eventually(() => forged() >= 2, { what: 'both joins counted as forged' });
    expect(a!.cluster.state().membership!.members).toHaveLength(1);
    // positive control: the same join with the key the connection proved is admitted
    await send('ownkey', own.publicKey);
    await eventually(
      () =>
        a!.cluster
          .state()
          .membership!.members.some((m) => m.uid === 'ownkey' && m.publicKey === own.publicKey),
      { what: 'the honest join admitted with its key' },
    );
  });

  it('a dialer refuses a welcome from a member address signed with another key than the member', async () => {
    single = await startTestNode();
    const n = single;
    const [wrongPort, rightPort] = await freePorts(2);
    const fakeKey = NodeIdentity.generate();
    const admitted = NodeIdentity.generate();
    const wrong = await startFakeAcceptor(wrongPort!, {
      secret: 'sesame',
      welcomeAs: { host: '127.0.0.1', port: wrongPort!, uid: 'member' },
      identity: fakeKey,
    });
    const right = await startFakeAcceptor(rightPort!, {
      secret: 'sesame',
      welcomeAs: { host: '127.0.0.1', port: rightPort!, uid: 'member' },
      identity: admitted,
    });
    cleanups.push(
      () => wrong.close(),
      () => right.close(),
    );
    n.system.peerKeys.record([
      { member: `127.0.0.1:${wrongPort}#member`, publicKey: admitted.publicKey },
      { member: `127.0.0.1:${rightPort}#member`, publicKey: admitted.publicKey },
    ]);
    const failures = () =>
      n.system.metrics.value('doyen_wire_handshake_failures_total', { lane: 'user', reason: 'wrong-key' });
    const toWrong = n.system.refFor(`doyen://test@127.0.0.1:${wrongPort}/user/inbox#member`);
    const toRight = n.system.refFor(`doyen://test@127.0.0.1:${rightPort}/user/inbox#member`);
    toWrong.send({ type: 'test.ping' } as Message);
    toRight.send({ type: 'test.ping' } as Message);
    await eventually(() => failures() >= 1, { what: 'the impostor acceptor refused' });
    // positive control: the acceptor signing with the admitted key gets the message after its welcome
    await eventually(() => right.received.length >= 2, { what: 'a batch reached the real member' });
    expect(wrong.received).toHaveLength(1);
  });

  it('a connection that claimed a member before its key was admitted is cut when the key arrives', async () => {
    single = await startTestNode();
    const own = NodeIdentity.generate();
    // two connections proving the same key, each claiming another member (the test node's cluster and secret)
    const claimAs = (port: number, uid: string) =>
      claimTowards(single!, { host: '127.0.0.1', port, uid }, own, 'test', 'sesame');
    const early = await claimAs(7, 'ghost');
    const honest = await claimAs(8, 'kept');
    expect(early.reply?.[0]).toBe(HandshakeKind.Welcome);
    expect(honest.reply?.[0]).toBe(HandshakeKind.Welcome);
    single.system.peerKeys.record([
      { member: '127.0.0.1:7#ghost', publicKey: NodeIdentity.generate().publicKey },
      // positive control: the key this connection did prove keeps it open
      { member: '127.0.0.1:8#kept', publicKey: own.publicKey },
    ]);
    expect(await early.peer.closed).toMatchObject({ code: CloseCode.wrongKey });
    await new Promise((r) => setTimeout(r, 100));
    expect(honest.peer.socket.readyState).toBe(honest.peer.socket.OPEN);
  });
});
