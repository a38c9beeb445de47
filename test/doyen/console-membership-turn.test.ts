import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConsoleHost, ConsoleService } from '../../packages/doyen/src/console/console-service.js';
import { ConsoleViewers } from '../../packages/doyen/src/console/console-viewers.js';
import type { NodeView } from '../../packages/doyen/src/console/node-view.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startLocalNode, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * A membership change reaches the serving node's console in the step that adopted it, and its
 * own view's frame leaves for the viewers at once (issue 30). At 50 nodes the coordinator's own
 * view of a leave was built and streamed in microtasks queued behind the wire's writes of the
 * change to 49 members; 49 processes woken on 2 cores ran first (97 ms from the log line to the
 * view, 54 ms more to the frame, nearly all of it waiting for a core).
 */
const nodes = nodesClosedAfterEach();
const services: ConsoleService[] = [];
afterEach(() => {
  for (const s of services.splice(0)) s.close();
});

/** A viewer's response as ConsoleViewers uses it: what was written, and whether its socket was uncorked. */
function fakeResponse() {
  const written: string[] = [];
  let uncorked = 0;
  const response = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    socket: { uncork: () => uncorked++ },
    writeHead: () => response,
    write: (text: string) => {
      written.push(text);
      return true;
    },
    end: () => {},
    destroy: () => {},
  });
  return {
    response: response as unknown as ServerResponse,
    written,
    uncorked: () => uncorked,
  };
}

const view = (key: string, at: number): NodeView =>
  ({ key, address: key.replace(/#.*$/, ''), at, members: [], machines: [], rev: at }) as unknown as NodeView;

describe('the console streams a membership change in its own step', () => {
  it("the serving node's own view is written and uncorked in the call; a member's quiet view waits for a microtask", async () => {
    const viewers = new ConsoleViewers(
      { pingMs: 60_000 },
      () => {},
      (key) => key === 'self#1',
    );
    const page = fakeResponse();
    viewers.add('127.0.0.1', page.response);
    await Promise.resolve();
    const before = page.written.length;

    viewers.view(view('self#1', 1));
    expect(page.written.slice(before).join('')).toContain('"key":"self#1"');
    expect(page.uncorked()).toBe(1);

    // control: a member's view with no cluster fact goes with the window (not in the call)
    const mid = page.written.length;
    viewers.view(view('other#2', 2));
    expect(page.written.slice(mid).join('')).not.toContain('"key":"other#2"');
    await new Promise((r) => setTimeout(r, 40));
    expect(page.written.slice(mid).join('')).toContain('"key":"other#2"');
    expect(page.uncorked()).toBe(1);
    viewers.close();
  });

  it('a listener after the console sees the gathered own view already showing the change; one before it does not', async () => {
    const secret = randomBytes(16).toString('hex');
    const cluster = `console-turn-${randomBytes(3).toString('hex')}`;
    // the node's own console is off: the service under test is this one
    const a = await startLocalNode({ cluster, secret, console: { enabled: false } }, {}, nodes);
    const [pb] = await freePorts(1);
    const b = await startMemberNode(pb!, a.port, { cluster, secret }, {}, nodes);
    const bAddress = `127.0.0.1:${pb}`;
    await eventually(
      () => a.node.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 2,
      { what: '2 up members' },
    );

    let service: ConsoleService | undefined;
    const gatheredStatusOfB = () =>
      service?.gatherer.view(service.selfKey)?.members.find((m) => m.address === bAddress)?.status;
    // what the gathered own view said when the membership with b leaving was first handed out,
    // to a listener registered before the console's and to one after it
    const seen: { before?: string; after?: string } = {};
    const listener =
      (slot: 'before' | 'after') => (m: { members: readonly { address: string; status: string }[] }) => {
        if (seen[slot] !== undefined) return;
        if (m.members.find((x) => x.address === bAddress)?.status !== 'leaving') return;
        seen[slot] = gatheredStatusOfB() ?? 'none';
      };
    const stopBefore = a.node.cluster.subscribeMembership(listener('before'));
    service = new ConsoleService(a.node as unknown as ConsoleHost, undefined, { renewMs: 60_000 });
    services.push(service);
    const stopAfter = a.node.cluster.subscribeMembership(listener('after'));
    service.touch();
    await eventually(() => gatheredStatusOfB() === 'up', { what: "b up in a's gathered own view" });
    // past the publishing window of the last update
    await new Promise((r) => setTimeout(r, 200));

    await b.cluster.leave();
    await eventually(() => seen.after !== undefined && seen.before !== undefined, {
      what: 'the leaving membership handed out',
    });
    stopBefore();
    stopAfter();
    // control: before the console's listener ran, the gathered view still had b up
    expect(seen.before).toBe('up');
    expect(seen.after).toBe('leaving');
  }, 30_000);

  it('follows the node into a new incarnation from inside a flush without building it twice', async () => {
    const secret = randomBytes(16).toString('hex');
    const a = await startLocalNode(
      { cluster: 'console-turn-a', secret, console: { enabled: false } },
      {},
      nodes,
    );
    const b = await startLocalNode(
      { cluster: 'console-turn-b', secret, console: { enabled: false } },
      {},
      nodes,
    );
    // the host as a restarting node is: its system and cluster are the next incarnation's
    let current = a.node;
    const host = {
      get system() {
        return current.system;
      },
      get cluster() {
        return current.cluster;
      },
    } as unknown as ConsoleHost;
    const service = new ConsoleService(host, undefined, { renewMs: 1000 });
    services.push(service);
    service.touch();
    await eventually(() => service.gatherer.view(a.node.cluster.self.key) !== undefined, {
      what: "a's own view gathered",
    });
    // how many times the console attaches to the new incarnation (subscribes to its membership)
    let attachments = 0;
    const subscribe = b.node.cluster.subscribeMembership.bind(b.node.cluster);
    b.node.cluster.subscribeMembership = (listener) => {
      attachments++;
      return subscribe(listener);
    };
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('uncaughtException', onError);
    // a subscriber the new incarnation's membership keeps (another node serving the console)
    (service as unknown as { publisher: { subscribe(key: string, ms: number): void } }).publisher.subscribe(
      b.node.cluster.self.key,
      10_000,
    );
    try {
      current = b.node;
      // a membership change on the old incarnation flushes in its step (as its listener does),
      // and that flush's view is built on the new incarnation, whose listener is called at once
      (service as unknown as { poke(urgent: boolean, now: boolean): void }).poke(true, true);
      service.touch();
      await eventually(() => service.gatherer.view(b.node.cluster.self.key) !== undefined, {
        what: "the new incarnation's own view gathered",
      });
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(errors).toEqual([]);
    // once: a flush from the listener called on subscribing would attach again (and again, up to
    // the urgent cuts), each leaving a subscription and a console actor behind
    expect(attachments).toBe(1);
  }, 30_000);
});
