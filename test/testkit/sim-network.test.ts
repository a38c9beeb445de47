import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import type { ActorRef, ActorSystem, DeadLetter, Message } from '../../packages/core/src/index.js';
import { type NetworkFaults, Simulation } from '../../packages/testkit/src/index.js';

type Ping = { type: 'test.ping'; n: number };

interface Node {
  system: ActorSystem;
  /** What /user/inbox received: message, sender node, and simulated time. */
  inbox: { n: number; from: string; at: number }[];
}

let sim: Simulation;
afterEach(() => sim?.shutdown());

function cluster(seed: number, count: number, network: Partial<NetworkFaults> = {}): Node[] {
  sim = new Simulation({ seed, network });
  return Array.from({ length: count }, (_, i) => {
    const system = sim.addSystem({ cluster: 't', host: `10.0.0.${i + 1}`, port: 2552 });
    system.messageTypes.register('test.ping', (m) =>
      typeof (m as Partial<Ping>).n === 'number' ? undefined : 'n must be a number',
    );
    const node: Node = { system, inbox: [] };
    system.functionRef(
      'inbox',
      (m, sender) => node.inbox.push({ n: (m as Ping).n, from: sender ?? '', at: sim.now }),
      'user',
    );
    return node;
  });
}

const inboxOf = (from: Node, to: Node) => from.system.remoteRef<Message>(to.system.node, '/user/inbox');
const ping = (from: Node, to: Node, n: number) => inboxOf(from, to).send({ type: 'test.ping', n } as Ping);
const received = (node: Node) => node.inbox.map((e) => e.n);

describe('SimNetwork: determinism', () => {
  async function trace(seed: number) {
    const nodes = cluster(seed, 3, { jitterMs: 0.5, dropRate: 0.1, duplicateRate: 0.1 });
    const lines: string[] = [];
    sim.network.observe((e) => {
      if (e.kind === 'deliver') lines.push(`${e.time} ${e.from} ${e.to} ${e.messageType}`);
    });
    const workload = sim.random.fork('workload');
    for (let i = 0; i < 100; i++) {
      const from = workload.pick(nodes);
      const to = workload.pick(nodes.filter((n) => n !== from));
      sim.clock.setTimeout(() => ping(from, to, i), workload.int(50));
    }
    await sim.runFor(100);
    const stats = sim.network.stats;
    sim.shutdown();
    return { lines, stats };
  }

  it('the same seed gives the same delivery trace; another seed gives another', async () => {
    const first = await trace(42);
    const again = await trace(42);
    const other = await trace(43);
    expect(first.lines.length).toBeGreaterThan(80);
    expect(first.stats.dropped.loss).toBeGreaterThan(0);
    expect(first.stats.duplicated).toBeGreaterThan(0);
    expect(first.stats.sent).toBe(100);
    expect(first.stats.delivered).toBe(100 - first.stats.droppedTotal + first.stats.duplicated);
    expect(again.lines).toEqual(first.lines);
    expect(again.stats).toEqual(first.stats);
    expect(other.lines).not.toEqual(first.lines);
  });
});

describe('SimNetwork: messages are encoded like the wire', () => {
  type Echoed = { type: 'test.echoed'; text: string };
  type Echo = { type: 'test.echo'; text: string; replyTo: ActorRef<Echoed> };

  it('refs inside messages become refs of the receiving system and replies route back', async () => {
    const [a, b] = cluster(1, 2) as [Node, Node];
    a.system.messageTypes.register('test.echoed');
    b.system.messageTypes.register('test.echo', (m) =>
      typeof (m as Partial<Echo>).text === 'string' ? undefined : 'text must be a string',
    );
    const seenReplyTo: ActorRef<Echoed>[] = [];
    b.system.spawn(
      fromTransition((count: number, event: Echo) => {
        seenReplyTo.push(event.replyTo);
        event.replyTo.send({ type: 'test.echoed', text: event.text.toUpperCase() });
        return count + 1;
      }, 0),
      { name: 'echo' },
    );
    let reply: Message | undefined;
    const asked = a.system
      .remoteRef<Echo>(b.system.node, '/user/echo')
      .ask<Echoed>((replyTo) => ({ type: 'test.echo', text: 'hi', replyTo }), {
        timeout: 1000,
      })
      .then((r) => (reply = r));
    await sim.runFor(5);
    // resolved inside runFor: the continuation ran without awaiting the promise itself
    expect(reply).toEqual({ type: 'test.echoed', text: 'HI' });
    await asked;
    const replyTo = seenReplyTo[0]!;
    expect(replyTo.isLocal).toBe(false);
    expect(replyTo.address.node).toEqual(a.system.node);
    expect(replyTo.path).toMatch(/^\/temp\/ask-/);
    expect(sim.network.stats.delivered).toBe(2);
  });

  it('does not pass objects by reference: later mutation by the sender is not seen', async () => {
    const [a, b] = cluster(1, 2);
    const message = { type: 'test.ping', n: 1 };
    inboxOf(a!, b!).send(message);
    message.n = 2;
    await sim.runFor(5);
    expect(received(b!)).toEqual([1]);
  });

  it('refuses unregistered and invalid messages at the boundary, as the wire does', async () => {
    const [a, b] = cluster(1, 2);
    inboxOf(a!, b!).send({ type: 'test.secret' });
    inboxOf(a!, b!).send({ type: 'test.ping', n: 'x' } as unknown as Message);
    ping(a!, b!, 1);
    await sim.runFor(5);
    expect(received(b!)).toEqual([1]);
    const stats = sim.network.stats;
    expect(stats.dropped).toEqual({ 'unknown-type': 1, 'invalid-message': 1 });
    expect(stats.delivered).toBe(1);
    expect(b!.system.metrics.value('doyen_wire_rejected_total', { reason: 'unknown-type' })).toBe(1);
    expect(b!.system.metrics.value('doyen_wire_rejected_total', { reason: 'invalid-message' })).toBe(1);
  });

  it('a message larger than maxMessageBytes becomes a dead letter at the sender', async () => {
    const [a, b] = cluster(1, 2, { maxMessageBytes: 100 });
    const dead: DeadLetter[] = [];
    a!.system.deadLetters.subscribe((d) => dead.push(d));
    inboxOf(a!, b!).send({ type: 'test.ping', n: 1, pad: 'x'.repeat(200) } as Message);
    await sim.runFor(5);
    expect(received(b!)).toEqual([]);
    expect(sim.network.stats.dropped['message-too-large']).toBe(1);
    expect(dead.map((d) => d.reason)).toEqual(['message-too-large']);
  });
});

describe('SimNetwork: faults', () => {
  it('partition blocks both directions, blockOneWay one, heal restores', async () => {
    const [a, b] = cluster(1, 2) as [Node, Node];
    sim.partition([a.system], [b.system]);
    ping(a, b, 1);
    ping(b, a, 1);
    await sim.runFor(5);
    expect([received(a), received(b)]).toEqual([[], []]);
    expect(sim.network.stats.dropped.partitioned).toBe(2);

    sim.heal();
    sim.blockOneWay(a.system, b.system);
    ping(a, b, 2);
    ping(b, a, 2);
    await sim.runFor(5);
    expect([received(a), received(b)]).toEqual([[2], []]);

    sim.healLink(b.system, a.system);
    ping(a, b, 3);
    await sim.runFor(5);
    expect(received(b)).toEqual([3]);
  });

  it('a partition that starts while a message is in flight drops it', async () => {
    const [a, b] = cluster(1, 2, { latencyMs: 10, jitterMs: 0 }) as [Node, Node];
    ping(a, b, 1);
    await sim.runFor(5);
    sim.partition([a.system.nodeName], [b.system.nodeName]);
    await sim.runFor(10);
    expect(received(b)).toEqual([]);
    expect(sim.network.stats.dropped.partitioned).toBe(1);
  });

  it('a crashed node is terminated and messages to it are dropped; a restart is a new incarnation', async () => {
    const [a, b] = cluster(1, 2) as [Node, Node];
    ping(a, b, 1); // in flight when b crashes
    const crashed = sim.crash(b.system);
    expect(crashed.isTerminated).toBe(true);
    ping(a, b, 2);
    await sim.runFor(5);
    expect(received(b)).toEqual([]);
    expect(sim.network.stats.dropped['no-such-node']).toBe(2);

    const restarted = sim.addSystem({ cluster: 't', host: b.system.node.host, port: b.system.node.port });
    expect(restarted.node.uid).not.toBe(b.system.node.uid);
    restarted.messageTypes.register('test.ping');
    const dead: DeadLetter[] = [];
    restarted.deadLetters.subscribe((d) => dead.push(d));
    ping(a, b, 3); // addressed to the old incarnation
    await sim.runFor(5);
    expect(dead.map((d) => d.reason)).toEqual(['wrong-incarnation']);
  });

  it('pause holds inbound and outbound messages and releases them in order after the pause', async () => {
    const [a, b] = cluster(1, 2) as [Node, Node];
    sim.pause(b.system, 50);
    expect(sim.network.isPaused(b.system)).toBe(true);
    for (let i = 0; i < 5; i++) sim.clock.setTimeout(() => ping(a, b, i), i * 3);
    sim.clock.setTimeout(() => ping(b, a, 100), 10);
    await sim.runFor(49);
    expect([received(a), received(b)]).toEqual([[], []]);
    expect(sim.network.stats.held).toBe(6);
    await sim.runFor(10);
    expect(received(b)).toEqual([0, 1, 2, 3, 4]);
    for (const e of b.inbox) expect(e.at).toBe(50);
    expect(received(a)).toEqual([100]);
    expect(a.inbox[0]!.at).toBeGreaterThan(50);
    expect(sim.network.isPaused(b.system)).toBe(false);
  });

  it('resume ends a pause early', async () => {
    const [a, b] = cluster(1, 2) as [Node, Node];
    sim.pause(b.system, Number.POSITIVE_INFINITY);
    ping(a, b, 1);
    await sim.runFor(100);
    expect(received(b)).toEqual([]);
    sim.resume(b.system);
    await sim.settle();
    expect(received(b)).toEqual([1]);
  });

  it('keeps per-link FIFO order under jitter', async () => {
    const [a, b] = cluster(5, 2, { latencyMs: 1, jitterMs: 5 }) as [Node, Node];
    for (let i = 0; i < 200; i++) sim.clock.setTimeout(() => ping(a, b, i), i * 0.1);
    await sim.runFor(50);
    expect(received(b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('reorders under jitter only when reorder is enabled', async () => {
    const [a, b] = cluster(5, 2, { latencyMs: 1, jitterMs: 5, reorder: true }) as [Node, Node];
    for (let i = 0; i < 200; i++) sim.clock.setTimeout(() => ping(a, b, i), i * 0.1);
    await sim.runFor(50);
    const got = received(b);
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(got).not.toEqual([...got].sort((x, y) => x - y));
  });
});
