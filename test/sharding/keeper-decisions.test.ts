import { describe, expect, it } from 'vitest';
import { splitHandOff } from '../../packages/sharding/src/partition-keeper/hand-off-parts.js';
import {
  decide,
  initialKeeperContext,
  type KeeperContext,
  type KeeperEvent,
  type KeeperPolicy,
  type KeeperStep,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import { EMPTY_CARGO } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import type { HandOffPart } from '../../packages/sharding/src/partition-keeper/keeper-messages.js';

/**
 * The keeper's recovery rule on hand-picked cases: a token is created only behind every member's
 * renounce AND a closed chain; a hand-off in flight (or lost in a reset and about to be sent
 * again) is waited for, also one to the querier itself, until its sender is fenced. And the
 * repairs of lost messages: receipts, probes, a hand-off sent again, replays dropped, markers
 * asked for again.
 */

const Q = '10.0.0.1:2552#u1';
const X = '10.0.0.2:2552#u2';
const T = '10.0.0.3:2552#u3';
const policy: KeeperPolicy = { selfKey: Q, partitionCount: 1, maxConcurrentHandOffs: 16, retryMs: 100 };
const stamp = { version: 1, round: 1, seq: 4 };

function run(events: KeeperEvent[]): { ctx: KeeperContext; kinds: string[] } {
  let ctx: KeeperContext = initialKeeperContext;
  const kinds: string[] = [];
  for (const e of events) {
    const step = decide(policy, ctx, e, 0);
    ctx = step.context;
    for (const f of step.effects) kinds.push(f.kind === 'log' ? f.event : f.kind);
  }
  return { ctx, kinds };
}

/** A keeper fed events one at a time: `at` decides one and keeps its context (`ctx`). */
function stepper(p: KeeperPolicy = policy): {
  at: (now: number, e: KeeperEvent) => KeeperStep;
  readonly ctx: KeeperContext;
} {
  let ctx: KeeperContext = initialKeeperContext;
  return {
    at: (now, e) => {
      const step = decide(p, ctx, e, now);
      ctx = step.context;
      return step;
    },
    get ctx() {
      return ctx;
    },
  };
}

const start: KeeperEvent[] = [
  { type: 'keeper.lease', held: true },
  { type: 'keeper.membership', reachable: [X, T], absent: [] },
  { type: 'keeper.table', table: { version: 2, owners: [Q] } },
];
const answer = (
  from: string,
  handed: { to: string; stamp: typeof stamp } | null,
  seen = handed?.stamp ?? null,
) =>
  ({
    type: 'sharding.token-answer',
    from,
    version: 2,
    round: 1,
    newer: null,
    answers: [{ partition: 0, seen, handed, dormant: null }],
  }) as const;

describe('keeper recovery', () => {
  it('creates once every member renounced and nobody reports a hand-off', () => {
    const { ctx, kinds } = run([...start, answer(X, null), answer(T, null)]);
    expect(kinds).toContain('sharding.token-created');
    expect(ctx.parts[0]?.token?.phase).toBe('active');
  });

  it('waits for a hand-off in flight to another member, and takes the token when it comes', () => {
    const waiting = run([...start, answer(X, { to: T, stamp }), answer(T, null, null)]);
    expect(waiting.kinds).not.toContain('sharding.token-created');
    expect(waiting.ctx.parts[0]?.token ?? null).toBeNull();
    // T got it (later it answers having seen it, its dormant cargo reused) -> now it may create
    const seen = run([...start, answer(X, { to: T, stamp }), answer(T, null, null), answer(T, null, stamp)]);
    expect(seen.kinds).toContain('sharding.token-created');
  });

  it('waits for a lost hand-off to itself to come back into view, and creates once its sender is fenced', () => {
    const lost = run([...start, answer(X, { to: Q, stamp }, null), answer(T, null)]);
    expect(lost.kinds).not.toContain('sharding.token-created');
    // it came after all: taken, no creation
    const resent = run([
      ...start,
      answer(X, { to: Q, stamp }, null),
      answer(T, null),
      { type: 'sharding.hand-off', from: X, partition: 0, stamp, version: 2, cargo: EMPTY_CARGO },
    ]);
    expect(resent.kinds).not.toContain('sharding.token-created');
    expect(resent.ctx.parts[0]?.token?.stamp).toEqual(stamp);
    // its sender fenced: nobody sends it again (a late copy is void here): create
    const fenced = run([
      ...start,
      answer(X, { to: Q, stamp }, null),
      answer(T, null),
      { type: 'keeper.membership', reachable: [T], absent: [X] },
      { type: 'keeper.fenced', key: X },
    ]);
    expect(fenced.kinds).toContain('sharding.token-created');
  });

  it('stops waiting for a hand-off to another member when its sender is fenced', () => {
    const waiting = run([...start, answer(X, { to: T, stamp }), answer(T, null, null)]);
    expect(waiting.kinds).not.toContain('sharding.token-created');
    const fenced = run([
      ...start,
      answer(X, { to: T, stamp }),
      answer(T, null, null),
      { type: 'keeper.membership', reachable: [T], absent: [X] },
      { type: 'keeper.fenced', key: X },
    ]);
    expect(fenced.kinds).toContain('sharding.token-created');
  });

  it('waits for a member that neither answered nor is fenced, and asks for the fence when it is absent', () => {
    const absent: KeeperEvent = { type: 'keeper.membership', reachable: [X], absent: [T] };
    const waiting = run([...start, absent, answer(X, null)]);
    expect(waiting.kinds).not.toContain('sharding.token-created');
    expect(waiting.kinds).toContain('fence');
    const fenced = run([...start, absent, answer(X, null), { type: 'keeper.fenced', key: T }]);
    expect(fenced.kinds).toContain('sharding.token-created');
  });

  it('asks the members that have not answered again every retry period, whatever else happens meanwhile', () => {
    const k = stepper();
    const at = k.at;
    for (const e of start) at(0, e);
    at(10, answer(X, null));
    // a stream of unrelated events does not push the retry back: it stays due at 100
    expect(at(60, { type: 'sharding.drain-marker', from: X, version: 2, active: [] }).wakeInMs).toBe(40);
    expect(at(90, { type: 'sharding.drain-marker', from: T, version: 2, active: [] }).wakeInMs).toBe(10);
    const retry = at(100, { type: 'keeper.tick' });
    const asked = retry.effects.filter((e) => e.kind === 'send').map((e) => (e.kind === 'send' ? e.to : ''));
    expect(asked).toEqual([T]);
  });

  it('a member at a newer table blocks the query until that table is adopted', () => {
    const newer = { ...answer(X, null), newer: 3 } as const;
    const blocked = run([...start, newer, answer(T, null)]);
    expect(blocked.kinds).not.toContain('sharding.token-created');
    expect(blocked.ctx.parts[0]?.query?.blocked).toBe(true);
  });
});

describe('keeper repairs of lost messages', () => {
  // Q holds p0's token (created at table 2), then table 3 moves p0 to X: Q drains and hands off
  const handedOff = (): { ctx: KeeperContext; at: (now: number, e: KeeperEvent) => KeeperStep } => {
    const k = stepper();
    const at = k.at;
    for (const e of [...start, answer(X, null), answer(T, null)]) at(0, e);
    at(0, { type: 'keeper.table', table: { version: 3, owners: [X] } });
    at(0, { type: 'keeper.region-drained', partition: 0 });
    at(0, { type: 'sharding.drain-marker', from: X, version: 3, active: [] });
    const off = at(0, { type: 'sharding.drain-marker', from: T, version: 3, active: [] });
    expect(off.effects.some((e) => e.kind === 'hand-off' && e.to === X)).toBe(true);
    return k;
  };
  const sent = (step: KeeperStep, type: string) =>
    step.effects.flatMap((e) => (e.kind === 'send' && e.message.type === type ? [e] : []));

  it('probes an unconfirmed hand-off every retry period; a confirmed one is forgotten', () => {
    const q = handedOff();
    const a = q.ctx.parts[0]!.awaiting!;
    expect(a).toMatchObject({ to: X, attempt: 0 });
    expect(sent(q.at(50, { type: 'keeper.tick' }), 'sharding.hand-off-probe')).toHaveLength(0);
    const probe = sent(q.at(100, { type: 'keeper.tick' }), 'sharding.hand-off-probe');
    expect(probe).toHaveLength(1);
    expect(probe[0]!.to).toBe(X);
    const done = q.at(130, {
      type: 'sharding.hand-off-receipt',
      from: X,
      partition: 0,
      stamp: a.stamp,
      attempt: 0,
      received: true,
    });
    expect(done.effects).toContainEqual({ kind: 'forget-hand-off', partition: 0 });
    expect(q.ctx.parts[0]?.awaiting ?? null).toBeNull();
    expect(sent(q.at(300, { type: 'keeper.tick' }), 'sharding.hand-off-probe')).toHaveLength(0);
  });

  it('takes a lost hand-off back: drained again with what it held, handed to the owner in its newest table', () => {
    const q = handedOff();
    const a = q.ctx.parts[0]!.awaiting!;
    const lost = q.at(110, {
      type: 'sharding.hand-off-receipt',
      from: X,
      partition: 0,
      stamp: a.stamp,
      attempt: 0,
      received: false,
    });
    expect(lost.effects).toContainEqual({ kind: 'take-back', partition: 0 });
    expect(q.ctx.parts[0]?.awaiting ?? null).toBeNull();
    // the machine gives the kept hand-off back; the newest table (4) names T now
    q.at(120, { type: 'keeper.table', table: { version: 4, owners: [T] } });
    const cargo = { snapshots: [{ entityType: 'e', entityId: '0', snapshot: 7 }], forwarded: [] };
    const back = q.at(120, {
      type: 'keeper.taken-back',
      handOff: { type: 'sharding.hand-off', from: Q, partition: 0, stamp: a.stamp, version: 3, cargo },
    });
    expect(back.effects).toContainEqual({ kind: 'count', event: 'hand-off-taken-back' });
    expect(back.effects.some((e) => e.kind === 'drain' && e.partition === 0)).toBe(true);
    expect(q.ctx.parts[0]?.handed ?? null).toBeNull();
    q.at(130, { type: 'keeper.region-drained', partition: 0 });
    q.at(130, { type: 'sharding.drain-marker', from: X, version: 4, active: [] });
    const off = q.at(130, { type: 'sharding.drain-marker', from: T, version: 4, active: [] });
    const handOff = off.effects.find((e) => e.kind === 'hand-off');
    // one hop further than the lost one, with the cargo it carried (the region's held messages follow it)
    expect(handOff).toMatchObject({ to: T, stamp: { ...a.stamp, seq: a.stamp.seq + 1 }, cargo });
  });

  it('does not renounce a partition while its hand-off is unconfirmed (a take-back must not find it void)', () => {
    const q = handedOff();
    const a = q.ctx.parts[0]!.awaiting!;
    const query = { type: 'sharding.token-query', from: X, version: 3, round: 9, partitions: [0] } as const;
    const before = sent(q.at(10, query), 'sharding.token-answer')[0]!.message;
    expect(before).toMatchObject({ answers: [] });
    expect(q.ctx.parts[0]?.renounced).toEqual({ version: 2, round: 1 });
    q.at(20, {
      type: 'sharding.hand-off-receipt',
      from: X,
      partition: 0,
      stamp: a.stamp,
      attempt: 0,
      received: true,
    });
    const after = sent(q.at(30, query), 'sharding.token-answer')[0]!.message;
    expect(after).toMatchObject({ answers: [{ partition: 0, handed: { to: X, stamp: a.stamp } }] });
  });

  it('a receiver that answered "not received" never takes that hand-off (its sender took it back)', () => {
    const k = stepper();
    const at = (e: KeeperEvent) => k.at(0, e);
    for (const e of start) at(e);
    at({ type: 'sharding.hand-off-probe', from: X, partition: 0, stamp, attempt: 0 });
    const late = at({
      type: 'sharding.hand-off',
      from: X,
      partition: 0,
      stamp,
      version: 2,
      cargo: EMPTY_CARGO,
    });
    expect(late.effects).toContainEqual({ kind: 'count', event: 'token-late' });
    expect(k.ctx.parts[0]?.token ?? null).toBeNull();
    // positive control: the next hop of that token (after its sender took it back) is taken
    const next = at({
      type: 'sharding.hand-off',
      from: X,
      partition: 0,
      stamp: { ...stamp, seq: stamp.seq + 1 },
      version: 2,
      cargo: EMPTY_CARGO,
    });
    expect(next.effects.some((e) => e.kind === 'activate')).toBe(true);
  });

  it('gives up an unconfirmed hand-off to a member that is fenced (the token died there)', () => {
    const q = handedOff();
    q.at(10, { type: 'keeper.membership', reachable: [T], absent: [X] });
    const gone = q.at(20, { type: 'keeper.fenced', key: X });
    expect(gone.effects).toContainEqual({ kind: 'forget-hand-off', partition: 0 });
    expect(q.ctx.parts[0]?.awaiting ?? null).toBeNull();
  });

  it('confirms every hand-off and answers probes by what it saw; drops a replay of a token it saw', () => {
    const k = stepper();
    const at = (e: KeeperEvent) => k.at(0, e);
    for (const e of start) at(e);
    // an earlier hop it never got: "not received"
    const earlier = {
      type: 'sharding.hand-off-probe',
      from: X,
      partition: 0,
      stamp: { ...stamp, seq: stamp.seq - 1 },
      attempt: 2,
    } as const;
    expect(sent(at(earlier), 'sharding.hand-off-receipt')[0]!.message).toMatchObject({
      received: false,
      attempt: 2,
    });
    const probe = { type: 'sharding.hand-off-probe', from: X, partition: 0, stamp, attempt: 0 } as const;
    const token = {
      type: 'sharding.hand-off',
      from: X,
      partition: 0,
      stamp,
      version: 2,
      cargo: EMPTY_CARGO,
    } as const;
    const took = at(token);
    expect(sent(took, 'sharding.hand-off-receipt')[0]!.message).toMatchObject({ received: true });
    expect(k.ctx.parts[0]?.token?.phase).toBe('active');
    expect(sent(at(probe), 'sharding.hand-off-receipt')[0]!.message).toMatchObject({ received: true });
    // Q hands it on and gets the same hand-off again (sent twice): never a second token
    at({ type: 'keeper.table', table: { version: 3, owners: [T] } });
    at({ type: 'keeper.region-drained', partition: 0 });
    at({ type: 'sharding.drain-marker', from: X, version: 3, active: [] });
    at({ type: 'sharding.drain-marker', from: T, version: 3, active: [] });
    expect(k.ctx.parts[0]?.token ?? null).toBeNull();
    at({ type: 'keeper.table', table: { version: 4, owners: [Q] } });
    const replay = at(token);
    expect(replay.effects).toContainEqual({ kind: 'count', event: 'token-duplicate' });
    expect(k.ctx.parts[0]?.token ?? null).toBeNull();
  });

  it('asks the members whose marker a drain waits for again, every retry period, and answers such a request', () => {
    const k = stepper();
    const at = k.at;
    for (const e of [...start, answer(X, null), answer(T, null)]) at(0, e);
    at(0, { type: 'keeper.table', table: { version: 3, owners: [X] } });
    at(0, { type: 'keeper.region-drained', partition: 0 });
    const waiting = at(0, { type: 'sharding.drain-marker', from: X, version: 3, active: [] });
    expect(waiting.effects.some((e) => e.kind === 'hand-off')).toBe(false);
    expect(waiting.wakeInMs).not.toBeNull();
    const asked = sent(at(100, { type: 'keeper.tick' }), 'sharding.marker-request');
    // T for the drain's marker; X, the new owner, for its activation (we buffer p0 for it)
    expect(asked.map((e) => e.to).sort()).toEqual([T, X].sort());
    expect(asked[0]!.message).toMatchObject({ version: 3 });
    expect(sent(at(150, { type: 'keeper.tick' }), 'sharding.marker-request')).toHaveLength(0);
    expect(sent(at(200, { type: 'keeper.tick' }), 'sharding.marker-request')).toHaveLength(2);
    // and a request is answered by our marker (behind what we sent the asker)
    const answered = at(210, { type: 'sharding.marker-request', from: T, version: 3 });
    expect(answered.effects).toContainEqual({
      kind: 'marker',
      to: T,
      marker: { from: Q, version: 3, active: [] },
    });
  });

  it('joins a hand-off sent in parts, and discards a partial one with a gap', () => {
    const entry = (id: string) => ({ entityType: 'e', entityId: id, snapshot: { id } });
    const h = {
      type: 'sharding.hand-off',
      from: X,
      partition: 0,
      stamp,
      version: 2,
      cargo: { snapshots: [entry('a'), entry('b'), entry('c')], forwarded: [] },
    } as const;
    const parts = splitHandOff(h, 1) as HandOffPart[];
    expect(parts).toHaveLength(3);
    const k = stepper();
    const at = (e: KeeperEvent) => k.at(0, e);
    for (const e of start) at(e);
    at(parts[0]!);
    const gap = at(parts[2]!);
    expect(gap.effects).toContainEqual({ kind: 'count', event: 'hand-off-parts-discarded' });
    expect(k.ctx.parts[0]?.token ?? null).toBeNull();
    expect(k.ctx.assembling).toEqual({});
    for (const part of parts) at(part);
    const activated = (k.ctx.parts[0]?.token?.phase ?? null) === 'active';
    expect(activated).toBe(true);
  });
});

describe('keeper log lines of a move', () => {
  const logs = (step: KeeperStep) =>
    step.effects.flatMap((e) =>
      e.kind === 'log' ? [{ level: e.level, event: e.event, fields: e.fields }] : [],
    );
  // two partitions: a move is up to 271 of them, each line per partition would be at info
  const two: KeeperPolicy = { ...policy, partitionCount: 2 };
  // Q owns both at version 2 and creates their tokens once X renounced them
  const bothCreated = [
    { type: 'keeper.lease', held: true },
    { type: 'keeper.membership', reachable: [X], absent: [] },
    { type: 'keeper.table', table: { version: 2, owners: [Q, Q] } },
    {
      type: 'sharding.token-answer',
      from: X,
      version: 2,
      round: 1,
      newer: null,
      answers: [0, 1].map((partition) => ({ partition, seen: null, handed: null, dormant: null })),
    },
  ] as KeeperEvent[];

  it('a step that activates partitions logs them at info in ONE line, each partition at debug', () => {
    let ctx: KeeperContext = initialKeeperContext;
    let last: KeeperStep | undefined;
    for (const e of bothCreated) {
      last = decide(two, ctx, e, 0);
      ctx = last.context;
    }
    const lines = logs(last!);
    expect(lines.filter((l) => l.event === 'sharding.partition-activated').map((l) => l.level)).toEqual([
      'debug',
      'debug',
    ]);
    expect(lines.filter((l) => l.event === 'sharding.partitions-activated')).toEqual([
      { level: 'info', event: 'sharding.partitions-activated', fields: { partitions: [0, 1], version: 2 } },
    ]);
  });

  it('a step that hands partitions off logs them at info in ONE line, each partition at debug', () => {
    const k = stepper(two);
    const at = (e: KeeperEvent) => k.at(0, e);
    for (const e of [
      ...bothCreated,
      { type: 'keeper.table', table: { version: 3, owners: [X, X] } },
      { type: 'keeper.region-drained', partition: 0 },
      { type: 'keeper.region-drained', partition: 1 },
    ] as KeeperEvent[])
      at(e);
    const off = at({ type: 'sharding.drain-marker', from: X, version: 3, active: [] });
    const lines = logs(off);
    expect(off.effects.filter((e) => e.kind === 'hand-off')).toHaveLength(2);
    expect(lines.filter((l) => l.event === 'sharding.handed-off').map((l) => l.level)).toEqual([
      'debug',
      'debug',
    ]);
    expect(lines.filter((l) => l.event === 'sharding.partitions-handed-off')).toEqual([
      { level: 'info', event: 'sharding.partitions-handed-off', fields: { partitions: [0, 1], version: 3 } },
    ]);
  });
});
