import { afterEach, describe, expect, it } from 'vitest';
import { memberKey } from '../../packages/cluster/src/index.js';
import {
  type Message,
  MessageTypes,
  read,
  schema,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';
import { Election, peersOf } from '../../packages/election/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { type ClusterNode, freePorts, startUpCluster } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const origin = (uid: string): UniqueNodeAddress => ({ host: '127.0.0.1', port: 7, uid });
const note = (by: string) => ({ type: 'test.note', by }) as Message;

describe('authority at the boundary: MessageTypes', () => {
  const types = () =>
    new MessageTypes()
      .register(
        'test.note',
        schema<Message & { by: string }>({ by: read.string() } as never, undefined, 'member'),
      )
      .register(
        'test.open',
        schema<Message & { by: string }>({ by: read.string() } as never, undefined, 'anyone'),
      );

  it('refuses an origin without the authority as unauthorized, after parsing and claims', () => {
    const t = types();
    t.defineAuthority('member', (key) => key === '127.0.0.1:7#in');
    expect(t.parse(note('x'), origin('in')).ok).toBe(true);
    const refused = t.parse(note('x'), origin('out'));
    expect(refused).toMatchObject({ ok: false, reason: 'unauthorized', authority: 'member' });
    expect(!refused.ok && refused.detail).toContain('127.0.0.1:7#out');
    // malformed input is still invalid, not unauthorized
    expect(t.parse({ type: 'test.note', by: 5 } as unknown as Message, origin('out'))).toMatchObject({
      reason: 'invalid-message',
    });
    // `anyone` is never asked
    expect(t.parse({ type: 'test.open', by: 'x' } as Message, origin('out')).ok).toBe(true);
  });

  it('is permissive until an authority is installed, and again once it is uninstalled', () => {
    const t = types();
    expect(t.parse(note('x'), origin('out')).ok).toBe(true);
    const uninstall = t.defineAuthority('member', () => false);
    expect(t.parse(note('x'), origin('out')).ok).toBe(false);
    uninstall();
    expect(t.parse(note('x'), origin('out')).ok).toBe(true);
    // without an origin (a local check) authority does not apply
    t.defineAuthority('member', () => false);
    expect(t.check(note('x'))).toBeUndefined();
  });

  it('a check that throws refuses rather than lets through', () => {
    const t = types();
    t.defineAuthority('member', () => {
      throw new Error('boom');
    });
    expect(t.parse(note('x'), origin('in'))).toMatchObject({ ok: false, reason: 'unauthorized' });
  });
});

describe('authority at the boundary: election messages come only from election peers', () => {
  let transport: WsTransport | undefined;
  afterEach(async () => {
    await transport?.close(0);
    transport = undefined;
  });

  it('refuses a non-peer, hears a peer, follows setPeers, and is permissive again once stopped', async () => {
    const [port] = await freePorts(1);
    transport = await WsTransport.start({
      cluster: 'it',
      host: '127.0.0.1',
      port: port!,
      wire: { secret: 's' },
    });
    const system = transport.system;
    const peer = { host: '127.0.0.1', port: 7001 };
    const election = Election.start(system, { algorithm: 'bully', peers: peersOf([system.node, peer]) });
    const heartbeat = (from: { host: string; port: number }) =>
      ({ type: 'election.bully.heartbeat-ack', from: `${from.host}:${from.port}` }) as Message;
    const at = (a: { host: string; port: number }) => ({ ...a, uid: 'u1' });
    const stranger = { host: '127.0.0.1', port: 7002 };
    expect(system.messageTypes.parse(heartbeat(peer), at(peer)).ok).toBe(true);
    expect(system.messageTypes.parse(heartbeat(stranger), at(stranger))).toMatchObject({
      ok: false,
      reason: 'unauthorized',
      authority: 'election-peer',
    });
    election.setPeers(peersOf([system.node, peer, stranger]));
    expect(system.messageTypes.parse(heartbeat(stranger), at(stranger)).ok).toBe(true);
    election.setPeers(peersOf([system.node, stranger]));
    expect(system.messageTypes.parse(heartbeat(peer), at(peer)).ok).toBe(false);
    election.stop();
    expect(system.messageTypes.parse(heartbeat(peer), at(peer)).ok).toBe(true);
  });
});

/**
 * From outside: a peer that holds the cluster secret but never joined sends messages only
 * members may send. Each is dropped at the boundary, logged as `wire.unauthorized` and counted;
 * the same message from a member (or with the check made permissive) passes.
 */
describe('authority at the boundary: a non-member speaking the wire', () => {
  let nodes: ClusterNode[] = [];
  let rogue: WsTransport | undefined;
  afterEach(async () => {
    await Promise.all([...nodes.map((n) => n.transport.close(0)), rogue?.close(0)]);
    nodes = [];
    rogue = undefined;
  });

  it('drops a down request and a merge order from a non-member; a member is heard', async () => {
    const [a, b, c] = (await startUpCluster([{}, {}, {}], nodes)) as [ClusterNode, ClusterNode, ClusterNode];
    const [px] = await freePorts(1);
    const sys = (n: ClusterNode) => n.transport.system;
    const unauthorized = (n: ClusterNode) => sys(n).metrics.value('doyen_wire_unauthorized_total');
    const rejected = (n: ClusterNode) =>
      sys(n).metrics.value('doyen_wire_rejected_total', { reason: 'unauthorized' });
    const warnings: Record<string, unknown>[] = [];
    const logger = sys(a).logger;
    const warn = logger.warn.bind(logger);
    logger.warn = ((fields: unknown, ...rest: unknown[]) => {
      if (typeof fields === 'object' && fields !== null) warnings.push(fields as Record<string, unknown>);
      return (warn as (...args: unknown[]) => void)(fields, ...rest);
    }) as typeof logger.warn;

    rogue = await WsTransport.start({ cluster: 'it', host: '127.0.0.1', port: px!, wire: { secret: 's' } });
    const x = rogue.system;
    const bKey = b.cluster.self.key;
    const xKey = memberKey(x.node);
    // in its own name (no claim is forged), but it is no member of A's view
    x.remoteRef(sys(a).node, '/system/membership').send({
      type: 'membership.down',
      member: bKey,
      by: xKey,
    } as Message);
    // a merge order may come only from B's coordinator
    x.remoteRef(sys(b).node, '/system/split-brain-checker').send({
      type: 'sbc.merge',
      from: xKey,
      target: { host: '127.0.0.1', port: px! },
    } as Message);
    await eventually(() => unauthorized(a) >= 1 && unauthorized(b) >= 1, {
      what: 'both counted as unauthorized',
    });
    expect(rejected(a)).toBeGreaterThanOrEqual(1);
    expect(warnings.some((w) => w.event === 'wire.unauthorized')).toBe(true);
    expect(sys(a).metrics.value('doyen_wire_forged_total')).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(a.cluster.state().membership!.members.map(memberKey)).toContain(bKey);

    // positive control 1: with the check permissive, the same request passes the boundary (the
    // protocol then ignores a requester that is no member)
    sys(a).messageTypes.defineAuthority('member', () => true);
    const before = unauthorized(a);
    const received = () => sys(a).metrics.value('doyen_wire_messages_received_total', { lane: 'system' });
    const receivedBefore = received();
    x.remoteRef(sys(a).node, '/system/membership').send({
      type: 'membership.down',
      member: bKey,
      by: xKey,
    } as Message);
    await eventually(() => received() > receivedBefore, { what: 'the request received' });
    expect(unauthorized(a)).toBe(before);

    // positive control 2: the same request from a member, in its own name, is acted on
    sys(c)
      .remoteRef(sys(a).node, '/system/membership')
      .send({ type: 'membership.down', member: bKey, by: c.cluster.self.key } as Message);
    await eventually(
      () => !a.cluster.state().membership!.members.some((m) => memberKey(m) === bKey && m.status === 'up'),
      {
        what: 'B downed on a member’s request',
      },
    );
  });
});
