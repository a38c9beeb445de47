// The `--app` module of the sharding crash tests (`doyen node --app test/support/sharding-crash-app.ts`):
// a sharded counter on the `shard` role; partitions are owned by that role only, so a node
// without it (the test's own) only routes.
import type { ActorRef, Message } from '../../packages/core/src/index.js';
import { fromTransition } from '../../packages/core/src/index.js';
import type { DoyenNode } from '../../packages/doyen/src/index.js';

export const SHARD_ROLE = 'shard';
export const COUNTER = 'counter';
export const CRASH_PARTITIONS = 64;

export const config = { partitions: { role: SHARD_ROLE, count: CRASH_PARTITIONS } };

export type CounterEvent =
  | { readonly type: 'ct.add' }
  | { readonly type: 'ct.get'; readonly replyTo: ActorRef<CounterReply> };

export interface CounterReply extends Message {
  readonly type: 'ct.count';
  readonly count: number;
}

export const counterLogic = fromTransition((count: number, event: CounterEvent) => {
  if (event.type === 'ct.add') return count + 1;
  if (event.type === 'ct.get') event.replyTo.send({ type: 'ct.count', count } satisfies CounterReply);
  return count;
}, 0);

/** On every node (the test's too): the message types and the type. */
export function registerCounter(node: DoyenNode) {
  node.system.messageTypes.register(['ct.add', 'ct.get', 'ct.count']);
  // the test's overlap check reads every activation and stop from the log: the lines at info
  return node.sharding!.register(COUNTER, counterLogic, { role: SHARD_ROLE, activationLog: 'info' });
}

export function setup(node: DoyenNode): void {
  registerCounter(node);
}
