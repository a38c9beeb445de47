// The receive path's per-connection memo (packages/wire/src/validation.ts, EnvelopeMemo) and the
// compiled schema admissions (MessageTypes, compileRebuild) must refuse exactly what the checks they
// replace refused. The envelope table is the refusal cases of test/wire/boundary.test.ts and the
// security tests, read as one stream through one memo, each beside a fresh check of its own; the
// schema table holds every reader kind, each field broken in turn, against the interpretive rebuild
// the compiled one replaced (kept here as the oracle).
import { describe, expect, it } from 'vitest';
import {
  ActorSystem,
  forgedClaim,
  type Message,
  type MessageSchema,
  read,
  type Shape,
  schema,
} from '../../packages/core/src/index.js';
import {
  checkEnvelope,
  EnvelopeMemo,
  KnownSenders,
  readEnvelope,
} from '../../packages/wire/src/validation.js';

const ORIGIN = { host: '10.0.0.2', port: 2552, uid: 'peer1' };
const FROM = 'doyen://test@10.0.0.2:2552/user/sender#peer1';
const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

type Typed = {
  type: 'test.typed';
  name: string;
  count: number;
  at: number;
  flag: boolean;
  peer: string;
  member: string;
  where: { host: string; port: number };
  kind: 'a' | 'b';
  tags: string[];
  note?: string;
  parent: string | null;
  inner: { depth: number; label: string };
  data: unknown;
};

const typedFields: Shape<Omit<Typed, 'type'>> = {
  name: read.string(16),
  count: read.count,
  at: read.time,
  flag: read.boolean,
  peer: read.address,
  member: read.memberKey,
  where: read.nodeAddress,
  kind: read.oneOf('a', 'b'),
  tags: read.list(read.string(8), 3),
  note: read.optional(read.string(32)),
  parent: read.nullable(read.path),
  inner: read.object({ depth: read.count, label: read.string(4) }),
  data: read.plainData(3, 20),
};

function system(): ActorSystem {
  const s = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1, uid: 'self1' });
  s.messageTypes.register(['test.ping', 'test.n']);
  s.messageTypes.register(
    'test.typed',
    schema<Typed>(typedFields, (m) => [m.member], 'anyone'),
  );
  s.messageTypes.register(
    'test.members-only',
    schema<{ type: 'test.members-only'; n: number }>({ n: read.count }, undefined, 'member'),
  );
  s.messageTypes.defineAuthority('member', () => false);
  return s;
}

const goodTyped = (): Record<string, unknown> => ({
  type: 'test.typed',
  name: 'n',
  count: 3,
  at: 1.5,
  flag: true,
  peer: '10.0.0.2:2552',
  member: '10.0.0.2:2552#peer1',
  where: { host: 'h', port: 1 },
  kind: 'a',
  tags: ['x', 'y'],
  parent: null,
  inner: { depth: 1, label: 'l' },
  data: { a: [1, 2] },
  extra: 'dropped',
});

const ping = (to = '/user/inbox') => [to, 'self1', FROM, { type: 'test.ping', n: 1 }];

/** Every refusal case at the envelope level, and good envelopes to interleave with them. */
const envelopeCases: [string, unknown][] = [
  ['good', ping()],
  ['not a tuple', 'x'],
  ['too short', ['/user/inbox', 'self1', null]],
  ['too long', [...ping(), TRACE, 'more']],
  ['path not a string', [42, 'self1', null, { type: 'test.ping' }]],
  ['path without a slash', ['user/inbox', 'self1', null, { type: 'test.ping' }]],
  ['path with a bad segment', ['/user/a b', 'self1', null, { type: 'test.ping' }]],
  ['good again', ping()],
  ['empty toUid', ['/user/inbox', '', null, { type: 'test.ping' }]],
  ['long toUid', ['/user/inbox', 'u'.repeat(65), null, { type: 'test.ping' }]],
  ['toUid not a string', ['/user/inbox', 7, null, { type: 'test.ping' }]],
  ['from not a string', ['/user/inbox', 'self1', 5, { type: 'test.ping' }]],
  ['from too long', ['/user/inbox', 'self1', 'x'.repeat(1025), { type: 'test.ping' }]],
  ['message nil', ['/user/inbox', 'self1', null, null]],
  ['message a list', ['/user/inbox', 'self1', null, []]],
  ['type not a string', ['/user/inbox', 'self1', null, { type: 3 }]],
  [
    'sender on another node',
    ['/user/inbox', 'self1', 'doyen://test@10.0.0.9:2552/user/x#peer1', { type: 'test.ping' }],
  ],
  [
    'sender of another incarnation',
    ['/user/inbox', 'self1', 'doyen://test@10.0.0.2:2552/user/x#other', { type: 'test.ping' }],
  ],
  ['sender not an address', ['/user/inbox', 'self1', 'nonsense', { type: 'test.ping' }]],
  ['unknown type', ['/user/inbox', 'self1', null, { type: 'test.nope' }]],
  ['good typed', ['/user/inbox', 'self1', null, goodTyped()]],
  ['typed, a field broken', ['/user/inbox', 'self1', null, { ...goodTyped(), count: -1 }]],
  [
    'typed, speaking for another node',
    ['/user/inbox', 'self1', null, { ...goodTyped(), member: '10.0.0.9:2552#peer1' }],
  ],
  ['typed again', ['/user/inbox', 'self1', null, goodTyped()]],
  ['type without the authority', ['/user/inbox', 'self1', null, { type: 'test.members-only', n: 1 }]],
  ['bad trace (the trace is dropped)', [...ping(), 'not-a-traceparent']],
  ['good trace', [...ping(), TRACE]],
  ['nil trace', [...ping(), null]],
  ['temp path', ping('/temp/ask-1')],
  ['path of the run after a temp one', ping()],
  ['other path', ping('/user/other')],
];

describe('the receive path memo refuses what a fresh check refuses', () => {
  it('a stream through one memo gives, envelope by envelope, what checkEnvelope gives each alone', () => {
    const s = system();
    const memo = new EnvelopeMemo();
    const senders = new KnownSenders();
    const refusals: { reason: string; detail: string }[] = [];
    for (const [name, raw] of envelopeCases) {
      const fresh = checkEnvelope(s, raw, ORIGIN);
      refusals.length = 0;
      const envelope = readEnvelope(s, raw, ORIGIN, memo, senders, ({ reason, detail }) =>
        refusals.push({ reason, detail }),
      );
      if (!fresh.ok) {
        expect(envelope, name).toBeUndefined();
        expect(refusals, name).toEqual([{ reason: fresh.reason, detail: fresh.detail }]);
      } else {
        expect(envelope, name).toEqual(fresh.envelope);
        expect(refusals, name).toEqual(fresh.dropped ? [fresh.dropped] : []);
      }
    }
    // the table does refuse, under every reason the wire counts per envelope
    const reasons = new Set(
      envelopeCases.map(([, raw]) => checkEnvelope(s, raw, ORIGIN)).flatMap((c) => (c.ok ? [] : [c.reason])),
    );
    expect([...reasons].sort()).toEqual([
      'bad-envelope',
      'forged',
      'invalid-message',
      'unauthorized',
      'unknown-type',
    ]);
  });

  it('remembers only a sender it validated: never a forged one', () => {
    const senders = new KnownSenders();
    const forged = 'doyen://test@10.0.0.9:2552/user/sender#other';
    expect(senders.check(forged, ORIGIN)).toBeUndefined();
    // asked again, still checked, not remembered from the first time
    expect(senders.check(forged, ORIGIN)).toBeUndefined();
    // positive control: a sender on the connection's node is found, and found again
    expect(senders.check(FROM, ORIGIN)).toBe(FROM);
    expect(senders.check(FROM, ORIGIN)).toBe(FROM);
  });

  it('a type registered again is admitted by its new rule, not the remembered one', () => {
    const s = system();
    const memo = new EnvelopeMemo();
    const refused: string[] = [];
    const n = (k: number) => ['/user/inbox', 'self1', null, { type: 'test.n', k }];
    expect(
      readEnvelope(s, n(1), ORIGIN, memo, new KnownSenders(), (r) => refused.push(r.reason)),
    ).toBeDefined();
    s.messageTypes.register('test.n', () => 'closed now');
    expect(
      readEnvelope(s, n(2), ORIGIN, memo, new KnownSenders(), (r) => refused.push(r.reason)),
    ).toBeUndefined();
    expect(refused).toEqual(['invalid-message']);

    // positive control: a memo that ignored the registrations would let it through
    const stale = new EnvelopeMemo();
    const fresh = system();
    readEnvelope(fresh, n(1), ORIGIN, stale, new KnownSenders(), () => {});
    fresh.messageTypes.register('test.n', () => 'closed now');
    stale.generation = fresh.messageTypes.generation;
    expect(readEnvelope(fresh, n(2), ORIGIN, stale, new KnownSenders(), () => {})).toBeDefined();
  });
});

/** The rebuild the compiled admission replaced: field names listed per message, then the claims and authority. */
function referenceParse(
  types: ActorSystem['messageTypes'],
  s: MessageSchema,
  message: Record<string, unknown>,
) {
  const out: Record<string, unknown> = {};
  try {
    for (const key of Object.keys(s.fields)) {
      const value = (s.fields as Shape<Record<string, unknown>>)[key]!(message[key], key);
      if (value !== undefined) out[key] = value;
    }
  } catch (error) {
    return { ok: false, reason: 'invalid-message', detail: `${message.type}: ${(error as Error).message}` };
  }
  const rebuilt = { ...out, type: message.type } as Message;
  const claimed = forgedClaim(s, rebuilt, ORIGIN);
  if (claimed !== undefined) return { ok: false, reason: 'forged' };
  if (!types.allows(s.authority, ORIGIN)) return { ok: false, reason: 'unauthorized' };
  return { ok: true, message: rebuilt };
}

const brokenValues: Record<string, unknown[]> = {
  name: [undefined, 5, 'x'.repeat(17)],
  count: [undefined, -1, 1.5, '3'],
  at: [undefined, -1, Number.NaN, 'now'],
  flag: [undefined, 'yes'],
  peer: [undefined, 'nohost', 'h:0', 'h:70000'],
  member: [undefined, '10.0.0.2:2552', '10.0.0.2:2552#bad uid', '10.0.0.9:2552#peer1'],
  where: [undefined, 'h:1', { host: '', port: 1 }, { host: 'h', port: 0 }],
  kind: [undefined, 'c'],
  tags: [undefined, 'x', ['a', 'b', 'c', 'd'], ['x'.repeat(9)]],
  note: [5, 'x'.repeat(33)],
  parent: [undefined, 'no-slash'],
  inner: [undefined, [], { depth: -1, label: 'l' }, { depth: 1, label: 'xxxxx' }],
  data: [{ a: { b: { c: { d: 1 } } } }, Array.from({ length: 30 }, (_, i) => i), { f: () => 1 }],
};

describe('compiled schema admissions refuse what the interpretive rebuild refused', () => {
  it('every field of every reader kind, broken in turn, and the good message', () => {
    const s = system();
    const typed = (
      s.messageTypes as unknown as { entries: Map<string, { schema: MessageSchema }> }
    ).entries.get('test.typed')!.schema;
    const cases: Record<string, unknown>[] = [goodTyped(), { ...goodTyped(), note: 'present' }];
    for (const [field, values] of Object.entries(brokenValues))
      for (const value of values) cases.push({ ...goodTyped(), [field]: value });
    let refusedCount = 0;
    for (const message of cases) {
      const expected = referenceParse(s.messageTypes, typed, message);
      const got = s.messageTypes.parse(message as unknown as Message, ORIGIN);
      const label = JSON.stringify(message, (_k, v) => (typeof v === 'function' ? 'fn' : v));
      expect(got.ok, label).toBe(expected.ok);
      if (!got.ok) {
        refusedCount++;
        expect(got.reason, label).toBe(expected.reason);
        if (expected.reason === 'invalid-message') expect(got.detail, label).toBe(expected.detail);
      } else {
        expect(got.message, label).toEqual(expected.message);
        expect(got.message, label).not.toHaveProperty('extra');
      }
    }
    // positive control: the table is mostly refusals, so agreement is not agreement on acceptance
    expect(refusedCount).toBe(cases.length - 2);
  });
});

// An ask's sender is its one-off reply address (`/temp/ask-<n>`, `/system/temp/ask-<n>`): remembering
// each filled every connection's sender map to its cap, cleared it and filled it again, and
// internalized a string per ask (issue 29: an entity owner's CPU per remote ask).
describe('remembered senders', () => {
  const ASKS = 500;
  const tempSender = (n: number, prefix: string) => `doyen://test@10.0.0.2:2552${prefix}/ask-${n}#peer1`;

  it('asks do not grow the map: their reply addresses are validated every time, not remembered', () => {
    const senders = new KnownSenders();
    for (let n = 0; n < ASKS; n++) {
      expect(senders.check(tempSender(n, '/temp'), ORIGIN)).toBe(tempSender(n, '/temp'));
      expect(senders.check(tempSender(n, '/system/temp'), ORIGIN)).toBe(tempSender(n, '/system/temp'));
    }
    expect(senders.size).toBe(0);
    // still validated: a reply address on another node is refused, as any sender is
    expect(senders.check('doyen://test@10.0.0.9:2552/temp/ask-1#peer1', ORIGIN)).toBeUndefined();
    expect(senders.check('doyen://test@[::1]:2552/temp/ask-1#peer1', ORIGIN)).toBeUndefined();
  });

  it('positive control: as many distinct ordinary senders are remembered, one entry each', () => {
    const senders = new KnownSenders();
    for (let n = 0; n < ASKS; n++) {
      const from = `doyen://test@10.0.0.2:2552/user/temp-like-${n}/temp/x#peer1`;
      expect(senders.check(from, ORIGIN)).toBe(from);
    }
    expect(senders.size).toBe(ASKS);
  });
});
