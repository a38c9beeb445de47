import { describe, expect, it } from 'vitest';
import type { Member, Membership } from '../../packages/cluster/src/index.js';
import { nodeKey } from '../../packages/core/src/index.js';
import {
  baseOf,
  decide,
  type HostLeaseContext,
  type HostLeaseEffect,
  type HostLeaseEvent,
  type HostLeasePolicy,
  type HostLeaseStep,
  heldUntil,
  initialHostLeaseContext,
  intendedHost,
  MAX_VOTER_SCOPES,
  mandateOf,
  vote,
} from '../../packages/singleton/src/index.js';

/**
 * The host lease's decisions alone: (context, event, now) in, (context, effects, next wake)
 * out. Each rule of the protocol (host-lease-decisions.ts's header) is pinned by a case here;
 * host-lease-safety.test.ts checks the rules together under faults.
 */

const LEASE = 1000;
const DRIFT = 0.01;
const PAUSE = 500;
const MARGIN = 1500;
const S = ''; // the scope of singletons without a role

const member = (i: number, status: Member['status'] = 'up', roles: string[] = []): Member => ({
  address: `10.0.0.${i}:2552`,
  uid: `u${i}`,
  name: `n${i}`,
  age: i,
  status,
  roles,
});
const K = (i: number) => nodeKey(member(i));

const membershipOf = (members: readonly Member[], more: Partial<Membership> = {}): Membership => ({
  version: 1,
  nextAge: 10,
  members,
  failed: [],
  unreachable: [],
  ...more,
});

const policyOf = (self: number, more: Partial<HostLeasePolicy> = {}): HostLeasePolicy => ({
  selfKey: K(self),
  leaseMs: LEASE,
  pauseBoundMs: PAUSE,
  maxClockDrift: DRIFT,
  downedCountsForMs: MARGIN,
  renewEveryMs: LEASE / 4,
  minRetryMs: 20,
  ...more,
});

/** Feeds events to one node's decisions, keeping its context; each `at` is that node's clock. */
function nodeAt(self: number, more: Partial<HostLeasePolicy> = {}) {
  const policy = policyOf(self, more);
  let ctx: HostLeaseContext = initialHostLeaseContext;
  return {
    policy,
    get ctx() {
      return ctx;
    },
    on(event: HostLeaseEvent, at: number): HostLeaseStep {
      const step = decide(policy, ctx, event, at);
      ctx = step.context;
      return step;
    },
  };
}

const members = (m: Membership): HostLeaseEvent => ({ type: 'host-lease.membership', membership: m });
const scope: HostLeaseEvent = { type: 'host-lease.scope', scope: S };
const request = (from: number, round: number): HostLeaseEvent => ({
  type: 'host-lease.request',
  from: K(from),
  scope: S,
  round,
});
const reply = (from: number, round: number, clean = true): HostLeaseEvent => ({
  type: 'host-lease.reply',
  from: K(from),
  scope: S,
  round,
  granted: true,
  clean,
  freeInMs: 0,
  holder: null,
});
const release = (from: number): HostLeaseEvent => ({ type: 'host-lease.release', from: K(from), scope: S });
const wake: HostLeaseEvent = { type: 'host-lease.wake' };

const ofKind = <T extends HostLeaseEffect['kind']>(step: HostLeaseStep, kind: T) =>
  step.effects.filter((e): e is Extract<HostLeaseEffect, { kind: T }> => e.kind === kind);
const logs = (step: HostLeaseStep) => ofKind(step, 'log').map((e) => ({ event: e.event, ...e.fields }));
/** The placement effects' mandates and holders (what these cases pin; other fields may be added). */
const placements = (step: HostLeaseStep) =>
  ofKind(step, 'placement').map(({ mandates, holders }) => ({ mandates, holders }));
const replyOf = (step: HostLeaseStep) => {
  const replies = ofKind(step, 'reply');
  expect(replies).toHaveLength(1);
  return replies[0]!;
};

const three = membershipOf([member(1), member(2), member(3)]);

describe('the voter', () => {
  it('keeps promises for at most MAX_VOTER_SCOPES scopes: a member asking for ever new ones is refused and counted', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    for (let i = 0; i < MAX_VOTER_SCOPES; i++) {
      const step = voter.on({ type: 'host-lease.request', from: K(1), scope: `r${i}`, round: 1 }, 1);
      expect(replyOf(step).reply.granted).toBe(true);
    }
    const beyond = voter.on({ type: 'host-lease.request', from: K(1), scope: 'one-more', round: 1 }, 2);
    expect(replyOf(beyond).reply).toMatchObject({ granted: false, holder: null });
    expect(ofKind(beyond, 'count')).toEqual([{ kind: 'count', scope: '', change: 'scope-refused' }]);
    expect(Object.keys(voter.ctx.grants)).toHaveLength(MAX_VOTER_SCOPES);
    // a scope it already keeps is still answered
    expect(
      replyOf(voter.on({ type: 'host-lease.request', from: K(1), scope: 'r0', round: 2 }, 3)).reply.granted,
    ).toBe(true);
  });

  it('grants one holder at a time, and another only a lease and its drift margin after its last grant', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    expect(replyOf(voter.on(request(1, 1), 100)).reply).toMatchObject({ granted: true, clean: true });
    // bound to 1: 2 is refused, and told when the promise ends
    const refused = replyOf(voter.on(request(2, 1), 600));
    expect(refused).toMatchObject({
      to: K(2),
      reply: { granted: false, freeInMs: 100 + LEASE * (1 + DRIFT) - 600 },
    });
    // 1 renews: the promise runs from the renewal
    expect(replyOf(voter.on(request(1, 2), 700)).reply.granted).toBe(true);
    expect(replyOf(voter.on(request(2, 2), 700 + LEASE * (1 + DRIFT) - 1)).reply.granted).toBe(false);
    // the promise ended: 2 is granted, and told the grant is not clean (1 may be paused)
    const moved = replyOf(voter.on(request(2, 3), 700 + LEASE * (1 + DRIFT)));
    expect(moved.reply).toMatchObject({ granted: true, clean: false });
    expect(voter.ctx.grants[S]).toMatchObject({ holder: K(2), released: false });
  });

  it('vote() alone: free when unbound, bound to the asker, released or expired', () => {
    const policy = policyOf(3);
    const ctx = { ...initialHostLeaseContext, membership: three };
    const first = vote(policy, ctx, K(1), S, 1, 0);
    expect(first).toMatchObject({ granted: true, clean: true, freeInMs: 0 });
    const bound = { ...ctx, grants: first.grants };
    expect(vote(policy, bound, K(2), S, 1, 10)).toMatchObject({
      granted: false,
      freeInMs: LEASE * (1 + DRIFT) - 10,
    });
    expect(vote(policy, bound, K(1), S, 2, 10)).toMatchObject({ granted: true, clean: true });
    const released = { ...ctx, grants: { [S]: { ...first.grants[S]!, released: true } } };
    expect(vote(policy, released, K(2), S, 1, 10)).toMatchObject({ granted: true, clean: true });
  });

  it('grants the bidder it kept waiting at once, clean, when the holder releases', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    voter.on(request(1, 4), 0);
    expect(replyOf(voter.on(request(2, 7), 50)).reply.granted).toBe(false);
    const freed = voter.on(release(1), 60);
    expect(replyOf(freed)).toMatchObject({
      kind: 'reply',
      to: K(2),
      reply: { scope: S, round: 7, granted: true, clean: true, freeInMs: 0 },
    });
    expect(voter.ctx.grants[S]).toMatchObject({ holder: K(2), at: 60, released: false });
  });

  it('ignores a release from a member it is not bound to', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    voter.on(request(1, 1), 0);
    voter.on(request(2, 1), 10);
    expect(ofKind(voter.on(release(2), 20), 'reply')).toEqual([]);
    expect(voter.ctx.grants[S]).toMatchObject({ holder: K(1), released: false });
  });

  it('refuses while it has no membership, when it is not a member, and when it was downed', () => {
    const noView = nodeAt(3);
    expect(replyOf(noView.on(request(1, 1), 0)).reply.granted).toBe(false);
    const stranger = nodeAt(9);
    stranger.on(members(three), 0);
    expect(replyOf(stranger.on(request(1, 1), 0)).reply.granted).toBe(false);
    const downed = nodeAt(3);
    downed.on(members(membershipOf([member(1), member(2)], { failed: [member(3, 'down')] })), 0);
    expect(replyOf(downed.on(request(1, 1), 0)).reply.granted).toBe(false);
    // a joining member is a voter too (every live member is asked, so none is left bound to nobody)
    const joining = nodeAt(3);
    joining.on(members(membershipOf([member(1), member(2), member(3, 'joining')])), 0);
    expect(replyOf(joining.on(request(1, 1), 0)).reply.granted).toBe(true);
  });
});

describe('the holder', () => {
  /** Node 1 (the oldest) bidding in a cluster of three; its clock starts at 0. */
  function bidder() {
    const node = nodeAt(1);
    node.on(scope, 0);
    const first = node.on(members(three), 0);
    return { node, first };
  }

  it('keeps acks of members (and recently downed ones) only: a voter gone for good leaves none behind', () => {
    const { node } = bidder();
    node.on(reply(2, 1), 10);
    node.on(reply(3, 1), 10);
    expect(Object.keys(node.ctx.holds[S]!.acks).sort()).toEqual([K(1), K(2), K(3)].sort());
    // 3 left gracefully (removed), 2 was downed: 2's ack stays while it counts in the base
    node.on(members(membershipOf([member(1)], { failed: [member(2, 'down')] })), 20);
    expect(Object.keys(node.ctx.holds[S]!.acks).sort()).toEqual([K(1), K(2)].sort());
    // positive control of the pruning: a membership naming everyone again keeps everyone's
    node.on(reply(3, 1), 30);
    node.on(members(three), 40);
    expect(Object.keys(node.ctx.holds[S]!.acks).sort()).toEqual([K(1), K(2), K(3)].sort());
  });

  it('asks every other member once the membership names it the host, granting itself', () => {
    const { node, first } = bidder();
    expect(ofKind(first, 'request')).toEqual([{ kind: 'request', to: [K(2), K(3)], scope: S, round: 1 }]);
    expect(node.ctx.holds[S]?.acks).toEqual({ [K(1)]: 0 });
    expect(mandateOf(node.ctx, S, 0)).toBe(false);
    expect(first.wakeInMs).toBe(LEASE / 4);
  });

  it('holds until leaseMs after the send time of the latest round a majority granted', () => {
    const { node } = bidder();
    const got = node.on(reply(2, 1), 40);
    expect(logs(got)).toContainEqual({ event: 'host-lease.acquired', scope: S, clean: true, readyInMs: 0 });
    expect(node.ctx.holds[S]?.heldUntil).toBe(LEASE); // round 1 was sent at 0, not granted at 40
    expect(mandateOf(node.ctx, S, 40)).toBe(true);
    // round 2 at 250, granted by 3 only: the majority (self and 3) granted round 2
    expect(ofKind(node.on(wake, 250), 'request')).toEqual([
      { kind: 'request', to: [K(2), K(3)], scope: S, round: 2 },
    ]);
    node.on(reply(3, 2), 300);
    expect(node.ctx.holds[S]?.heldUntil).toBe(250 + LEASE);
    // a late grant of an older round does not move it
    node.on(reply(3, 1), 320);
    expect(node.ctx.holds[S]?.heldUntil).toBe(250 + LEASE);
    expect(heldUntil(node.policy, node.ctx, node.ctx.holds[S]!, 320)).toBe(250 + LEASE);
  });

  it('loses the mandate at the lease end when no majority renewed, and says so', () => {
    const { node } = bidder();
    node.on(reply(2, 1), 10);
    // renewals go out, nobody answers
    for (let at = 250; at < LEASE; at += 250) node.on(wake, at);
    expect(mandateOf(node.ctx, S, LEASE - 1)).toBe(true);
    const end = node.on(wake, LEASE);
    expect(mandateOf(node.ctx, S, LEASE)).toBe(false);
    expect(logs(end)).toContainEqual({ event: 'host-lease.lost', scope: S });
    expect(placements(end)).toEqual([{ mandates: { [S]: false }, holders: { [S]: K(1) } }]);
  });

  it('after an acquisition from an expired grant, waits the pause bound (on the fastest clock) before running (clean=false)', () => {
    const { node } = bidder();
    const got = node.on(reply(2, 1, false), 30);
    // the bound is real time: this clock may run maxClockDrift fast, so it waits that much longer
    const WAIT = PAUSE * (1 + DRIFT);
    expect(logs(got)).toContainEqual({
      event: 'host-lease.acquired',
      scope: S,
      clean: false,
      readyInMs: WAIT,
    });
    expect(node.ctx.holds[S]).toMatchObject({ heldUntil: LEASE, readyAt: 30 + WAIT });
    expect(mandateOf(node.ctx, S, 30)).toBe(false);
    expect(mandateOf(node.ctx, S, 30 + PAUSE)).toBe(false);
    expect(got.wakeInMs).toBeLessThanOrEqual(WAIT);
    expect(ofKind(got, 'placement')).toEqual([]);
    node.on(wake, 250);
    node.on(reply(2, 2), 260);
    const ready = node.on(wake, 30 + WAIT);
    expect(mandateOf(node.ctx, S, 30 + WAIT)).toBe(true);
    expect(placements(ready)).toEqual([{ mandates: { [S]: true }, holders: { [S]: K(1) } }]);
  });

  it('a clean acquisition runs at once and logs clean=true', () => {
    const { node } = bidder();
    const got = node.on(reply(3, 1, true), 30);
    expect(logs(got)).toEqual([{ event: 'host-lease.acquired', scope: S, clean: true, readyInMs: 0 }]);
    expect(mandateOf(node.ctx, S, 30)).toBe(true);
  });

  it('releases when it no longer should host and runs no instance; keeps the lease while it still runs one', () => {
    const { node } = bidder();
    node.on(reply(2, 1), 10);
    node.on({ type: 'host-lease.hosting', scope: S, running: 1 }, 20);
    // 1 is reported unreachable: 2 should host now, but 1 still runs its instance (hands over)
    const moved = membershipOf(three.members, { unreachable: [K(1)] });
    const kept = node.on(members(moved), 30);
    expect(ofKind(kept, 'release')).toEqual([]);
    expect(mandateOf(node.ctx, S, 30)).toBe(true);
    // the instance stopped: the lease goes back to every voter at once
    const gone = node.on({ type: 'host-lease.hosting', scope: S, running: 0 }, 40);
    expect(ofKind(gone, 'release')).toEqual([{ kind: 'release', to: [K(2), K(3)], scope: S }]);
    expect(logs(gone)).toContainEqual({ event: 'host-lease.released', scope: S });
    expect(node.ctx.holds[S]).toBeUndefined();
    expect(node.ctx.grants[S]).toMatchObject({ holder: K(1), released: true });
    expect(placements(gone)).toEqual([{ mandates: { [S]: false }, holders: {} }]);
    expect(gone.wakeInMs).toBeNull();
  });

  it('does not bid while not up (joining) nor when it should not host', () => {
    const joining = nodeAt(1);
    joining.on(scope, 0);
    expect(
      ofKind(joining.on(members(membershipOf([member(1, 'joining'), member(2)])), 0), 'request'),
    ).toEqual([]);
    const younger = nodeAt(2);
    younger.on(scope, 0);
    expect(ofKind(younger.on(members(three), 0), 'request')).toEqual([]);
    expect(younger.ctx.holds[S]).toBeUndefined();
  });
});

describe('the base and the intended host', () => {
  it('counts downed members in the base for downedCountsForMs after this node saw them downed', () => {
    const node = nodeAt(1);
    node.on(scope, 0);
    node.on(members(membershipOf([member(1), member(2), member(3), member(4), member(5)])), 0);
    const downed = membershipOf([member(1), member(2), member(3)], {
      failed: [member(4, 'down'), member(5, 'down')],
    });
    node.on(members(downed), 100);
    expect(baseOf(node.policy, node.ctx, 100).sort()).toEqual([K(1), K(2), K(3), K(4), K(5)].sort());
    expect(baseOf(node.policy, node.ctx, 100 + MARGIN - 1)).toHaveLength(5);
    expect(baseOf(node.policy, node.ctx, 100 + MARGIN).sort()).toEqual([K(1), K(2), K(3)].sort());
    // a later view keeps the first time it was seen downed
    node.on(members({ ...downed, version: 2 }), 900);
    expect(node.ctx.downedAt[K(4)]).toBe(100);
    // within the margin two of five is no majority; after it, two of three is
    node.on(reply(2, 1), 150);
    expect(mandateOf(node.ctx, S, 150)).toBe(false);
    node.on(wake, 100 + MARGIN);
    node.on(reply(2, node.ctx.holds[S]!.round), 100 + MARGIN + 5);
    expect(mandateOf(node.ctx, S, 100 + MARGIN + 5)).toBe(true);
  });

  it('downedCountsForMs 0 drops downed members at once', () => {
    const policy = policyOf(1, { downedCountsForMs: 0 });
    const ctx = decide(
      policy,
      initialHostLeaseContext,
      members(membershipOf([member(1)], { failed: [member(2, 'down')] })),
      0,
    ).context;
    expect(baseOf(policy, ctx, 0)).toEqual([K(1)]);
  });

  it('counts joining, leaving and exiting members (a side that missed a joiner going up still counts it)', () => {
    const policy = policyOf(1);
    const m = membershipOf([member(1), member(2, 'leaving'), member(3, 'exiting'), member(4, 'joining')]);
    const ctx = decide(policy, initialHostLeaseContext, members(m), 0).context;
    expect(baseOf(policy, ctx, 0).sort()).toEqual([K(1), K(2), K(3), K(4)].sort());
  });

  it('the intended host is the oldest up member with the role that nobody reports unreachable', () => {
    expect(intendedHost(three, S)).toBe(K(1));
    expect(intendedHost(membershipOf(three.members, { unreachable: [K(1)] }), S)).toBe(K(2));
    expect(intendedHost(membershipOf(three.members, { unreachable: [K(1), K(2), K(3)] }), S)).toBeUndefined();
    const roles = membershipOf([member(1), member(2, 'up', ['db']), member(3, 'up', ['db'])], {
      unreachable: [K(2)],
    });
    expect(intendedHost(roles, 'db')).toBe(K(3));
    expect(intendedHost(membershipOf([member(1, 'leaving'), member(2)]), S)).toBe(K(2));
  });
});

describe('the placement effect', () => {
  it('names the host a refusing voter is bound to (the blocker) while the lease is not held, and clears it on acquisition', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    voter.on(request(1, 1), 0);
    expect(replyOf(voter.on(request(2, 1), 10)).reply).toMatchObject({ granted: false, holder: K(1) });

    // 2 should host (1 is reported unreachable); 3 refuses it, bound to 1
    const bidder = nodeAt(2);
    bidder.on(scope, 0);
    bidder.on(members(membershipOf(three.members, { unreachable: [K(1)] })), 0);
    const refusal: HostLeaseEvent = {
      type: 'host-lease.reply',
      from: K(3),
      scope: S,
      round: 1,
      granted: false,
      clean: false,
      freeInMs: 900,
      holder: K(1),
    };
    const blocked = bidder.on(refusal, 20);
    expect(ofKind(blocked, 'placement').map((e) => e.blockers)).toEqual([{ [S]: K(1) }]);
    const acquired = bidder.on(reply(3, 1, true), 30);
    expect(mandateOf(bidder.ctx, S, 30)).toBe(true);
    expect(ofKind(acquired, 'placement').map((e) => e.blockers)).toEqual([{}]);
  });

  it('reports the holder a voter is bound to on change only', () => {
    const voter = nodeAt(3);
    voter.on(members(three), 0);
    expect(placements(voter.on(request(1, 1), 0))).toEqual([{ mandates: {}, holders: { [S]: K(1) } }]);
    expect(ofKind(voter.on(request(1, 2), 250), 'placement')).toEqual([]);
    expect(ofKind(voter.on(request(2, 1), 260), 'placement')).toEqual([]);
    expect(placements(voter.on(release(1), 300))).toEqual([{ mandates: {}, holders: { [S]: K(2) } }]);
  });

  it('reports the mandate when it is gained and lost, not on renewals', () => {
    const node = nodeAt(1);
    node.on(scope, 0);
    node.on(members(three), 0);
    expect(placements(node.on(reply(2, 1), 10))).toEqual([
      { mandates: { [S]: true }, holders: { [S]: K(1) } },
    ]);
    node.on(wake, 250);
    expect(ofKind(node.on(reply(2, 2), 260), 'placement')).toEqual([]);
    expect(ofKind(node.on(reply(3, 2), 270), 'placement')).toEqual([]);
  });
});
