import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import {
  type ActorRef,
  type DeadLetter,
  type DoyenNode,
  handleShutdownSignals,
  InvalidAddressError,
  type NodeConfig,
  NoMemberAtAddressError,
  silentLogger,
} from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { type Hi, Inbox, inbox } from '../support/inbox-service.js';
import { manualMembers } from '../support/manual-members.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

/** The app: an inbox, registered with the receptionist, in every incarnation. */
function app(node: DoyenNode) {
  node.system.messageTypes.register(['hello', 'hi']);
  node.receptionist.register(
    Inbox,
    node.system.spawn(inbox, { name: 'inbox', inputFrom: ({ self }) => ({ at: self.id }) }),
  );
}

async function start(port: number, seed: number, extra: Partial<NodeConfig> = {}, handleSignals = false) {
  return startMemberNode(
    port,
    seed,
    {
      ...manualMembers('addressing'),
      setup: app,
      ...extra,
    },
    { handleSignals },
    nodes,
  );
}

const hello = (ref: ActorRef, timeout = 3000) =>
  ref.ask<Hi>((replyTo) => ({ type: 'hello', replyTo }) as never, { timeout });
const uidOf = (id: string) => id.slice(id.lastIndexOf('#') + 1);

describe('addressing an actor on another member', () => {
  it("refFor by path, receptionist subscriptions and node.subscribe follow a member's incarnations", async () => {
    const [p1, p2] = await freePorts(2);
    const first = await start(p1!, p1!);
    const second = await start(p2!, p1!);
    const byPath = first.refFor(`doyen://addressing@127.0.0.1:${p2}/user/inbox`);
    const firstUid = second.system.node.uid;
    const before = await hello(byPath);
    expect(uidOf(before.from)).toBe(firstUid);
    const pinned = first.system.refFor(before.from); // the incarnation's own ref, with its #uid

    // made outside setup, once: the node-level ones must survive the restart
    const listings: string[][] = [];
    first.receptionist.subscribe(Inbox, (refs) => listings.push(refs.map((r) => r.id).sort()));
    const nodeEvents: string[] = [];
    second.subscribe((event) => nodeEvents.push(event.type));
    const incarnationEvents: string[] = [];
    second.cluster.subscribe((event) => incarnationEvents.push(event.type));
    await eventually(() => listings.at(-1)?.length === 2, { what: 'both inboxes listed on the first node' });

    first.cluster.down(`127.0.0.1:${p2}#${firstUid}`);
    await eventually(() => second.incarnations === 2 && second.cluster.state().status === 'up', {
      timeoutMs: 15_000,
      what: 'the second node back as a new incarnation',
    });
    const secondUid = second.system.node.uid;
    expect(secondUid).not.toBe(firstUid);
    const heardAtRestart = incarnationEvents.length;
    const nodeEventsAtRestart = nodeEvents.length;

    // the path ref reaches the new incarnation; the pinned ref (positive control) does not
    await eventually(
      async () => uidOf((await hello(byPath, 1000).catch(() => ({ from: '#' }))).from) === secondUid,
      {
        what: 'the path ref answered by the new incarnation',
      },
    );
    await expect(hello(pinned, 500)).rejects.toThrow(/no reply|gone|terminated/);

    // the receptionist: the registration made in setup came back, and the subscription heard it
    await eventually(
      () => {
        const last = listings.at(-1) ?? [];
        return (
          last.length === 2 &&
          last.some((id) => id.endsWith(`#${secondUid}`)) &&
          !last.some((id) => id.endsWith(`#${firstUid}`))
        );
      },
      { timeoutMs: 10_000, what: "the first node's listing naming the new incarnation only" },
    );
    const found = await second.receptionist.find(Inbox);
    expect(found).toHaveLength(2);

    // node.subscribe hears the new incarnation; the old incarnation's cluster.subscribe does not
    await eventually(() => nodeEvents.slice(nodeEventsAtRestart).includes('member.up'), {
      what: 'member.up through node.subscribe after the restart',
    });
    expect(incarnationEvents.length).toBe(heardAtRestart);
  });

  it('a path with no member there becomes a dead letter with its reason; addresses with #uid behave as before', async () => {
    const [p1, empty] = await freePorts(2);
    const node = await start(p1!, p1!);
    const letters: DeadLetter[] = [];
    node.system.deadLetters.subscribe((l) => letters.push(l));
    const nobody = node.refFor(`doyen://addressing@127.0.0.1:${empty}/user/inbox`);
    nobody.send({ type: 'hello' } as never);
    expect(letters.map((l) => [l.recipient, l.reason])).toEqual([
      [`doyen://addressing@127.0.0.1:${empty}/user/inbox`, 'no-member-at-address'],
    ]);
    await expect(hello(nobody)).rejects.toBeInstanceOf(NoMemberAtAddressError);

    // this node's own path resolves locally (positive control for the resolution)
    const own = node.refFor(`doyen://addressing@127.0.0.1:${p1}/user/inbox`);
    expect(uidOf((await hello(own)).from)).toBe(node.system.node.uid);
    // with #uid: exactly that incarnation, as system.refFor
    const pinned = node.refFor(node.system.lookup('/user/inbox')!.id);
    expect(pinned.isLocal).toBe(true);
    // system.refFor still needs the uid, and says where to look
    expect(() => node.system.refFor(`doyen://addressing@127.0.0.1:${p1}/user/inbox`)).toThrow(
      /incarnation.*node\.refFor/,
    );
    expect(() => node.refFor(`doyen://other@127.0.0.1:${p1}/user/inbox`)).toThrow(InvalidAddressError);
  });
});

describe('signals handled by startNode when asked', () => {
  it('handleSignals installs SIGTERM/SIGINT handlers (none by default) and removes them when the node stops', async () => {
    const [p1, p2] = await freePorts(2);
    const base = { term: process.listenerCount('SIGTERM'), int: process.listenerCount('SIGINT') };
    const plain = await start(p1!, p1!);
    expect(process.listenerCount('SIGTERM')).toBe(base.term); // the default installs none
    await plain.close();
    const handled = await start(p2!, p2!, {}, true);
    expect(process.listenerCount('SIGTERM')).toBe(base.term + 1);
    expect(process.listenerCount('SIGINT')).toBe(base.int + 1);
    await handled.close();
    await eventually(() => process.listenerCount('SIGTERM') === base.term, { what: 'handlers removed' });
    expect(process.listenerCount('SIGINT')).toBe(base.int);
  });

  it('a signal runs the coordinated shutdown, then exits 0', async () => {
    const signals = new EventEmitter();
    const shutdown = vi.fn(async (_reason?: string) => {});
    const exit = vi.fn();
    handleShutdownSignals({ shutdown, closed: new Promise(() => {}) }, silentLogger(), signals, exit);
    expect(exit).not.toHaveBeenCalled();
    signals.emit('SIGTERM');
    await eventually(() => exit.mock.calls.length === 1, { what: 'exit' });
    expect(shutdown).toHaveBeenCalledWith('SIGTERM');
    expect(exit).toHaveBeenCalledWith(0);
  });
});
