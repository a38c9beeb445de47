import { describe, expect, it } from 'vitest';
import { batchFrameOf, CloseCode, MAX_ROUTES } from '../../packages/wire/src/index.js';
import { type TestNode, testNodesClosedAfterEach } from '../support/nodes.js';
import { batchPackr, connectRaw, handshake, type RawPeerWithChallenge } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const node = testNodesClosedAfterEach();

const rejected = (n: TestNode, reason: string) =>
  n.system.metrics.value('doyen_wire_rejected_total', { reason });

/** A fresh node and a raw connection to it, not yet through the handshake. */
async function nodeAndRaw(
  options?: Parameters<typeof node>[0],
): Promise<{ n: TestNode; raw: RawPeerWithChallenge }> {
  const n = await node(options);
  return { n, raw: await connectRaw(n.transport.port) };
}

/** `raw` is closed with `code`, and the node counted the refusal once under `reason`. */
async function expectClosed(
  n: TestNode,
  raw: RawPeerWithChallenge,
  code: number,
  reason: string,
): Promise<void> {
  expect(await raw.closed).toMatchObject({ code });
  expect(rejected(n, reason)).toBe(1);
}

/** After abuse, a well-behaved peer must still get through. */
async function stillServes(n: TestNode) {
  const peer = await node();
  const before = n.inbox.length;
  peer.system.refFor(n.system.lookup('/user/inbox')!.id).send({ type: 'test.ping' });
  await eventually(() => n.inbox.length === before + 1, { what: 'a healthy peer to get through' });
}

describe('wire boundary: every bad input gets a reason and a drop or a close', () => {
  it('wrong cluster name closes with 4001', async () => {
    const { n, raw } = await nodeAndRaw();
    void handshake(raw, { cluster: 'other', secret: 'sesame' });
    await expectClosed(n, raw, CloseCode.wrongCluster, 'wrong-cluster');
    await stillServes(n);
  });

  it('wrong protocol version closes with 4002', async () => {
    const { n, raw } = await nodeAndRaw();
    void handshake(raw, { cluster: 'test', secret: 'sesame', version: 99 });
    const closed = await raw.closed;
    expect(closed.code).toBe(CloseCode.wrongVersion);
    // an unauthenticated peer gets the code, never details (those go to our log)
    expect(closed.reason).toBe('handshake failed');
    expect(rejected(n, 'wrong-version')).toBe(1);
  });

  it('a bad proof of the secret closes with 4003 and nothing reaches an actor', async () => {
    const { n, raw } = await nodeAndRaw();
    void handshake(raw, { cluster: 'test', secret: 'guess' });
    await expectClosed(n, raw, CloseCode.badProof, 'bad-proof');
    expect(n.inbox).toHaveLength(0);
    await stillServes(n);
  });

  it('a peer that never completes the handshake is closed with 4004', async () => {
    const { n, raw } = await nodeAndRaw({ wire: { handshakeTimeoutMs: 100 } });
    await expectClosed(n, raw, CloseCode.handshakeTimeout, 'handshake-timeout');
  });

  it('messages before the handshake close with 4005', async () => {
    const { n, raw } = await nodeAndRaw();
    await raw.challenge;
    raw.send(batchFrameOf([['/user/inbox', n.system.node.uid, null, { type: 'test.ping' }]]));
    await expectClosed(n, raw, CloseCode.handshakeRequired, 'before-handshake');
    expect(n.inbox).toHaveLength(0);
  });

  it('text frames close with 1003, undecodable hello with 1007, msgpack outside the wire grammar with 1003', async () => {
    const n = await node();
    const a = await connectRaw(n.transport.port);
    a.sendRaw('hello');
    expect(await a.closed).toMatchObject({ code: CloseCode.unsupportedData });
    const b = await connectRaw(n.transport.port);
    b.sendRaw(Buffer.from([0x93, 0x01, 0x02])); // an array of three with two elements
    expect(await b.closed).toMatchObject({ code: CloseCode.invalidPayload, reason: 'handshake failed' });
    const c = await connectRaw(n.transport.port);
    c.sendRaw(Buffer.from([0xc1, 0xff, 0x00]));
    expect(await c.closed).toMatchObject({ code: CloseCode.unsupportedData });
    expect(rejected(n, 'text-frame')).toBe(1);
    expect(rejected(n, 'malformed-msgpack')).toBe(1);
    expect(rejected(n, 'unsupported-msgpack')).toBe(1);
  });

  it('after the handshake: malformed MessagePack closes with 1007', async () => {
    const { n, raw } = await nodeAndRaw();
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    raw.sendRaw(Buffer.from([0x92, 0xc1]));
    await expectClosed(n, raw, CloseCode.invalidPayload, 'malformed-msgpack');
    await stillServes(n);
  });

  it('after the handshake: a frame that is not a batch closes with 1007', async () => {
    const { n, raw } = await nodeAndRaw();
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    raw.sendRaw(batchPackr().pack({ not: 'a batch' }));
    await expectClosed(n, raw, CloseCode.invalidPayload, 'bad-batch');
  });

  it('a malformed traceparent costs the trace, not the message; a good one is kept', async () => {
    const n = await node();
    const uid = n.system.node.uid;
    const raw = await connectRaw(n.transport.port);
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    const good = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    raw.sendRaw(
      batchPackr().pack(
        batchFrameOf([
          ['/user/inbox', uid, null, { type: 'test.ping', n: 1 }, good],
          ['/user/inbox', uid, null, { type: 'test.ping', n: 2 }, 'not-a-traceparent'],
          [
            '/user/inbox',
            uid,
            null,
            { type: 'test.ping', n: 3 },
            `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
          ],
          ['/user/inbox', uid, null, { type: 'test.ping', n: 4 }, { nested: 'object' }],
          ['/user/inbox', uid, null, { type: 'test.ping', n: 5 }, good, 'sixth'],
        ]),
      ),
    );
    await eventually(() => n.inbox.length === 4, { what: 'four messages delivered' });
    expect(n.inbox.map((m) => (m as unknown as { n: number }).n)).toEqual([1, 2, 3, 4]);
    expect(rejected(n, 'bad-trace-context')).toBe(3);
    expect(rejected(n, 'bad-envelope')).toBe(1);
  });

  it('bad envelopes, unknown types and invalid messages are dropped one by one; good ones pass', async () => {
    const n = await node();
    const uid = n.system.node.uid;
    const raw = await connectRaw(n.transport.port);
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    const packr = batchPackr();
    raw.sendRaw(
      packr.pack(
        batchFrameOf([
          ['/user/inbox', uid, null, { type: 'test.ping', n: 1 }],
          ['no-slash', uid, null, { type: 'test.ping' }],
          ['/user/inbox', uid, null, 'not a map'],
          ['/user/inbox', uid],
          ['/user/inbox', uid, null, { type: 'evil.unknown' }],
          ['/system/death-watch', uid, null, { type: 'doyen.watch', target: 42 }],
          ['/user/nobody', uid, null, { type: 'test.ping' }],
          ['/user/inbox', uid, null, { type: 'test.ping', n: 2 }],
        ]),
      ),
    );
    await eventually(() => n.inbox.length === 2, { what: 'the two good messages' });
    expect(n.inbox).toEqual([
      { type: 'test.ping', n: 1 },
      { type: 'test.ping', n: 2 },
    ]);
    expect(rejected(n, 'bad-envelope')).toBe(3);
    expect(rejected(n, 'unknown-type')).toBe(1);
    expect(rejected(n, 'invalid-message')).toBe(1);
    await eventually(() => n.deadLetters.some((l) => l.reason === 'no-such-actor'), {
      what: 'unknown recipient',
    });
    // the connection stays open: dropping envelopes is enough
    expect(raw.socket.readyState).toBe(raw.socket.OPEN);
    raw.socket.close();
  });

  it('a batch frame names its incarnation and routes once: a bad header drops the frame, a bad index the message', async () => {
    const n = await node();
    const uid = n.system.node.uid;
    const raw = await connectRaw(n.transport.port);
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    const packr = batchPackr();
    const ping = (k: number) => ({ type: 'test.ping', n: k });
    const inbox = ['/user/inbox', null];
    // positive control: a frame of the same layout, well formed, is delivered whole
    raw.sendRaw(packr.pack([uid, [inbox, ['/user/other', null]], 0, ping(1), 1, ping(2), 0, ping(3)]));
    await eventually(() => n.inbox.length === 2, { what: 'the well-formed frame' });
    const frames: unknown[][] = [
      [uid, [inbox, inbox], 0, ping(10), 1, ping(11)], // a route listed twice
      [uid, [inbox, ['/user/a', null], ['/user/b', null]], 0, ping(12), 1, ping(13)], // more routes than messages
      [uid, [], 0, ping(14)], // no routes
      [uid, [inbox], 0, ping(15), 0], // an index without its message
      [42, [inbox], 0, ping(16)], // no incarnation
      [uid, 'not routes', 0, ping(17)],
      [uid, [inbox]], // no messages
    ];
    for (const f of frames) raw.sendRaw(packr.pack(f));
    // index out of range, negative, fractional, not a number: those messages alone are dropped
    raw.sendRaw(
      packr.pack([uid, [inbox], 1, ping(20), -1, ping(21), 0.5, ping(22), 'x', ping(23), 0, ping(4)]),
    );
    await eventually(() => n.inbox.length === 3, { what: 'the last good message' });
    expect(n.inbox.map((m) => (m as unknown as { n: number }).n)).toEqual([1, 3, 4]);
    expect(rejected(n, 'bad-batch-header')).toBe(frames.length);
    expect(rejected(n, 'bad-envelope')).toBe(4);
    // as many routes as the cap allows are taken, one more is not
    const many = (routes: number) => {
      const f: unknown[] = [uid, Array.from({ length: routes }, (_, i) => [`/user/r${i}`, null])];
      for (let i = 0; i < routes; i++) f.push(i, ping(i));
      return f;
    };
    raw.sendRaw(packr.pack(many(MAX_ROUTES + 1)));
    raw.sendRaw(packr.pack(many(MAX_ROUTES)));
    await eventually(() => n.deadLetters.filter((l) => l.reason === 'no-such-actor').length >= MAX_ROUTES, {
      what: 'every message of the frame at the cap',
    });
    expect(rejected(n, 'bad-batch-header')).toBe(frames.length + 1);
    // a frame for another incarnation of this node: its messages are dead letters, nothing delivered
    raw.sendRaw(packr.pack([`${uid}x`, [inbox], 0, ping(30)]));
    await eventually(() => n.deadLetters.some((l) => l.reason === 'wrong-incarnation'), {
      what: 'the wrong incarnation',
    });
    expect(n.inbox).toHaveLength(3);
    expect(raw.socket.readyState).toBe(raw.socket.OPEN);
    raw.socket.close();
  });

  it('a frame over the size limit closes with 1009', async () => {
    const { n, raw } = await nodeAndRaw({ wire: { maxFrameBytes: 64 * 1024, batchBytes: 16 * 1024 } });
    await handshake(raw, { cluster: 'test', secret: 'sesame' });
    raw.sendRaw(Buffer.alloc(100 * 1024));
    expect(await raw.closed).toMatchObject({ code: CloseCode.tooBig });
    await eventually(() => rejected(n, 'frame-too-large') === 1);
    await stillServes(n);
  });

  it('too many unauthenticated connections are refused with 4006', async () => {
    const n = await node({ wire: { maxPendingHandshakes: 2 } });
    const held = [await connectRaw(n.transport.port), await connectRaw(n.transport.port)];
    await Promise.all(held.map((h) => h.challenge));
    const third = await connectRaw(n.transport.port);
    expect(await third.closed).toMatchObject({ code: CloseCode.tooManyHandshakes });
    for (const h of held) h.socket.close();
    await Promise.all(held.map((h) => h.closed));
    await stillServes(n);
  });
});
