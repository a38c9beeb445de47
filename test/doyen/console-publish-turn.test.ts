import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ConsoleService } from '../../packages/doyen/src/console/console-service.js';
import type { TimelineEvent } from '../../packages/doyen/src/console/node-view.js';
import { createNodeLogger } from '../../packages/doyen/src/index.js';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * An event the serving node logs reaches its console's viewers without waiting for a timer
 * (issue 30: at 50 nodes on a loaded host each zero-delay timer hop between the log line, the
 * member's publisher and the viewers' stream waited 50–130 ms for the event loop). Timers are
 * frozen while the event is logged: it must still arrive, within microtasks. Positive control:
 * a second event inside the coalescing window does need the clock, so the freeze is real; a
 * cluster fact cuts the window short, at most three times per window.
 */
const nodes = nodesClosedAfterEach();

afterEach(() => {
  vi.useRealTimers();
});

const flushMicrotasks = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('the console publishes on the turn of the change', () => {
  it('a logged event reaches the gathered timeline with timers frozen; a second one in the window waits for the clock', async () => {
    const logger = createNodeLogger({
      level: 'info',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    const { node, httpPort } = await startLocalNode(
      { cluster: 'console-turn', partitions: { count: 0 } },
      { logger },
      nodes,
    );
    // opening the console starts the gathering (this node subscribes to itself)
    expect((await fetch(`http://127.0.0.1:${httpPort}/console/state`)).status).toBe(200);
    // the node's console service (start-node.ts's runner holds it; DoyenNode does not expose it)
    const service = (node as unknown as { console: ConsoleService }).console;
    const seen: TimelineEvent[] = [];
    service.gatherer.listen({
      view: () => {},
      events: (e: readonly TimelineEvent[]) => seen.push(...e),
      gone: () => {},
    });
    await eventually(() => service.gatherer.view(service.selfKey) !== undefined, {
      what: 'own view gathered',
    });
    // past the coalescing window (50 ms) of the last update
    await new Promise((r) => setTimeout(r, 200));

    // the clock too: the window is measured on it
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'setImmediate', 'Date'] });
    node.system.logger.info({ event: 'test.first' }, 'first');
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).toContain('test.first');

    // positive control: inside the window the next update is a timer's, and the clock is frozen
    node.system.logger.info({ event: 'test.second' }, 'second');
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).not.toContain('test.second');
    vi.advanceTimersByTime(50);
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).toContain('test.second');

    // a cluster fact (a `member.*` line) inside the window cuts it short: at 50 nodes the serving
    // node's own view of a leave waited 182 ms behind that timer on a busy loop
    vi.advanceTimersByTime(10);
    node.system.logger.info({ event: 'member.test-fact' }, 'fact');
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).toContain('member.test-fact');
    // a fact shortly after another goes at once too (one cut per window made a leave after a
    // flap wait the window out), up to three per window
    for (const name of ['member.test-fact-2', 'member.test-fact-3']) {
      vi.advanceTimersByTime(5);
      node.system.logger.info({ event: name }, name);
      await flushMicrotasks();
      expect(seen.map((e) => e.event)).toContain(name);
    }
    // bounded: a fourth fact in the same window waits for it like any change
    vi.advanceTimersByTime(5);
    node.system.logger.info({ event: 'member.test-fact-4' }, 'fourth fact');
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).not.toContain('member.test-fact-4');
    vi.advanceTimersByTime(50);
    await flushMicrotasks();
    expect(seen.map((e) => e.event)).toContain('member.test-fact-4');
  }, 30_000);
});
