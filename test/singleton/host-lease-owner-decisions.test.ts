import { describe, expect, it } from 'vitest';
import type { Member, Membership } from '../../packages/cluster/src/index.js';
import { type Message, MessageTypes, nodeKey } from '../../packages/core/src/index.js';
import {
  batchEffects,
  decide,
  fenceVote,
  type HostLeaseContext,
  type HostLeaseEffect,
  type HostLeaseEvent,
  type HostLeasePolicy,
  type HostLeaseStep,
  holdsOwnIn,
  initialHostLeaseContext,
  isFencedIn,
  MAX_BATCH_FENCES,
  MAX_OWNER_WAITING,
  MAX_UNKNOWN_TOMBSTONES,
  MAX_VOTER_SCOPES,
  ownerScopeOf,
  registerHostLeaseMessages,
} from '../../packages/singleton/src/index.js';

/**
 * Owner scopes, fences, tombstones and batching in the host lease's decisions alone (the rules
 * in host-lease-decisions.ts's header); host-lease-owner-safety.test.ts checks them together
 * under faults.
 */

const LEASE = 1000;
const DRIFT = 0.01;
const PAUSE = 500;
const PROMISE = LEASE * (1 + DRIFT);
const FENCE_WAIT = PAUSE * (1 + DRIFT);

const member = (i: number, status: Member['status'] = 'up'): Member => ({
  address: `10.0.0.${i}:2552`,
  uid: `u${i}`,
  name: `n${i}`,
  age: i,
  status,
  roles: [],
});
const K = (i: number) => nodeKey(member(i));
const O = (i: number) => ownerScopeOf(K(i));

const membershipOf = (members: readonly Member[], more: Partial<Membership> = {}): Membership => ({
  version: 1,
  nextAge: 10,
  members,
  failed: [],
  unreachable: [],
  ...more,
});
const three = membershipOf([member(1), member(2), member(3)]);
const unreachable = (i: number) => membershipOf(three.members, { unreachable: [K(i)] });

function nodeAt(self: number) {
  const policy: HostLeasePolicy = {
    selfKey: K(self),
    leaseMs: LEASE,
    pauseBoundMs: PAUSE,
    maxClockDrift: DRIFT,
    downedCountsForMs: 1500,
    renewEveryMs: LEASE / 4,
    minRetryMs: 20,
  };
  let ctx: HostLeaseContext = initialHostLeaseContext;
  return {
    policy,
    get ctx() {
      return ctx;
    },
    set ctx(next: HostLeaseContext) {
      ctx = next;
    },
    on(event: HostLeaseEvent, at: number): HostLeaseStep {
      const step = decide(policy, ctx, event, at);
      ctx = step.context;
      return step;
    },
  };
}

const members = (m: Membership): HostLeaseEvent => ({ type: 'host-lease.membership', membership: m });
const wantOwn: HostLeaseEvent = { type: 'host-lease.want-own', active: true };
const batch = (
  from: number,
  requests: { scope: string; round: number }[],
  fences: string[] = [],
): HostLeaseEvent => ({
  type: 'host-lease.batch',
  from: K(from),
  requests,
  fences,
});
const ofKind = <T extends HostLeaseEffect['kind']>(step: HostLeaseStep, kind: T) =>
  step.effects.filter((e): e is Extract<HostLeaseEffect, { kind: T }> => e.kind === kind);
const events = (step: HostLeaseStep) => ofKind(step, 'log').map((e) => e.event);
const counts = (step: HostLeaseStep) => ofKind(step, 'count').map((e) => `${e.scope}/${e.change}`);

/** A voter (node 3) of three that granted node 1 its owner scope at `at`. */
function voterBoundTo1(at = 0) {
  const voter = nodeAt(3);
  voter.on(members(three), 0);
  const step = voter.on(batch(1, [{ scope: O(1), round: 1 }]), at);
  expect(ofKind(step, 'reply')[0]!.reply).toMatchObject({ scope: O(1), granted: true, clean: true });
  return voter;
}

describe('owner scopes', () => {
  it('a voter grants owner:K to K alone, while K is up and not fenced', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    const other = voter.on(batch(2, [{ scope: O(1), round: 1 }]), 10);
    expect(ofKind(other, 'reply')[0]!.reply).toMatchObject({ granted: false, holder: null });
    expect(ofKind(voter.on(batch(1, [{ scope: O(1), round: 1 }]), 20), 'reply')[0]!.reply.granted).toBe(true);
    // joining and downed owners are refused
    const joining = nodeAt(3);
    joining.on(members(membershipOf([member(1, 'joining'), member(2), member(3)])), 0);
    expect(ofKind(joining.on(batch(1, [{ scope: O(1), round: 1 }]), 5), 'reply')[0]!.reply.granted).toBe(
      false,
    );
    const downed = nodeAt(3);
    downed.on(members(membershipOf([member(2), member(3)], { failed: [member(1, 'down')] })), 0);
    expect(ofKind(downed.on(batch(1, [{ scope: O(1), round: 1 }]), 5), 'reply')[0]!.reply.granted).toBe(
      false,
    );
  });

  it('owner scopes do not count against MAX_VOTER_SCOPES (they are bounded by the membership)', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    for (let i = 0; i < MAX_VOTER_SCOPES; i++)
      voter.on({ type: 'host-lease.request', from: K(1), scope: `r${i}`, round: 1 }, 1);
    const owner = voter.on(batch(2, [{ scope: O(2), round: 1 }]), 2);
    expect(ofKind(owner, 'reply')[0]!.reply.granted).toBe(true);
    expect(counts(owner)).not.toContain('/scope-refused');
  });

  it('holdsOwn follows the holder rule: a majority granted a round sent less than leaseMs ago', () => {
    const node = nodeAt(1);
    node.on(wantOwn, 0);
    const first = node.on(members(three), 0);
    expect(ofKind(first, 'request')).toEqual([{ kind: 'request', to: [K(2), K(3)], scope: O(1), round: 1 }]);
    expect(holdsOwnIn(node.policy, node.ctx, 0)).toBe(false);
    const got = node.on(
      {
        type: 'host-lease.answers',
        from: K(2),
        replies: [{ scope: O(1), round: 1, granted: true, clean: true, freeInMs: 0, holder: null }],
        fences: [],
      },
      30,
    );
    expect(holdsOwnIn(node.policy, node.ctx, 30)).toBe(true);
    expect(ofKind(got, 'own-lease')).toEqual([{ kind: 'own-lease', heldUntil: LEASE, readyAt: 30 }]);
    expect(counts(got)).toContain('owner/acquired');
    expect(holdsOwnIn(node.policy, node.ctx, LEASE)).toBe(false);
    // want(false): the scope is given back to every voter
    const gone = node.on({ type: 'host-lease.want-own', active: false }, 40);
    expect(ofKind(gone, 'release')).toEqual([{ kind: 'release', to: [K(2), K(3)], scope: O(1) }]);
    expect(holdsOwnIn(node.policy, node.ctx, 41)).toBe(false);
  });
});

describe('fences', () => {
  it('is refused (logged, counted) while the member is reachable here, and of oneself', () => {
    const node = nodeAt(2);
    node.on(members(three), 0);
    const refused = node.on({ type: 'host-lease.fence', key: K(1) }, 10);
    expect(events(refused)).toContain('host-lease.fence-refused');
    expect(counts(refused)).toEqual(['owner/fence-refused']);
    expect(node.ctx.fences).toEqual({});
    expect(events(node.on({ type: 'host-lease.fence', key: K(2) }, 11))).toContain(
      'host-lease.fence-refused',
    );
    // positive control: once unreachable here, it is asked of every voter in the next round
    node.on(members(unreachable(1)), 20);
    const asked = node.on({ type: 'host-lease.fence', key: K(1) }, 30);
    expect(ofKind(asked, 'fence-request')).toEqual([
      { kind: 'fence-request', to: [K(1), K(3)], keys: [K(1)] },
    ]);
  });

  it('a voter fences only when it sees the owner gone AND its promise ran out; then never grants it again', () => {
    const voter = voterBoundTo1(100);
    // reachable in the voter's view: not fenced
    expect(fenceVote(voter.policy, voter.ctx, K(1), 100 + PROMISE).answer.fenced).toBe(false);
    voter.on(members(unreachable(1)), 200);
    const early = voter.on(batch(2, [], [K(1)]), 100 + PROMISE - 1);
    expect(ofKind(early, 'fence-answer')).toEqual([
      { kind: 'fence-answer', to: K(2), answer: { key: K(1), fenced: false, freeInMs: 1 } },
    ]);
    const fenced = voter.on(batch(2, [], [K(1)]), 100 + PROMISE);
    expect(ofKind(fenced, 'fence-answer')[0]!.answer).toMatchObject({ fenced: true });
    expect(counts(fenced)).toEqual(['owner/tombstone']);
    // K comes back: refused for good, and told it was fenced
    voter.on(members(three), 100 + PROMISE + 10);
    const back = voter.on(batch(1, [{ scope: O(1), round: 9 }]), 100 + PROMISE + 20);
    expect(ofKind(back, 'reply')[0]!.reply).toMatchObject({ granted: false, fenced: true });
  });

  it('a voter that never granted fences once a promise from its first view would have run out', () => {
    const voter = nodeAt(3);
    voter.on(members(unreachable(1)), 50);
    expect(fenceVote(voter.policy, voter.ctx, K(1), 50 + PROMISE - 1).answer.fenced).toBe(false);
    expect(fenceVote(voter.policy, voter.ctx, K(1), 50 + PROMISE).answer.fenced).toBe(true);
  });

  it('completes after a majority answered fenced AND the pause bound passed; monotonic; reported', () => {
    const asker = nodeAt(2);
    asker.on(members(three), 0);
    asker.on(members(unreachable(1)), 10);
    asker.on({ type: 'host-lease.fence', key: K(1) }, 20);
    // its own answer (it never granted 1, first view at 0) is yes from PROMISE on
    const t = PROMISE + 5;
    asker.on({ type: 'host-lease.wake' }, t);
    expect(asker.ctx.fences[K(1)]!.answers).toEqual({ [K(2)]: true });
    expect(asker.ctx.fences[K(1)]!.majorityAt).toBeNull();
    const majority = asker.on(
      {
        type: 'host-lease.answers',
        from: K(3),
        replies: [],
        fences: [{ key: K(1), fenced: true, freeInMs: 0 }],
      },
      t + 1,
    );
    expect(asker.ctx.fences[K(1)]).toMatchObject({ majorityAt: t + 1, readyAt: t + 1 + FENCE_WAIT });
    expect(isFencedIn(asker.ctx, K(1), t + FENCE_WAIT)).toBe(false);
    expect(majority.wakeInMs).toBeLessThanOrEqual(FENCE_WAIT);
    const done = asker.on({ type: 'host-lease.wake' }, t + 1 + FENCE_WAIT);
    expect(isFencedIn(asker.ctx, K(1), t + 1 + FENCE_WAIT)).toBe(true);
    expect(events(done)).toContain('host-lease.fenced');
    expect(counts(done)).toEqual(['owner/fenced']);
    expect(ofKind(done, 'placement')[0]).toMatchObject({ fenced: [K(1)] });
    // K reachable again: a completed fence stays
    asker.on(members(three), t + 2000);
    expect(isFencedIn(asker.ctx, K(1), t + 2000)).toBe(true);
  });

  it('a pending fence is dropped when the member is reachable again', () => {
    const asker = nodeAt(2);
    asker.on(members(unreachable(1)), 0);
    asker.on({ type: 'host-lease.fence', key: K(1) }, 10);
    expect(events(asker.on(members(three), 20))).toContain('host-lease.fence-dropped');
    expect(asker.ctx.fences).toEqual({});
  });

  it('the owner refused as fenced learns it: holdsOwn false at once, for good, counted', () => {
    const node = nodeAt(1);
    node.on(wantOwn, 0);
    node.on(members(three), 0);
    node.on(
      {
        type: 'host-lease.answers',
        from: K(2),
        replies: [{ scope: O(1), round: 1, granted: true, clean: true, freeInMs: 0, holder: null }],
        fences: [],
      },
      10,
    );
    expect(holdsOwnIn(node.policy, node.ctx, 10)).toBe(true);
    const lost = node.on(
      {
        type: 'host-lease.answers',
        from: K(3),
        replies: [
          { scope: O(1), round: 1, granted: false, clean: false, freeInMs: 250, holder: null, fenced: true },
        ],
        fences: [],
      },
      20,
    );
    expect(holdsOwnIn(node.policy, node.ctx, 20)).toBe(false);
    expect(counts(lost)).toEqual(expect.arrayContaining(['owner/owner-fenced', 'owner/lost']));
    expect(ofKind(lost, 'placement')[0]).toMatchObject({ ownerFenced: true });
    // it no longer bids (and does not "release": the voters refuse it anyway)
    expect(ofKind(lost, 'release')).toEqual([]);
    expect(ofKind(node.on({ type: 'host-lease.wake' }, 300), 'request')).toEqual([]);
  });
});

describe('tombstones', () => {
  it('go when the owner leaves the membership; a grant of its scope once its promise ran out', () => {
    const voter = voterBoundTo1(0);
    voter.on(members(unreachable(1)), 10);
    voter.on(batch(2, [], [K(1)]), PROMISE);
    expect(Object.keys(voter.ctx.tombstones)).toEqual([K(1)]);
    const without1 = membershipOf([member(2), member(3)]);
    voter.on(members(without1), PROMISE + 10);
    expect(voter.ctx.tombstones).toEqual({});
    expect(voter.ctx.grants[O(1)]).toBeUndefined();
    // positive control: while 1 is still a member the tombstone stays
    const kept = voterBoundTo1(0);
    kept.on(members(unreachable(1)), 10);
    kept.on(batch(2, [], [K(1)]), PROMISE);
    kept.on(members({ ...unreachable(1), version: 2 }), PROMISE + 10);
    expect(Object.keys(kept.ctx.tombstones)).toEqual([K(1)]);
  });

  it('of owners the voter never saw (it was behind) are kept, at most MAX_UNKNOWN_TOMBSTONES (even between memberships)', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    const strangers = Array.from(
      { length: MAX_UNKNOWN_TOMBSTONES + 5 },
      (_, i) => `10.1.${i >> 8}.${i & 255}:2552#s${i}`,
    );
    for (const [i, key] of strangers.entries()) voter.on(batch(2, [], [key]), PROMISE + i);
    // a member asking fences of ever new keys cannot grow them without end: the oldest go first
    expect(Object.keys(voter.ctx.tombstones).length).toBeLessThanOrEqual(MAX_UNKNOWN_TOMBSTONES + 3);
    expect(voter.ctx.tombstones[strangers[0]!]).toBeUndefined();
    expect(voter.ctx.tombstones[strangers.at(-1)!]).toBeDefined();
    voter.on(members(three), PROMISE + 10_000);
    expect(Object.keys(voter.ctx.tombstones)).toHaveLength(MAX_UNKNOWN_TOMBSTONES);
    // a stranger's tombstone stays when it shows up as a member (it was fenced: never granted)
    const late = strangers.at(-1)!;
    const [address, uid] = late.split('#') as [string, string];
    const stranger: Member = { address, uid, name: 'late', age: 9, status: 'up', roles: [] };
    voter.on(members(membershipOf([...three.members, stranger])), PROMISE + 10_001);
    const asked = voter.on(
      {
        type: 'host-lease.batch',
        from: late,
        requests: [{ scope: ownerScopeOf(late), round: 1 }],
        fences: [],
      },
      PROMISE + 10_002,
    );
    expect(ofKind(asked, 'reply')[0]!.reply).toMatchObject({ granted: false, fenced: true });
  });
});

describe('batching', () => {
  it('every scope and fence to one voter in ONE batch; a lone singleton request keeps its single form', () => {
    const node = nodeAt(1);
    node.on({ type: 'host-lease.scope', scope: '' }, 0);
    node.on(wantOwn, 0);
    node.on(members(membershipOf([member(1), member(2), member(3), member(4)], { unreachable: [K(4)] })), 0);
    const step = node.on({ type: 'host-lease.fence', key: K(4) }, 1);
    const sends = batchEffects(K(1), step.effects).filter((e) => e.kind === 'send');
    // the first round went out with the membership; the fence is asked at once, alone
    expect(sends.map((e) => e.kind === 'send' && e.message.type)).toEqual([
      'host-lease.batch',
      'host-lease.batch',
      'host-lease.batch',
    ]);
    const next = node.on({ type: 'host-lease.wake' }, LEASE / 4);
    const round = batchEffects(K(1), next.effects).filter((e) => e.kind === 'send');
    expect(round).toHaveLength(3); // one message per voter (2, 3, 4)
    expect(round[0]).toMatchObject({
      kind: 'send',
      to: K(2),
      message: {
        type: 'host-lease.batch',
        from: K(1),
        requests: [
          { scope: '', round: 2 },
          { scope: O(1), round: 2 },
        ],
        fences: [K(4)],
      },
    });
    // the voter answers a batch with one message
    const voter = nodeAt(2);
    voter.on(members(three), 0);
    const answered = voter.on(
      batch(
        1,
        [
          { scope: '', round: 2 },
          { scope: O(1), round: 2 },
        ],
        [K(3)],
      ),
      10,
    );
    const replies = batchEffects(K(2), answered.effects).filter((e) => e.kind === 'send');
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatchObject({ to: K(1), message: { type: 'host-lease.answers', from: K(2) } });
    // a singleton-only node's wire is what it always was
    const single = batchEffects(K(1), [{ kind: 'request', to: [K(2)], scope: '', round: 1 }]);
    expect(single).toEqual([
      { kind: 'send', to: K(2), message: { type: 'host-lease.request', from: K(1), scope: '', round: 1 } },
    ]);
  });

  it('a round due for one scope takes along the others due within half a renewal period', () => {
    const node = nodeAt(1);
    node.on({ type: 'host-lease.scope', scope: '' }, 0);
    node.on(members(three), 0); // singleton round 1 at 0
    node.on(wantOwn, 100); // owner round 1 at 100
    const step = node.on({ type: 'host-lease.wake' }, LEASE / 4); // singleton due; owner due at 350, within 125
    expect(ofKind(step, 'request').map((r) => r.scope)).toEqual(['', O(1)]);
  });
});

describe('an owner bid refused before the voter saw the owner up', () => {
  const joiningOne = membershipOf([member(1, 'joining'), member(2), member(3)]);
  const bid = (voter: ReturnType<typeof nodeAt>, round: number, at: number) =>
    ofKind(voter.on(batch(1, [{ scope: O(1), round }]), at), 'reply')[0]!.reply;

  it('is granted with the view that shows the owner up, for the round refused, once', () => {
    const voter = nodeAt(3);
    voter.on(members(joiningOne), 0);
    expect(bid(voter, 1, 10)).toMatchObject({ granted: false });
    // control: a view that still shows it joining grants nothing
    expect(ofKind(voter.on(members(joiningOne), 20), 'reply')).toEqual([]);
    const up = voter.on(members(three), 40);
    expect(ofKind(up, 'reply')).toEqual([
      {
        kind: 'reply',
        to: K(1),
        reply: { scope: O(1), round: 1, granted: true, clean: true, freeInMs: 0, holder: null },
      },
    ]);
    expect(events(up)).toContain('host-lease.owner-granted-on-up');
    // the promise runs from the grant (the owner counts it from its round's send time, earlier)
    expect(voter.ctx.grants[O(1)]).toMatchObject({ holder: K(1), at: 40 });
    expect(ofKind(voter.on(members(three), 50), 'reply')).toEqual([]);
  });

  it('a voter that never saw the owner keeps its bid too; the latest round counts', () => {
    const voter = nodeAt(3);
    voter.on(members(membershipOf([member(2), member(3)])), 0);
    expect(bid(voter, 1, 10)).toMatchObject({ granted: false });
    expect(bid(voter, 2, 20)).toMatchObject({ granted: false });
    expect(ofKind(voter.on(members(three), 30), 'reply')[0]!.reply).toMatchObject({
      round: 2,
      granted: true,
    });
  });

  it('is not granted to an owner downed or fenced meanwhile, nor a round older than a lease', () => {
    const downed = nodeAt(3);
    downed.on(members(joiningOne), 0);
    bid(downed, 1, 10);
    const gone = downed.on(
      members(membershipOf([member(2), member(3)], { failed: [member(1, 'down')] })),
      20,
    );
    expect(ofKind(gone, 'reply')).toEqual([]);
    expect(downed.ctx.ownerWaiting).toEqual({});

    const fenced = nodeAt(3);
    fenced.on(members(membershipOf([member(2), member(3)])), 0);
    bid(fenced, 1, 10);
    // 1 is not a member here: fenced once a promise from the first view ran out
    fenced.on(batch(2, [], [K(1)]), PROMISE);
    expect(ofKind(fenced.on(members(three), PROMISE + 10), 'reply')).toEqual([]);

    const stale = nodeAt(3);
    stale.on(members(joiningOne), 0);
    bid(stale, 1, 10);
    expect(ofKind(stale.on(members(three), 10 + LEASE), 'reply')).toEqual([]);
    expect(stale.ctx.ownerWaiting).toEqual({});
  });

  it("only the owner's own bid waits, and at most MAX_OWNER_WAITING of them", () => {
    const voter = nodeAt(3);
    voter.on(members(joiningOne), 0);
    voter.on(batch(2, [{ scope: O(1), round: 1 }]), 5);
    expect(voter.ctx.ownerWaiting).toEqual({});
    for (let i = 0; i < MAX_OWNER_WAITING + 10; i++) {
      const stranger = `10.9.${i >> 8}.${i & 255}:2552#x${i}`;
      voter.on(
        {
          type: 'host-lease.batch',
          from: stranger,
          requests: [{ scope: ownerScopeOf(stranger), round: 1 }],
          fences: [],
        },
        10 + i,
      );
    }
    expect(Object.keys(voter.ctx.ownerWaiting)).toHaveLength(MAX_OWNER_WAITING);
  });

  it('the bidder holds its lease with that grant, before its next round', () => {
    const owner = nodeAt(1);
    owner.on(wantOwn, 0);
    const round = ofKind(owner.on(members(three), 0), 'request')[0]!;
    const voter = nodeAt(3);
    voter.on(members(joiningOne), 0);
    const refused = bid(voter, round.round, 5);
    owner.on({ type: 'host-lease.answers', from: K(3), replies: [refused], fences: [] }, 6);
    expect(holdsOwnIn(owner.policy, owner.ctx, 6)).toBe(false);
    const reply = ofKind(voter.on(members(three), 30), 'reply')[0]!.reply;
    owner.on({ type: 'host-lease.answers', from: K(3), replies: [reply], fences: [] }, 31);
    // well before the retry a refusal asks for (a renewal period after the round)
    expect(holdsOwnIn(owner.policy, owner.ctx, 31)).toBe(true);
    expect(owner.ctx.holds[O(1)]!.heldUntil).toBe(LEASE);
  });
});

describe('the voter taint (found by the owner simulation)', () => {
  it('after moving a scope off an expired host, no grant is clean for the pause bound, even after the next host released', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    voter.on({ type: 'host-lease.request', from: K(1), scope: '', round: 1 }, 0);
    // 1's promise ran out (1 may be paused with its mandate): 2 is granted, unclean
    const moved = voter.on({ type: 'host-lease.request', from: K(2), scope: '', round: 1 }, PROMISE);
    expect(ofKind(moved, 'reply')[0]!.reply).toMatchObject({ granted: true, clean: false });
    // 2 releases before it ever ran; 2 asks again: still not clean within the pause bound
    voter.on({ type: 'host-lease.release', from: K(2), scope: '' }, PROMISE + 50);
    const again = voter.on({ type: 'host-lease.request', from: K(2), scope: '', round: 2 }, PROMISE + 100);
    expect(ofKind(again, 'reply')[0]!.reply).toMatchObject({ granted: true, clean: false });
    voter.on({ type: 'host-lease.release', from: K(2), scope: '' }, PROMISE + 150);
    const later = voter.on(
      { type: 'host-lease.request', from: K(1), scope: '', round: 5 },
      PROMISE + FENCE_WAIT,
    );
    expect(ofKind(later, 'reply')[0]!.reply).toMatchObject({ granted: true, clean: true });
  });
});

describe('the wire', () => {
  const types = new MessageTypes();
  registerHostLeaseMessages(types);
  const batchOf = (more: Record<string, unknown>) =>
    ({ type: 'host-lease.batch', from: K(1), requests: [], fences: [], ...more }) as unknown as Message;

  it('takes owner scopes of member keys and singleton roles; refuses a malformed owner scope, an oversized batch', () => {
    expect(
      types.check(
        batchOf({
          requests: [
            { scope: O(1), round: 1 },
            { scope: 'db', round: 1 },
          ],
          fences: [K(2)],
        }),
      ),
    ).toBeUndefined();
    expect(
      types.check({ type: 'host-lease.request', from: K(1), scope: O(1), round: 1 } as unknown as Message),
    ).toBeUndefined();
    expect(types.check(batchOf({ requests: [{ scope: 'owner:not-a-key', round: 1 }] }))).toMatch(
      /host:port#uid/,
    );
    expect(types.check(batchOf({ fences: ['nobody'] }))).toMatch(/host:port#uid/);
    const many = Array.from({ length: MAX_BATCH_FENCES + 1 }, () => K(2));
    expect(types.check(batchOf({ fences: many }))).toMatch(/at most/);
    expect(
      types.check({
        type: 'host-lease.answers',
        from: K(2),
        replies: [
          { scope: O(1), round: 1, granted: false, clean: false, freeInMs: 0, holder: null, fenced: true },
        ],
        fences: [{ key: K(3), fenced: true, freeInMs: 0 }],
      } as unknown as Message),
    ).toBeUndefined();
  });
});
