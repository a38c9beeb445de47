import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { type ActorRef, ActorSystemTerminatedError } from '../../packages/core/src/index.js';
import {
  type DoyenNode,
  type IncarnationInfo,
  type NodeConfig,
  SHUTDOWN_PHASES,
  startNode,
} from '../../packages/doyen/src/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { counter } from '../support/counter-singleton.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { manualMembers, TEST_SECRET as SECRET } from '../support/manual-members.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

type Ask = { type: 'greet'; replyTo: ActorRef<{ type: 'greeting'; text: string }> };
const greeter = setup({ types: { events: {} as Ask } }).createMachine({
  on: { greet: { actions: ({ event }) => event.replyTo.send({ type: 'greeting', text: 'hello' }) } },
});

interface AppLog {
  incarnations: IncarnationInfo[];
  events: Map<number, string[]>;
  /** The current incarnation's singleton proxy. */
  proxy?: ActorRef;
}
const newLog = (): AppLog => ({ incarnations: [], events: new Map() });

/** The app: an actor, a singleton and a cluster subscription, all made in setup. */
function app(log: AppLog, handOverSnapshot = false) {
  return (node: DoyenNode, incarnation: IncarnationInfo) => {
    log.incarnations.push(incarnation);
    node.system.messageTypes.register(['greet', 'greeting', 'count', 'total', 'total.is']);
    node.system.spawn(greeter, { name: 'greeter' });
    log.proxy = node.singletons.register('counter', counter, { handOverSnapshot });
    const seen: string[] = [];
    log.events.set(incarnation.number, seen);
    node.cluster.subscribe((e) => seen.push(e.type));
  };
}

async function start(port: number, seed: number, extra: Partial<NodeConfig> = {}) {
  return startMemberNode(
    port,
    seed,
    {
      ...manualMembers('lifecycle'),
      ...extra,
    },
    {},
    nodes,
  );
}

const greet = (n: DoyenNode) =>
  n.system
    .lookup('/user/greeter')!
    .ask<{ type: 'greeting'; text: string }>((replyTo) => ({ type: 'greet', replyTo }), { timeout: 3000 });
const total = (log: AppLog) =>
  log.proxy!.ask<{ type: 'total.is'; count: number }>((replyTo) => ({ type: 'total', replyTo }) as never, {
    timeout: 5000,
  });

describe('setup runs for every incarnation', () => {
  it("an app's actor, singleton proxy and subscription answer again after the node was downed and came back; old refs fail loudly", async () => {
    const [p1, p2] = await freePorts(2);
    const firstLog = newLog();
    const secondLog = newLog();
    const first = await start(p1!, p1!, { setup: app(firstLog) });
    const second = await start(p2!, p1!, { setup: app(secondLog, true) });
    expect(secondLog.incarnations).toEqual([{ number: 1, reason: 'start' }]);
    expect((await greet(second)).text).toBe('hello');
    secondLog.proxy!.send({ type: 'count' } as never);
    expect((await total(secondLog)).count).toBe(1);
    const oldGreeter = second.system.lookup('/user/greeter')!;
    const oldUid = second.system.node.uid;

    first.cluster.down(`127.0.0.1:${p2}#${oldUid}`);
    await eventually(() => second.incarnations === 2 && second.cluster.state().status === 'up', {
      timeoutMs: 15_000,
      what: 'the second node back as a new incarnation',
    });
    expect(secondLog.incarnations).toEqual([
      { number: 1, reason: 'start' },
      { number: 2, reason: 'downed' },
    ]);
    // the actor and the proxy answer again, in the new incarnation
    expect((await greet(second)).text).toBe('hello');
    secondLog.proxy!.send({ type: 'count' } as never);
    await eventually(async () => (await total(secondLog)).count === 2, { what: 'the singleton counting on' });
    // the subscription made in setup hears the new incarnation's cluster
    await eventually(() => secondLog.events.get(2)!.includes('member.up'), {
      what: 'member.up in incarnation 2',
    });
    // a ref of the ended incarnation fails loudly, never silently
    await expect(
      oldGreeter.ask((replyTo) => ({ type: 'greet', replyTo }) as never, { timeout: 500 }),
    ).rejects.toBeInstanceOf(ActorSystemTerminatedError);
    expect(firstLog.incarnations).toHaveLength(1);
  });

  it('a setup that throws fails startNode and leaves nothing bound (the port is free again)', async () => {
    const [p1] = await freePorts(1);
    await expect(
      start(p1!, p1!, {
        setup: () => {
          throw new Error('app broke');
        },
      }),
    ).rejects.toThrow('app broke');
    const again = await start(p1!, p1!);
    expect(again.cluster.state().status).toBe('up');
  });
});

describe('coordinated shutdown', () => {
  it('runs the phases in order, survives a throwing and a hanging task, and hands the singleton over before closing', async () => {
    const [p1, p2] = await freePorts(2);
    const lines: string[] = [];
    const events = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const order: string[] = [];
    const first = await startNode(
      {
        cluster: 'lifecycle',
        host: '127.0.0.1',
        port: p1!,
        seeds: [{ host: '127.0.0.1', port: p1! }],
        secret: SECRET,
        partitions: { count: 0 },
        shutdown: { phaseTimeoutsMs: { 'before-leave': 300 } },
        setup: (node) => {
          node.system.messageTypes.register(['count', 'total', 'total.is']);
          node.singletons.register('counter', counter, { handOverSnapshot: true });
        },
      },
      { logger: captureLogger(lines, Date.now, 'info') },
    );
    nodes.push(first);
    const secondLog = newLog();
    const second = await start(p2!, p1!, { setup: app(secondLog, true) });
    await eventually(() => first.singletons.list().find((s) => s.name === 'counter')?.runsHere === true);
    secondLog.proxy!.send({ type: 'count' } as never);
    secondLog.proxy!.send({ type: 'count' } as never);
    expect((await total(secondLog)).count).toBe(2);
    const tasks = first.coordinatedShutdown;
    for (const phase of SHUTDOWN_PHASES)
      tasks.addTask(phase, `record-${phase}`, () => void order.push(phase));
    tasks.addTask('before-leave', 'hangs', () => new Promise(() => {}));
    tasks.addTask('before-leave', 'throws', () => {
      throw new Error('hook broke');
    });
    // the singleton still runs on the first node when its transport is about to close
    let singletonHereAtClose: boolean | undefined;
    tasks.addTask('close', 'check', () => {
      singletonHereAtClose = first.singletons.list().some((s) => s.runsHere);
    });
    expect(() => tasks.addTask('nope' as never, 'x', () => {})).toThrow(/unknown shutdown phase/);

    const started = Date.now();
    await first.shutdown('test');
    expect(await first.closed).toBe('shutdown');
    expect(order).toEqual([...SHUTDOWN_PHASES]);
    expect(singletonHereAtClose).toBe(false);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(
      events()
        .filter((e) => e.event === 'shutdown.phase')
        .map((e) => e.phase),
    ).toEqual([...SHUTDOWN_PHASES]);
    expect(events().find((e) => e.event === 'shutdown.phase-timeout')).toMatchObject({
      phase: 'before-leave',
      pending: ['hangs'],
    });
    expect(events().find((e) => e.event === 'shutdown.task-failed')).toMatchObject({ task: 'throws' });
    // the other node runs the singleton promptly, its state handed over
    await eventually(() => second.singletons.list().find((s) => s.name === 'counter')?.runsHere === true, {
      timeoutMs: 3000,
      what: 'the singleton on the second node',
    });
    expect((await total(secondLog)).count).toBe(2);
  });
});
