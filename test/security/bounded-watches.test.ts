import { Packr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import {
  ActorSystem,
  AskTargetGoneError,
  type PeerLimits,
  TooManyPendingAsksError,
} from '../../packages/core/src/index.js';
import { batchFrameOf, WsTransport } from '../../packages/wire/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake, type RawPeer } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const transports: WsTransport[] = [];
const nodes: TestNode[] = [];
const peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) p.socket.terminate();
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
  await Promise.all(transports.splice(0).map((t) => t.close()));
});

/** The identity the rogue peer authenticates as: not a member of anything. */
const ROGUE = { host: '127.0.0.1', port: 1, uid: 'rogue' };
/**
 * The rogue's side: refs to its own (made-up) watchers. They are built in an actor system of its
 * own, so they encode on the wire as refs (msgpackr's ref extension) and speak for the rogue.
 */
const rogueSystem = new ActorSystem({ cluster: 'test', ...ROGUE });

async function nodeWithTarget(limits: Partial<PeerLimits>) {
  const transport = await WsTransport.start({
    cluster: 'test',
    host: '127.0.0.1',
    port: 0,
    wire: { secret: 'sesame' },
    limits,
  });
  transports.push(transport);
  transport.system.spawn(createMachine({}), { name: 'target' });
  return transport;
}

/** Authenticates as `as` on the system lane and registers `count` distinct watches of /user/target. */
async function watchFlood(transport: WsTransport, count: number, as = ROGUE): Promise<RawPeer> {
  const raw = await connectRaw(transport.port);
  peers.push(raw);
  await handshake(raw, { cluster: 'test', secret: 'sesame', lane: 'system', ...as });
  const packr = new Packr({ useRecords: false });
  const uid = transport.system.node.uid;
  for (let from = 0; from < count; from += 500) {
    const batch = [];
    for (let i = from; i < Math.min(count, from + 500); i++) {
      const watcher = rogueSystem.refFor(`doyen://test@127.0.0.1:1/user/watcher-${i}#${as.uid}`);
      batch.push([
        '/system/death-watch',
        uid,
        null,
        { type: 'doyen.watch', target: '/user/target', watcher },
      ]);
    }
    raw.sendRaw(packr.pack(batchFrameOf(batch)));
  }
  return raw;
}

const dropped = (t: WsTransport) => t.system.metrics.value('doyen_watch_dropped_total');

describe('issue 25 (3): death watches a remote node registers are bounded and released', () => {
  it('a non-member holds at most maxWatchesPerNode; they are freed when it disconnects', async () => {
    const t = await nodeWithTarget({ maxWatchesPerNode: 100 });
    const raw = await watchFlood(t, 3000);
    await eventually(() => dropped(t) === 2900, { what: 'the watches over the cap to be dropped' });
    expect(t.system.watchesHeldBy(ROGUE)).toBe(100);
    raw.socket.close();
    await eventually(() => t.system.watchesHeldBy(ROGUE) === 0, { what: 'the watches to be released' });
    // the target itself is untouched and nobody is told it terminated
    expect(t.system.lookup('/user/target')).toBeDefined();
  });

  it('all remote nodes together hold at most maxRemoteWatches', async () => {
    const t = await nodeWithTarget({ maxWatchesPerNode: 100, maxRemoteWatches: 150 });
    const second = { ...ROGUE, uid: 'rogue2' };
    await watchFlood(t, 300);
    await eventually(() => t.system.watchesHeldBy(ROGUE) === 100, { what: 'the first rogue at its cap' });
    await watchFlood(t, 300, second);
    await eventually(() => dropped(t) === 450, { what: 'the watches over the caps to be dropped' });
    expect(t.system.watchesHeldBy(second)).toBe(50);
  });

  it('positive control: with no cap every one of the watches is held', async () => {
    const t = await nodeWithTarget({ maxWatchesPerNode: Number.POSITIVE_INFINITY });
    await watchFlood(t, 3000);
    await eventually(() => t.system.watchesHeldBy(ROGUE) === 3000, { what: 'all 3000 watches held' });
    expect(dropped(t)).toBe(0);
  });

  it("a member's watches survive its disconnect and go when the cluster removes it", async () => {
    const t = await nodeWithTarget({ maxWatchesPerNode: 100 });
    t.setKnownPeers([ROGUE], []);
    const raw = await watchFlood(t, 50);
    await eventually(() => t.system.watchesHeldBy(ROGUE) === 50, { what: 'the watches held' });
    raw.socket.close();
    await eventually(() => t.inboundConnections === 0, { what: 'the connection to close' });
    expect(t.system.watchesHeldBy(ROGUE)).toBe(50);
    t.system.nodeTerminated(ROGUE, 'node-removed');
    expect(t.system.watchesHeldBy(ROGUE)).toBe(0);
  });
});

describe('issue 25 (3): asks waiting on one remote node are bounded', () => {
  /** A node whose /user/inbox swallows asks: they stay pending until their timeout. */
  async function silentPeer() {
    const peer = await startTestNode();
    nodes.push(peer);
    return peer;
  }

  it('beyond maxPendingAsksPerNode an ask fails at once; a removed node fails the rest', async () => {
    const peer = await silentPeer();
    const t = await nodeWithTarget({ maxPendingAsksPerNode: 5 });
    t.system.messageTypes.register(['test.ask']);
    const target = t.system.remoteRef(peer.system.node, '/user/inbox');
    const asks = Array.from({ length: 5 }, () =>
      t.system.ask(target, () => ({ type: 'test.ask' }), { timeout: 30_000 }),
    );
    for (const a of asks) a.catch(() => {});
    await expect(t.system.ask(target, () => ({ type: 'test.ask' }), { timeout: 30_000 })).rejects.toThrow(
      TooManyPendingAsksError,
    );
    expect(t.system.pendingAsksTo(peer.system.node)).toBe(5);
    expect(t.system.metrics.value('doyen_ask_refused_total')).toBe(1);
    await eventually(() => peer.inbox.length === 5, { what: 'the five asks to arrive' });
    t.system.nodeTerminated(peer.system.node, 'node-removed');
    for (const a of asks) await expect(a).rejects.toThrow(AskTargetGoneError);
    expect(t.system.pendingAsksTo(peer.system.node)).toBe(0);
  });

  it('positive control: with no cap the sixth ask is sent and waits like the others', async () => {
    const peer = await silentPeer();
    const t = await nodeWithTarget({ maxPendingAsksPerNode: Number.POSITIVE_INFINITY });
    t.system.messageTypes.register(['test.ask']);
    const target = t.system.remoteRef(peer.system.node, '/user/inbox');
    const asks = Array.from({ length: 6 }, () =>
      t.system.ask(target, () => ({ type: 'test.ask' }), { timeout: 30_000 }),
    );
    for (const a of asks) a.catch(() => {});
    expect(t.system.pendingAsksTo(peer.system.node)).toBe(6);
    await eventually(() => peer.inbox.length === 6, { what: 'all six asks to arrive' });
    t.system.nodeTerminated(peer.system.node, 'node-removed');
  });
});
