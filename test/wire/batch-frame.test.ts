// The batch frame (packages/wire/src/batch-frame.ts, protocol 5): the recipient incarnation and
// each distinct route go once per frame, each message carries its route's index. The builder's
// frames, decoded and read back through the receiver's checks, give the envelopes they were built
// from; a frame never mixes incarnations (a burst to two incarnations becomes separate frames).
import { describe, expect, it } from 'vitest';
import { ActorSystem, type Envelope, type Message } from '../../packages/core/src/index.js';
import {
  BatchDecoder,
  BatchEncoder,
  BatchFrameBuilder,
  batchFrameOf,
  FIRST_ENTRY,
  KnownSenders,
  readBatchHeader,
} from '../../packages/wire/src/index.js';
import { testNodesClosedAfterEach } from '../support/nodes.js';
import { eventually } from '../support/wait.js';

const ORIGIN = { host: '127.0.0.1', port: 2, uid: 'sender1', publicKey: 'k' };
const SENDER = (name: string) => `doyen://test@127.0.0.1:2/user/${name}#sender1`;
const TRACE = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;

function envelope(to: string, n: number, from?: string, trace?: string): Envelope {
  const message = { type: 'test.n', n } as Message;
  const e = { to, toUid: 'self1', from, message };
  return trace === undefined ? e : { ...e, trace };
}

/** Encodes, decodes, validates: the envelopes a receiver would deliver, and every refusal. */
function roundTrip(envelopes: Envelope[]) {
  const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1, uid: 'self1' });
  system.messageTypes.register('test.n');
  const frame = new BatchDecoder(32).decode(
    system,
    new BatchEncoder().encodeEnvelopes(envelopes),
  ) as unknown[];
  const refused: string[] = [];
  const header = readBatchHeader(system, frame, ORIGIN, new KnownSenders(), (r) => refused.push(r.reason));
  const delivered: Envelope[] = [];
  for (let i = FIRST_ENTRY; i < frame.length; i += 2) {
    const route = header!.routes[frame[i] as number]!;
    const e = { to: route.to, toUid: header!.toUid, from: route.from, message: frame[i + 1] as Message };
    delivered.push(route.trace === undefined ? e : { ...e, trace: route.trace });
  }
  return { frame, delivered, refused, routes: header?.routes.length };
}

describe('the batch frame', () => {
  it('names each distinct route once, and every message comes back as it was sent', () => {
    const envelopes = [
      envelope('/user/a', 0),
      envelope('/user/a', 1),
      envelope('/user/b', 2, SENDER('x')),
      envelope('/user/a', 3),
      envelope('/user/b', 4, SENDER('x')),
      envelope('/user/b', 5, SENDER('y')),
      envelope('/user/a', 6, undefined, TRACE),
      envelope('/user/a', 7, undefined, TRACE),
      envelope('/user/a', 8),
    ];
    const { frame, delivered, refused, routes } = roundTrip(envelopes);
    expect(refused).toEqual([]);
    expect(routes).toBe(4);
    expect(frame[0]).toBe('self1');
    expect(frame.filter((_, i) => i >= FIRST_ENTRY && i % 2 === 0)).toEqual([0, 0, 1, 0, 1, 2, 3, 3, 0]);
    expect(delivered).toEqual(envelopes.map((e) => (e.from === undefined ? { ...e, from: undefined } : e)));
  });

  it('a frame of one route costs a byte a message beside the message; the tuple encoding paid the path, uid and sender', () => {
    const envelopes = Array.from({ length: 1000 }, (_, n) => envelope('/user/counter', n, SENDER('x')));
    const framed = new BatchEncoder().encodeEnvelopes(envelopes).length;
    const messagesAlone = new BatchEncoder().encode(envelopes.map((e) => e.message)).length;
    // control: the tuples [to, toUid, from, message] each message used to be sent as
    const tuples = new BatchEncoder().encode(envelopes.map((e) => [e.to, e.toUid, e.from, e.message])).length;
    expect(framed - messagesAlone).toBeLessThan(1000 * 1 + 100);
    expect(tuples - messagesAlone).toBeGreaterThan(1000 * 50);
  });

  it('the builder forgets its routes between frames and keeps its string ids only up to a bound', () => {
    const builder = new BatchFrameBuilder();
    for (let round = 0; round < 5; round++) {
      // 4,000 new recipients a frame, 20,000 in all: past KNOWN_STRINGS_MAX the ids start afresh (between frames)
      const envelopes = Array.from({ length: 4000 }, (_, i) =>
        envelope(`/user/r${round}-${i}`, i, SENDER(`s${i % 7}`)),
      );
      const frame = builder.build(envelopes);
      const routes = frame[1] as unknown[][];
      expect(routes).toHaveLength(4000);
      expect(new Set(routes.map((r) => `${r[0]} ${r[1]}`)).size).toBe(4000);
      expect(frame[FIRST_ENTRY + 2 * 3999]).toBe(3999);
    }
  });

  it('batchFrameOf writes hand-made tuples in the same layout', () => {
    expect(
      batchFrameOf([
        ['/user/a', 'u1', null, { type: 't' }],
        ['/user/a', 'u1', null, { type: 't', n: 1 }],
        ['/user/b', 'u1', 'addr', { type: 't' }, TRACE],
      ]),
    ).toEqual([
      'u1',
      [
        ['/user/a', null],
        ['/user/b', 'addr', TRACE],
      ],
      0,
      { type: 't' },
      0,
      { type: 't', n: 1 },
      1,
      { type: 't' },
    ]);
  });
});

const node = testNodesClosedAfterEach();

describe('a burst to two incarnations of one address', () => {
  it('goes out as frames of one incarnation each: the current one delivers, the other is dead-lettered', async () => {
    const a = await node();
    const b = await node();
    const inboxId = b.system.lookup('/user/inbox')!.id;
    const current = a.system.refFor<Message>(inboxId);
    const previous = a.system.refFor<Message>(inboxId.replace(/#.*$/, '#previous1'));
    current.send({ type: 'test.ping', n: -1 } as Message);
    await eventually(() => b.inbox.length === 1, { what: 'the connection' });
    for (let n = 0; n < 300; n++)
      (n % 3 === 0 ? previous : current).send({ type: 'test.ping', n } as Message);
    await eventually(() => b.inbox.length === 201, { what: 'the messages to the current incarnation' });
    await eventually(() => b.deadLetters.filter((l) => l.reason === 'wrong-incarnation').length === 100, {
      what: 'the messages to the previous one',
    });
    const ns = b.inbox.slice(1).map((m) => (m as unknown as { n: number }).n);
    expect(ns).toEqual(Array.from({ length: 300 }, (_, n) => n).filter((n) => n % 3 !== 0));
  });
});
