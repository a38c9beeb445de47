import type { ActorSystem, DeadLetter, Message } from '../../packages/core/src/index.js';
import { type WireConfig, WsTransport } from '../../packages/wire/src/index.js';
import { startedClosedAfterEach } from './started-closed-after-each.js';

export interface TestNode {
  readonly transport: WsTransport;
  readonly system: ActorSystem;
  readonly deadLetters: DeadLetter[];
  /** Messages received by `/user/inbox`, in arrival order. */
  readonly inbox: Message[];
}

/** A node on 127.0.0.1 with a free port, an `/user/inbox` function actor and test message types. */
export async function startTestNode(
  options: {
    cluster?: string;
    secret?: string;
    wire?: Partial<WireConfig>;
    port?: number;
    host?: string;
  } = {},
): Promise<TestNode> {
  const transport = await WsTransport.start({
    cluster: options.cluster ?? 'test',
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    wire: { secret: options.secret ?? 'sesame', ...options.wire },
  });
  const system = transport.system;
  system.messageTypes.register(['test.ping', 'test.pong', 'test.n', 'test.big', 'test.ask', 'test.reply']);
  const deadLetters: DeadLetter[] = [];
  system.deadLetters.subscribe((l) => deadLetters.push(l));
  const inbox: Message[] = [];
  system.functionRef('inbox', (m) => inbox.push(m), 'user');
  return { transport, system, deadLetters, inbox };
}

/** A starter of test nodes (`startTestNode`) whose nodes are all closed after each test of the file. */
export function testNodesClosedAfterEach(): (
  options?: Parameters<typeof startTestNode>[0],
) => Promise<TestNode> {
  return startedClosedAfterEach(startTestNode);
}
