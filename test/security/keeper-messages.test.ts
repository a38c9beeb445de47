import { describe, expect, it } from 'vitest';
import { type Message, MessageTypes, type UniqueNodeAddress } from '../../packages/core/src/index.js';
import { MAX_PARTITION_COUNT } from '../../packages/partitions/src/index.js';
import {
  decide,
  initialKeeperContext,
  type KeeperContext,
  type KeeperPolicy,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import { EMPTY_CARGO } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import {
  MAX_CARGO_ENTRIES,
  MAX_HAND_OFF_PARTS,
  registerKeeperMessages,
} from '../../packages/sharding/src/partition-keeper/keeper-messages.js';

/**
 * The partition keeper's messages at the boundary. A member that lies could renounce, hand off,
 * mark or announce for another member (a forged renounce lets a querier create a second token; a
 * forged marker releases a drain before a sender's messages are in), so each message speaks only
 * for its sender: `from` must be the member the connection authenticated. Only members may send
 * them. Partitions beyond the table, tokens newer than their hand-off and oversized cargo are
 * refused. Each refusal has a positive control: the same input passes where the check is off.
 */

const B: UniqueNodeAddress = { host: '10.0.0.2', port: 2552, uid: 'u2' };
const C: UniqueNodeAddress = { host: '10.0.0.3', port: 2552, uid: 'u3' };
const key = (n: UniqueNodeAddress) => `${n.host}:${n.port}#${n.uid}`;
const stamp = { version: 1, round: 1, seq: 1 };

const messages = (from: string): Message[] =>
  [
    { type: 'sharding.token-query', from, version: 2, round: 1, partitions: [0, 1] },
    { type: 'sharding.token-withdraw', from, version: 2, round: 1, partitions: [0, 1] },
    {
      type: 'sharding.token-answer',
      from,
      version: 2,
      round: 1,
      newer: null,
      answers: [{ partition: 0, seen: null, handed: null, dormant: null }],
    },
    { type: 'sharding.hand-off', from, partition: 0, stamp, version: 2, cargo: EMPTY_CARGO },
    { type: 'sharding.drain-marker', from, version: 2, active: [0] },
    { type: 'sharding.active', from, version: 2, partitions: [0] },
    { type: 'sharding.hand-off-probe', from, partition: 0, stamp, attempt: 0 },
    { type: 'sharding.hand-off-receipt', from, partition: 0, stamp, attempt: 0, received: true },
    { type: 'sharding.marker-request', from, version: 2 },
    {
      type: 'sharding.hand-off-part',
      from,
      partition: 0,
      stamp,
      version: 2,
      index: 0,
      total: 2,
      cargo: EMPTY_CARGO,
    },
  ] as unknown as Message[];

function keeperTypes(): MessageTypes {
  const types = new MessageTypes();
  registerKeeperMessages(types);
  return types;
}

describe('partition keeper messages at the boundary', () => {
  it('each speaks only for the member whose connection it came on', () => {
    const types = keeperTypes();
    for (const m of messages(key(C))) {
      const refused = types.parse(m, B);
      expect(refused, m.type).toMatchObject({ ok: false, reason: 'forged' });
    }
    // positive control: the same messages in B's own name pass
    for (const m of messages(key(B))) expect(types.parse(m, B).ok, m.type).toBe(true);
    // positive control: without the claim check (a schema with no speaksFor) the forgery would pass
    const lax = new MessageTypes();
    registerKeeperMessages({
      register: (type: string, s: { fields: unknown; authority: unknown }) =>
        lax.register(type, { fields: s.fields, authority: s.authority } as never),
    } as unknown as MessageTypes);
    for (const m of messages(key(C))) expect(lax.parse(m, B).ok, m.type).toBe(true);
  });

  it('only members may send them', () => {
    const types = keeperTypes();
    types.defineAuthority('member', (k) => k === key(B));
    for (const m of messages(key(C)))
      expect(types.parse(m, C), m.type).toMatchObject({ reason: 'unauthorized' });
    for (const m of messages(key(B))) expect(types.parse(m, B).ok, m.type).toBe(true);
  });

  it('refuses partitions beyond any table and cargo over the cap', () => {
    const types = keeperTypes();
    const query = (p: number) =>
      ({
        type: 'sharding.token-query',
        from: key(B),
        version: 1,
        round: 1,
        partitions: [p],
      }) as unknown as Message;
    expect(types.parse(query(MAX_PARTITION_COUNT), B)).toMatchObject({ reason: 'invalid-message' });
    expect(types.parse(query(MAX_PARTITION_COUNT - 1), B).ok).toBe(true);
    const entry = { entityType: 'cart', entityId: 'c', snapshot: { n: 1 } };
    const handOff = (n: number) =>
      ({
        type: 'sharding.hand-off',
        from: key(B),
        partition: 0,
        stamp,
        version: 1,
        cargo: { snapshots: Array.from({ length: n }, () => entry), forwarded: [] },
      }) as unknown as Message;
    expect(types.parse(handOff(MAX_CARGO_ENTRIES + 1), B)).toMatchObject({ reason: 'invalid-message' });
    expect(types.parse(handOff(MAX_CARGO_ENTRIES), B).ok).toBe(true);
    // a part's index and total are bounded (a reassembly's memory), and so is its cargo
    const part = (index: number, total: number, n = 1) =>
      ({
        type: 'sharding.hand-off-part',
        from: key(B),
        partition: 0,
        stamp,
        version: 1,
        index,
        total,
        cargo: { snapshots: Array.from({ length: n }, () => entry), forwarded: [] },
      }) as unknown as Message;
    for (const bad of [
      part(MAX_HAND_OFF_PARTS, MAX_HAND_OFF_PARTS),
      part(0, 0),
      part(0, MAX_HAND_OFF_PARTS + 1),
    ])
      expect(types.parse(bad, B)).toMatchObject({ reason: 'invalid-message' });
    expect(types.parse(part(0, 1, MAX_CARGO_ENTRIES + 1), B)).toMatchObject({ reason: 'invalid-message' });
    expect(types.parse(part(MAX_HAND_OFF_PARTS - 1, MAX_HAND_OFF_PARTS, MAX_CARGO_ENTRIES), B).ok).toBe(true);
  });
});

describe('partition keeper decisions on well-formed but impossible claims', () => {
  const policy: KeeperPolicy = {
    selfKey: key(C),
    partitionCount: 4,
    maxConcurrentHandOffs: 16,
    retryMs: 100,
  };
  // C owns partitions 0 and 2 and asked B where their tokens are (no answer yet)
  const inView = decide(
    policy,
    { ...initialKeeperContext, lease: true },
    { type: 'keeper.membership', reachable: [key(B)], absent: [] },
    0,
  ).context;
  const ready: KeeperContext = decide(
    policy,
    inView,
    { type: 'keeper.table', table: { version: 3, owners: [key(C), key(B), key(C), key(B)] } },
    0,
  ).context;
  const handOff = (partition: number, s = stamp, version = 3) =>
    ({ type: 'sharding.hand-off', from: key(B), partition, stamp: s, version, cargo: EMPTY_CARGO }) as const;

  it('refuses a token for a partition beyond the table, and one created under a newer table than its hand-off', () => {
    for (const event of [handOff(4), handOff(0, { version: 5, round: 1, seq: 1 }, 3)]) {
      const step = decide(policy, ready, event, 0);
      expect(step.context.parts[event.partition]?.token ?? null).toBeNull();
      expect(step.effects).toContainEqual({ kind: 'count', event: 'refused' });
      expect(step.effects.some((e) => e.kind === 'activate')).toBe(false);
    }
    // positive control: the same token within range, created under its hand-off's table, is taken and activated
    const taken = decide(policy, ready, handOff(0), 0);
    expect(taken.context.parts[0]?.token?.phase).toBe('active');
    expect(taken.effects.some((e) => e.kind === 'activate' && e.partition === 0)).toBe(true);
  });

  it('refuses a probe, receipt or part for a partition beyond the table; a receipt for a hand-off never sent changes nothing', () => {
    const beyond = [
      { type: 'sharding.hand-off-probe', from: key(B), partition: 4, stamp, attempt: 0 },
      { type: 'sharding.hand-off-receipt', from: key(B), partition: 4, stamp, attempt: 0, received: false },
      {
        type: 'sharding.hand-off-part',
        from: key(B),
        partition: 4,
        stamp,
        version: 3,
        index: 0,
        total: 2,
        cargo: EMPTY_CARGO,
      },
    ] as const;
    for (const event of beyond) {
      const step = decide(policy, ready, event, 0);
      expect(step.effects, event.type).toContainEqual({ kind: 'count', event: 'refused' });
      expect(step.context.assembling).toEqual({});
    }
    // a forged "not received" for a hand-off this node never made: nothing is taken back
    const forged = decide(
      policy,
      ready,
      { type: 'sharding.hand-off-receipt', from: key(B), partition: 1, stamp, attempt: 0, received: false },
      0,
    );
    expect(forged.effects.some((e) => e.kind === 'take-back')).toBe(false);
    // positive control: the probe within range is answered
    const probe = decide(
      policy,
      ready,
      { type: 'sharding.hand-off-probe', from: key(B), partition: 1, stamp, attempt: 0 },
      0,
    );
    expect(
      probe.effects.some((e) => e.kind === 'send' && e.message.type === 'sharding.hand-off-receipt'),
    ).toBe(true);
  });

  it('keeps a token older than a renounce dormant (never active), and reports it to the next query', () => {
    const asked = decide(
      policy,
      ready,
      { type: 'sharding.token-query', from: key(B), version: 3, round: 7, partitions: [1] },
      0,
    );
    expect(asked.context.parts[1]?.renounced).toEqual({ version: 3, round: 7 });
    const late = decide(policy, asked.context, handOff(1), 0);
    expect(late.context.parts[1]?.token ?? null).toBeNull();
    expect(late.context.parts[1]?.dormant?.stamp).toEqual(stamp);
    expect(late.effects).toContainEqual({ kind: 'count', event: 'token-void' });
    const again = decide(
      policy,
      late.context,
      { type: 'sharding.token-query', from: key(B), version: 3, round: 7, partitions: [1] },
      0,
    );
    const answer = again.effects.find((e) => e.kind === 'send');
    expect(answer).toMatchObject({
      message: { type: 'sharding.token-answer', answers: [{ partition: 1, dormant: { stamp } }] },
    });
  });
});
