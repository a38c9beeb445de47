import fc from 'fast-check';
import { Packr, Unpackr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import type { Message } from '../../packages/core/src/index.js';
import { freePorts } from '../../packages/testkit/src/free-ports.js';
import {
  BatchEncoder,
  batchFrameOf,
  CLOSE_CODE_OF,
  decodeHello,
  encodeChallenge,
  encodeWelcome,
  MAX_ROUTES,
  NodeIdentity,
  PROTOCOL_VERSION,
  type RejectReason,
  signedWelcome,
  transcriptOf,
} from '../../packages/wire/src/index.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import {
  connectRaw,
  type FakeAcceptor,
  handshake,
  helloFrame,
  startFakeAcceptor,
} from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

/** Runs per handshake state; raise with DOYEN_FUZZ_RUNS for a longer soak. */
const RUNS = Number(process.env.DOYEN_FUZZ_RUNS ?? 60);
/** Generous: a run takes a few milliseconds, but the machine may be loaded. */
const TIMEOUT_MS = 30_000 + RUNS * 250;

const plain = new Packr({ useRecords: false });
const unplain = new Unpackr({ useRecords: false });
const cleanups: (() => Promise<void>)[] = [];
const crashes: unknown[] = [];
const onCrash = (error: unknown) => {
  crashes.push(error);
  console.error('uncaught during fuzzing', error);
};
afterEach(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

const REASONS: RejectReason[] = [
  ...(Object.keys(CLOSE_CODE_OF) as RejectReason[]),
  'bad-envelope',
  'bad-batch-header',
  'unknown-type',
  'invalid-message',
];
const totalRejected = (n: TestNode) =>
  REASONS.reduce((sum, reason) => sum + n.system.metrics.value('doyen_wire_rejected_total', { reason }), 0);

// ---- generators -----------------------------------------------------------------------------

const INTERESTING = [
  0x00, 0x40, 0x72, 0x7f, 0x80, 0x90, 0xc1, 0xc7, 0xc9, 0xd4, 0xd5, 0xdc, 0xdd, 0xdf, 0xff,
];

type Mutation =
  | { kind: 'set'; at: number; byte: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate'; at: number; length: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('set' as const),
    at: fc.nat(),
    byte: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...INTERESTING)),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 64 }),
  }),
);

function mutate(frame: Buffer, mutations: readonly Mutation[]): Buffer {
  let b = Buffer.from(frame);
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === 'set' && b.length > 0) b[at] = m.byte;
    else if (m.kind === 'insert') b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
    else if (m.kind === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.length)]);
    else if (m.kind === 'truncate') b = b.subarray(0, at);
    else if (m.kind === 'duplicate') b = Buffer.concat([b.subarray(0, at + m.length), b.subarray(at)]);
  }
  return b.length === 0 ? Buffer.from([0xc0]) : b;
}

/** Hostile frames that are not mutations: random bytes, deep nesting, every extension type, length bombs. */
const hostile: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 600 }).map((a) => Buffer.from(a)),
  fc
    .integer({ min: 1, max: 5000 })
    .map((depth) => Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0x01])])),
  fc.integer({ min: 0, max: 255 }).map((type) => Buffer.from([0x91, 0xd4, type, 0x00])),
  fc
    .tuple(fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 40 }))
    .map(([type, data]) => Buffer.concat([Buffer.from([0x91, 0xc7, data.length, type]), data])),
  fc.constantFrom(
    Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
    Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff]),
    Buffer.from([0x91, 0xd4, 0x72, 0x40, 0x91, 0xa1, 0x61, 0x40]),
    new Packr({ structuredClone: true }).pack(
      (() => {
        const o: Record<string, unknown> = {};
        o.o = o;
        return [o];
      })(),
    ),
  ),
);

/** Either a mutation of one of the valid frames or a hostile frame. */
const frameFrom = (valid: Buffer[]): fc.Arbitrary<Buffer> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...valid), fc.array(mutation, { minLength: 1, maxLength: 4 }))
        .map(([f, ms]) => mutate(f, ms)),
    },
    { weight: 2, arbitrary: hostile },
  );

// ---- helpers --------------------------------------------------------------------------------

/** Resolves when the socket closes or `until` holds, whichever first (bounded by `ms`). */
async function settle(
  socket: WebSocket,
  until: () => boolean,
  ms = 2000,
): Promise<'closed' | 'done' | 'timeout'> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (socket.readyState === socket.CLOSED || socket.readyState === socket.CLOSING) return 'closed';
    if (until()) return 'done';
    await new Promise((r) => setTimeout(r, 2));
  }
  return 'timeout';
}

async function fuzzNode(): Promise<TestNode> {
  crashes.length = 0;
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const n = await startTestNode({
    wire: { handshakeTimeoutMs: 1000, reconnectMinMs: 1, reconnectMaxMs: 10, reconnectJitter: 0 },
  });
  cleanups.push(() => n.transport.close());
  return n;
}

// ---- properties -----------------------------------------------------------------------------

describe('fuzzing the wire: every handshake state, both sides', { timeout: TIMEOUT_MS }, () => {
  it('before the hello: mutated hellos and hostile frames never crash the node', async () => {
    const n = await fuzzNode();
    const heapBefore = process.memoryUsage().heapUsed;
    let welcomed = 0;
    const sampleNonce = Buffer.alloc(16, 1);
    const hello = plain.pack(
      helloFrame({ port: n.transport.port }, sampleNonce, { cluster: 'test', secret: 'sesame' }),
    );
    await fc.assert(
      fc.asyncProperty(
        frameFrom([hello, plain.pack(encodeChallenge({ version: PROTOCOL_VERSION, nonce: sampleNonce }))]),
        async (frame) => {
          const raw = await connectRaw(n.transport.port);
          await raw.challenge;
          let answered = false;
          raw.socket.once('message', () => {
            answered = true;
            welcomed++;
          });
          raw.sendRaw(frame);
          const outcome = await settle(raw.socket, () => answered);
          raw.socket.terminate();
          expect(outcome).not.toBe('timeout');
        },
      ),
      { numRuns: RUNS },
    );
    // positive control: the frames reached the hello decoder and were refused there
    expect(totalRejected(n)).toBeGreaterThan(RUNS * 0.8);
    expect(welcomed).toBe(0); // the proofs were signed over another challenge
    expect(crashes).toEqual([]);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(150 * 1024 * 1024);
    await eventually(() => n.transport.pendingHandshakeCount === 0, { what: 'no handshake left pending' });
  });

  for (const lane of ['system', 'user'] as const) {
    it(`after the hello on the ${lane} lane: mutated batches and hostile frames never crash the node`, async () => {
      const n = await fuzzNode();
      const heapBefore = process.memoryUsage().heapUsed;
      const uid = n.system.node.uid;
      const path = lane === 'system' ? '/system/fuzz-sink' : '/user/inbox';
      const ref = n.system.refFor(`doyen://test@127.0.0.1:${n.transport.port}/user/inbox#${uid}`);
      const encoder = new BatchEncoder();
      const batches = [
        encoder.encode(
          batchFrameOf([[path, uid, null, { type: 'test.ping', ref, nested: { a: [1, 2, 'x'], b: null } }]]),
        ),
        encoder.encode(
          batchFrameOf([
            [path, uid, null, { type: 'test.ping', ref, nested: { a: [3], b: true } }],
            // a sender on the raw peer's own node (127.0.0.1:1#rawpeer): one on another node is forged
            [path, uid, 'doyen://test@127.0.0.1:1/user/x#rawpeer', { type: 'test.n', n: 1.5 }],
          ]),
        ),
        plain.pack(batchFrameOf([[path, uid, null, { type: 'test.ping' }]])),
      ];
      // positive control: the unmutated frames are taken on this lane
      const control = await connectRaw(n.transport.port);
      await handshake(control, { cluster: 'test', secret: 'sesame', lane });
      for (const f of batches) control.sendRaw(f);
      await eventually(() => n.system.metrics.value('doyen_wire_messages_received_total', { lane }) === 4, {
        what: 'the unmutated batches',
      });
      control.socket.close();
      let probes = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(frameFrom(batches), { minLength: 1, maxLength: 3 }), async (frames) => {
          const raw = await connectRaw(n.transport.port);
          await handshake(raw, { cluster: 'test', secret: 'sesame', lane });
          for (const f of frames) raw.sendRaw(f);
          // a probe behind the fuzz: either it arrives, or the fuzz closed the connection
          const probe = ++probes;
          raw.sendRaw(plain.pack(batchFrameOf([['/user/inbox', uid, null, { type: 'test.ping', probe }]])));
          const arrived = () => n.inbox.some((m) => (m as unknown as { probe?: number }).probe === probe);
          const outcome = await settle(raw.socket, arrived);
          raw.socket.terminate();
          expect(outcome).not.toBe('timeout');
        }),
        { numRuns: RUNS },
      );
      // positive control: the fuzzed frames reached the batch decoder and were refused there
      expect(totalRejected(n)).toBeGreaterThan(RUNS * 0.5);
      expect(crashes).toEqual([]);
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(150 * 1024 * 1024);
      await eventually(
        () => n.transport.inboundConnections === 0 && n.transport.pendingHandshakeCount === 0,
        {
          what: 'every fuzzed connection to be gone',
        },
      );
    });
  }

  it('batch frames with fuzzed headers, routes and route indexes are dropped, never crash, never misdeliver', async () => {
    const n = await fuzzNode();
    const uid = n.system.node.uid;
    const ping = { type: 'test.ping' };
    const anything = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer({ min: -5, max: MAX_ROUTES + 5 }),
      fc.double(),
      fc.string({ maxLength: 8 }),
      fc.constantFrom(uid, `${uid}0`, '/user/inbox', '/user/../x', 'doyen://test@127.0.0.1:1/user/x#rawpeer'),
      fc.array(fc.constantFrom('/user/inbox', null, 3, 'x'), { maxLength: 4 }),
    );
    const route = fc.oneof(
      { weight: 3, arbitrary: fc.constant(['/user/inbox', null]) },
      fc.tuple(fc.constantFrom('/user/inbox', '/user/other', '/user/a b', ''), fc.constantFrom(null, 'x', 7)),
      fc.array(anything, { maxLength: 4 }),
      anything,
    );
    // a frame [toUid, routes, index, message, …] with any part replaced by something else
    const frame = fc
      .record({
        toUid: fc.oneof({ weight: 3, arbitrary: fc.constant(uid) }, anything),
        routes: fc.oneof(
          { weight: 3, arbitrary: fc.array(route, { maxLength: 5 }) },
          anything,
          fc.constant(Array.from({ length: MAX_ROUTES + 1 }, (_, i) => [`/user/r${i}`, null])),
        ),
        entries: fc.array(
          fc.tuple(
            fc.oneof({ weight: 3, arbitrary: fc.nat(6) }, anything),
            fc.oneof(fc.constant(ping), anything),
          ),
          { maxLength: 8 },
        ),
        tail: fc.option(anything, { freq: 5 }),
      })
      .map(({ toUid, routes, entries, tail }) => {
        const f: unknown[] = [toUid, routes, ...entries.flat()];
        if (tail !== null) f.push(tail);
        return f;
      });
    const raw = await connectRaw(n.transport.port);
    await handshake(raw, { cluster: 'test', secret: 'sesame', lane: 'user' });
    // positive control: the same layout, well formed, is delivered (a message per entry)
    raw.sendRaw(plain.pack([uid, [['/user/inbox', null]], 0, { type: 'test.ping', probe: 0 }]));
    await eventually(() => n.inbox.length === 1, { what: 'the well-formed frame' });
    let probes = 0;
    const misdelivered: unknown[] = [];
    await fc.assert(
      fc.asyncProperty(frame, async (f) => {
        const before = n.inbox.length;
        raw.sendRaw(plain.pack(f));
        // a probe behind it: the connection stays open (nothing in a decodable frame closes it)
        const probe = ++probes;
        raw.sendRaw(plain.pack([uid, [['/user/inbox', null]], 0, { type: 'test.ping', probe }]));
        await eventually(() => n.inbox.some((m) => (m as unknown as { probe?: number }).probe === probe), {
          what: `probe ${probe}`,
        });
        // whatever arrived from the fuzzed frame came through a valid route to the inbox, as a ping
        for (const m of n.inbox.slice(before)) if (m.type !== 'test.ping') misdelivered.push(m);
      }),
      { numRuns: RUNS },
    );
    // positive control: the fuzzed frames reached the header and route checks and were refused there
    expect(totalRejected(n)).toBeGreaterThan(RUNS * 0.5);
    expect(
      n.system.metrics.value('doyen_wire_rejected_total', { reason: 'bad-batch-header' }),
    ).toBeGreaterThan(0);
    expect(misdelivered).toEqual([]);
    expect(crashes).toEqual([]);
    expect(raw.socket.readyState).toBe(raw.socket.OPEN);
    raw.socket.terminate();
  });

  it('the dialer side: fuzzed challenges and welcomes from a fake acceptor never crash the node', async () => {
    const n = await fuzzNode();
    const heapBefore = process.memoryUsage().heapUsed;
    const [port] = (await freePorts(1)) as [number];
    const nonce = Buffer.alloc(16, 4);
    const challenge = plain.pack(encodeChallenge({ version: PROTOCOL_VERSION, nonce }));
    // fuzz cases, drawn up front: a fuzzed challenge, or a good challenge and a fuzzed welcome
    type DialCase = { challenge: Buffer; welcomeMutations: Mutation[]; welcomeHostile?: Buffer };
    const fuzzedChallenge = frameFrom([challenge]).map(
      (f): DialCase => ({ challenge: f, welcomeMutations: [] }),
    );
    const fuzzedWelcome = fc
      .tuple(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.option(hostile, { freq: 3 }))
      .map(([ms, h]): DialCase => ({ challenge, welcomeMutations: ms, ...(h ? { welcomeHostile: h } : {}) }));
    const cases = fc.sample(fc.oneof(fuzzedChallenge, fuzzedWelcome), { numRuns: RUNS, seed: 10 });
    let served = 0;
    const fakeIdentity = NodeIdentity.generate();
    const onConnection = (socket: WebSocket) => {
      const c = cases[served++ % cases.length]!;
      socket.send(c.challenge);
      if (c.challenge !== challenge) return;
      socket.once('message', (d: Buffer) => {
        const hello = decodeHello(unplain.unpack(d));
        if (!hello) return;
        const me = { host: '127.0.0.1', port, uid: 'fake' };
        const good = plain.pack(
          encodeWelcome(signedWelcome(me, transcriptOf(hello, nonce), 'sesame', fakeIdentity)),
        );
        socket.send(c.welcomeHostile ?? mutate(good, c.welcomeMutations));
        // the dialer either refused it or took it: end the connection so it dials again
        setTimeout(() => socket.terminate(), 20);
      });
    };
    const fake: FakeAcceptor = await startFakeAcceptor(port, { onConnection });
    cleanups.push(() => fake.close());
    const target = n.system.refFor(`doyen://test@127.0.0.1:${port}/user/inbox#fake`);
    const deadline = Date.now() + 20_000;
    while (served < RUNS && Date.now() < deadline) {
      target.send({ type: 'test.ping' } as Message);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(served).toBeGreaterThanOrEqual(RUNS);
    const failures = [
      'bad-challenge',
      'wrong-version',
      'bad-welcome',
      'bad-proof',
      'wrong-peer',
      'wrong-key',
      'malformed-msgpack',
      'unsupported-msgpack',
      'too-deep',
      'timeout',
    ].reduce(
      (sum, reason) =>
        sum + n.system.metrics.value('doyen_wire_handshake_failures_total', { lane: 'user', reason }),
      0,
    );
    // positive control: the dialer decoded and refused most of what it was sent
    expect(failures).toBeGreaterThan(RUNS * 0.5);
    expect(crashes).toEqual([]);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(150 * 1024 * 1024);
  });
});
