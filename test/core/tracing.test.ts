import { randomBytes } from 'node:crypto';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fromTransition, setup } from 'xstate';
import {
  type ActorRef,
  ActorSystem,
  activeTraceparent,
  isTraceparent,
  type Message,
  silentLogger,
  tracingAvailable,
} from '../../packages/core/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { counter } from '../support/counter-singleton.js';
import { eventually } from '../support/wait.js';

const exporter = new InMemorySpanExporter();
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  // nothing registered yet: doyen has not even loaded the API (it would cost every node's start-up)
  expect(tracingAvailable()).toBe(false);
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  expect(tracingAvailable()).toBe(true);
});
afterAll(() => {
  trace.disable();
  context.disable();
});

const nodes: DoyenNode[] = [];
afterEach(async () => {
  exporter.reset();
  await Promise.all(nodes.splice(0).map((n) => n.close()));
});

const SECRET = randomBytes(16).toString('hex');
type Echo = { type: 'echo'; replyTo: ActorRef<{ type: 'echoed' }> };
const echo = setup({ types: { events: {} as Echo } }).createMachine({
  on: { echo: { actions: ({ event }) => event.replyTo.send({ type: 'echoed' }) } },
});

async function pair(): Promise<[DoyenNode, DoyenNode]> {
  const [p1, p2] = await freePorts(2);
  const start = async (port: number) => {
    const n = await startNode(
      {
        cluster: 'tracing',
        host: '127.0.0.1',
        port,
        seeds: [{ host: '127.0.0.1', port: p1! }],
        secret: SECRET,
        partitions: { count: 0 },
        setup: (node) => {
          node.system.messageTypes.register(['echo', 'echoed', 'count', 'total', 'total.is']);
        },
      },
      { logger: silentLogger() },
    );
    nodes.push(n);
    return n;
  };
  const a = await start(p1!);
  return [a, await start(p2!)];
}

describe('OpenTelemetry trace context across nodes', () => {
  it('an ask to an actor on another node: a client span there, a server span here, one trace', async () => {
    const [a, b] = await pair();
    const target = b.system.spawn(echo, { name: 'echo' });
    await a.system.ask(a.system.refFor(target.id), (replyTo) => ({ type: 'echo', replyTo }), {
      timeout: 3000,
    });
    const spans = await eventually(() => {
      const all = exporter.getFinishedSpans();
      return all.some((s) => s.name === 'doyen.receive') && all;
    });
    const client = spans.find((s) => s.name === 'doyen.ask')!;
    const server = spans.find(
      (s) => s.name === 'doyen.receive' && s.attributes['doyen.recipient'] === '/user/echo',
    )!;
    expect(client.kind).toBe(SpanKind.CLIENT);
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(server.spanContext().traceId).toBe(client.spanContext().traceId);
    expect(server.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
    expect(server.attributes['doyen.message.type']).toBe('echo');
  });

  it('a singleton proxy hop: a producer span where the proxy forwards, a server span where the instance runs, one trace', async () => {
    const [a, b] = await pair();
    a.singletons.register('counter', counter);
    const proxy = b.singletons.register('counter', counter);
    proxy.send({ type: 'count' });
    const spans = await eventually(() => {
      const all = exporter.getFinishedSpans();
      return (
        all.some((s) => s.name === 'doyen.receive' && s.attributes['doyen.message.type'] === 'count') && all
      );
    });
    const hop = spans.find((s) => s.name === 'doyen.singleton.forward')!;
    expect(hop.kind).toBe(SpanKind.PRODUCER);
    expect(hop.attributes['doyen.singleton']).toBe('counter');
    const arrival = spans.find(
      (s) => s.name === 'doyen.receive' && s.attributes['doyen.message.type'] === 'count',
    )!;
    expect(arrival.spanContext().traceId).toBe(hop.spanContext().traceId);
    expect(arrival.parentSpanContext?.spanId).toBe(hop.spanContext().spanId);
  });

  it('without an active span nothing is propagated (positive control of the two above)', () => {
    expect(activeTraceparent()).toBeUndefined();
    const inside = trace.getTracer('app').startActiveSpan('x', (span) => {
      const t = activeTraceparent();
      span.end();
      return t;
    });
    expect(isTraceparent(inside)).toBe(true);
    expect(isTraceparent(`00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`)).toBe(false);
    expect(isTraceparent('01-aaaa')).toBe(false);
  });
});

describe('the client span of a local ask', () => {
  it('ends when the reply comes before `send` returned (a burst running in its caller)', async () => {
    const system = new ActorSystem({
      cluster: 'tracing',
      host: '127.0.0.1',
      port: 1,
      dispatcher: { drainBacklogAt: 32 },
    });
    try {
      let answered = 0;
      const echo = system.spawn(
        fromTransition((count: number, event: Message) => {
          const { replyTo } = event as Message & { replyTo?: ActorRef };
          if (replyTo) {
            answered++;
            replyTo.send({ type: 'pong' });
          }
          return count + 1;
        }, 0),
        { name: 'echo' },
      );
      // a burst from outside: past the drain depth (32 here) its sends run in the caller
      for (let i = 0; i < 100; i++) echo.send({ type: 'inc' });
      const reply = echo.ask((replyTo) => ({ type: 'ping', replyTo }) as Message, { timeout: 3000 });
      // answered on the ask's own stack: the case where settling found no span yet
      expect(answered).toBe(1);
      await reply;
      expect(exporter.getFinishedSpans().filter((s) => s.name === 'doyen.ask')).toHaveLength(1);
    } finally {
      system.terminate();
    }
  });
});
