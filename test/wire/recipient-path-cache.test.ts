// The wire's cache of validated recipient paths (packages/wire/src/validation.ts) keeps the paths
// that recur, not the reply address of every ask: each `/temp/ask-<n>` or `/system/temp/ask-<n>` is
// used once, and caching them made a sawtooth of ~0.5 MB per node up to the cap (found by the soak).
// The positive control sends to as many distinct ordinary paths and sees the cache grow by as many.
import { describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import type { ActorRef, Message } from '../../packages/core/src/index.js';
import { cachedRecipientPathCount } from '../../packages/wire/src/validation.js';
import { testNodesClosedAfterEach } from '../support/nodes.js';
import { eventually } from '../support/wait.js';

const node = testNodesClosedAfterEach();

type Ask = { type: 'test.ask'; n: number; replyTo: ActorRef<Reply> };
type Reply = { type: 'test.reply'; n: number; from: string };

const echo = fromTransition((count: number, e: Message) => {
  const m = e as Ask;
  if (m.type === 'test.ask') m.replyTo.send({ type: 'test.reply', n: m.n, from: 'echo' });
  return count + 1;
}, 0);

const ASKS = 400;

describe('recipient path cache', () => {
  it('does not grow with asks: their one-off reply paths (user and system lane) are validated, not cached', async () => {
    const a = await node();
    const b = await node();
    const userEcho = a.system.refFor<Ask>(b.system.spawn(echo, { name: 'echo' }).id);
    // a system-lane target: its asks reply to /system/temp/ask-<n>
    const systemEcho = a.system.refFor<Ask>(
      b.system.functionRef('echo', (m) => {
        const ask = m as Ask;
        ask.replyTo.send({ type: 'test.reply', n: ask.n, from: 'system-echo' });
      }).id,
    );
    const ask = (target: ActorRef<Ask>, n: number) =>
      target.ask<Reply>((replyTo) => ({ type: 'test.ask', n, replyTo }), { timeout: 10_000 });
    // the connections and the two targets' paths once, before counting
    await ask(userEcho, -1);
    await ask(systemEcho, -1);
    const before = cachedRecipientPathCount();

    const replies = await Promise.all(
      Array.from({ length: ASKS }, (_, n) => ask(n % 2 === 0 ? userEcho : systemEcho, n)),
    );
    expect(replies.map((r) => r.n)).toEqual(Array.from({ length: ASKS }, (_, n) => n));
    expect(replies.filter((r) => r.from === 'system-echo')).toHaveLength(ASKS / 2);
    // every reply crossed the wire to a path of its own, and none of them stayed in the cache
    expect(cachedRecipientPathCount()).toBe(before);
  });

  it('positive control: as many distinct ordinary paths are cached, one entry each', async () => {
    const a = await node();
    const b = await node();
    const inbox = a.system.refFor(b.system.lookup('/user/inbox')!.id);
    inbox.send({ type: 'test.ping' });
    await eventually(() => b.inbox.length === 1, { what: 'the first ping' });
    const before = cachedRecipientPathCount();
    // the same envelope check as the asks' replies, to recipients that are not temp paths
    for (let n = 0; n < ASKS; n++)
      a.system.refFor(inbox.id.replace('/user/inbox', `/user/nobody-${n}`)).send({ type: 'test.ping' });
    await eventually(() => b.deadLetters.length >= ASKS, { what: 'every ping dead-lettered on b' });
    expect(cachedRecipientPathCount() - before).toBe(ASKS);
  });
});
