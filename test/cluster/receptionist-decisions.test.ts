import { describe, expect, it } from 'vitest';
import {
  addJoiner,
  downMembers,
  type Membership,
  removeMembers,
  setStatus,
} from '../../packages/cluster/src/index.js';
import {
  MAX_REFS_PER_KEY,
  type ReceptionistListing,
  registerReceptionistMessages,
} from '../../packages/cluster/src/receptionist/messages.js';
import {
  decide,
  initialReceptionistContext,
  listingOf,
  MAX_LISTING_SENDS,
  type ReceptionistContext,
  type ReceptionistEffect,
  type ReceptionistEvent,
  type ReceptionistPolicy,
} from '../../packages/cluster/src/receptionist/receptionist-decisions.js';
import { type ActorRef, ActorSystem, MessageTypes } from '../../packages/core/src/index.js';
import { grown, key, node } from '../support/member-fixtures.js';

// member 1 is this node; its refs are local to this system
const system = new ActorSystem({ cluster: 'it', host: '10.0.0.1', port: 2552, uid: 'u1' });
const refOf = (n: number, path: string): ActorRef =>
  system.remoteRef({ host: `10.0.0.${n}`, port: 2552, uid: `u${n}` }, path);
const policy: ReceptionistPolicy = {
  selfKey: key(1),
  maxKeysPerNode: 4,
  maxRefsPerKey: 3,
  maxRefsPerNode: 5,
};

/** Runs events through `decide`, returning the last context and every effect in order. */
function run(events: readonly ReceptionistEvent[], p = policy, from = initialReceptionistContext) {
  let context: ReceptionistContext = from;
  const effects: ReceptionistEffect[] = [];
  for (const event of events) {
    const step = decide(p, context, event);
    context = step.context;
    effects.push(...step.effects);
  }
  return { context, effects };
}
const membership = (m: Membership): ReceptionistEvent => ({ type: 'receptionist.membership', membership: m });
const register = (key: string, ref: ActorRef): ReceptionistEvent => ({
  type: 'receptionist.register',
  key,
  ref,
});
const listing = (
  n: number,
  version: number,
  entries: [string, ActorRef[]][],
  reply = false,
): ReceptionistListing => ({
  type: 'receptionist.listing',
  from: key(n),
  version,
  entries: entries.map(([k, refs]) => ({ key: k, refs })),
  reply,
});
const ids = (refs: readonly ActorRef[]) => refs.map((r) => r.path);
const kinds = (effects: readonly ReceptionistEffect[]) => effects.map((e) => e.kind);
const sends = (effects: readonly ReceptionistEffect[]) =>
  effects.flatMap((e) =>
    e.kind === 'send-listing' ? [{ to: e.to, version: e.listing.version, reply: e.listing.reply }] : [],
  );

describe('receptionist decisions', () => {
  it('a local registration is watched, listed, and sent whole to every other up member', () => {
    const a = refOf(1, '/user/a');
    const { context, effects } = run([membership(grown(3)), register('inbox', a)]);
    expect(ids(listingOf(context, 'inbox'))).toEqual(['/user/a']);
    // first seen up with nothing to tell: nothing sent (a member with registrations tells us);
    // then the registration goes to both
    expect(kinds(effects)).toEqual(['watch', 'listing-changed', 'send-listing']);
    expect(sends(effects)).toEqual([{ to: [key(2), key(3)], version: 1, reply: false }]);
    // the same registration again changes nothing
    expect(decide(policy, context, register('inbox', a)).effects).toEqual([]);
  });

  it('a member that comes up later gets our listing once, asked for its own; one that already has it does not', () => {
    const m3 = grown(3);
    const start = run([membership(m3), register('inbox', refOf(1, '/user/a'))]).context;
    const joined = setStatus(addJoiner(m3, node(4)).membership, [key(4)], 'up');
    const { effects, context } = run([membership(joined)], policy, start);
    expect(sends(effects)).toEqual([{ to: [key(4)], version: 1, reply: true }]);
    expect(sends(run([membership(joined)], policy, context).effects)).toEqual([]);
    // asked, we answer with ours (not asking back); a plain listing is not answered
    const asked = run([listing(4, 1, [], true)], policy, context);
    expect(sends(asked.effects)).toEqual([{ to: [key(4)], version: 1, reply: false }]);
    expect(sends(run([listing(4, 1, [])], policy, context).effects)).toEqual([]);
    // a joining member waits until it is up
    const joining = addJoiner(m3, node(5)).membership;
    expect(sends(run([membership(joining)], policy, start).effects)).toEqual([]);
  });

  it('a node without registrations sends nothing when members come up; one with registrations sends until answered', () => {
    // member 3 sees 1 and 2 (older) up, member 1 sees 4 (younger) come up: with nothing
    // registered, neither sends anything nor schedules an ask (an empty listing is no listing)
    const p3: ReceptionistPolicy = { ...policy, selfKey: key(3) };
    expect(run([membership(grown(3))], p3).effects).toEqual([]);
    const joining = addJoiner(grown(3), node(4)).membership;
    const joined = setStatus(joining, [key(4)], 'up');
    const start = run([membership(grown(3))]).context;
    expect(run([membership(joining), membership(joined)], policy, start).effects).toEqual([]);
    // asked by a member with registrations, it answers all the same (its empty listing): the
    // answer is what stops the asker's repeats
    expect(sends(run([membership(joined), listing(4, 1, [], true)], policy, start).effects)).toEqual([
      { to: [key(4)], version: 0, reply: false },
    ]);
    // positive control: with a registration of our own we tell it at once, asking for its listing
    const registered = run([register('inbox', refOf(1, '/user/a'))], policy, start);
    const seen = run([membership(joining), membership(joined)], policy, registered.context);
    expect(sends(seen.effects)).toEqual([{ to: [key(4)], version: 1, reply: true }]);
    expect(kinds(seen.effects)).toContain('ask-later');
    // no answer (refused while we were not in its view, or lost): sent again at each ask-due, up
    // to MAX_LISTING_SENDS in all
    let ctx = seen.context;
    const repeats: number[] = [];
    for (let i = 0; i < MAX_LISTING_SENDS + 2; i++) {
      const due = run([{ type: 'receptionist.ask-due' }], policy, ctx);
      repeats.push(sends(due.effects).length);
      ctx = due.context;
    }
    expect(repeats).toEqual([...Array(MAX_LISTING_SENDS - 1).fill(1), 0, 0, 0]);
    // its answer came, even an empty one: the ask-due sends nothing and schedules nothing more
    const told = run([listing(4, 0, []), { type: 'receptionist.ask-due' }], policy, seen.context);
    expect(told.effects.filter((e) => e.kind === 'send-listing' || e.kind === 'ask-later')).toEqual([]);
    // gone by then: not sent
    const gone = run([membership(grown(3)), { type: 'receptionist.ask-due' }], policy, seen.context);
    expect(sends(gone.effects)).toEqual([]);
  });

  it("a member's listing is kept per member key; older versions and non-members are ignored", () => {
    const b = refOf(2, '/user/b');
    const b2 = refOf(2, '/user/b2');
    const { context } = run([
      membership(grown(3)),
      listing(2, 2, [['inbox', [b, b2]]]),
      listing(2, 1, [['inbox', [b]]]), // reordered, older: ignored
    ]);
    expect(ids(listingOf(context, 'inbox'))).toEqual(['/user/b', '/user/b2']);
    const stranger = run([listing(9, 1, [['inbox', [refOf(9, '/user/x')]]])], policy, context);
    expect(ids(listingOf(stranger.context, 'inbox'))).toEqual(['/user/b', '/user/b2']);
    expect(stranger.effects.map((e) => e.kind === 'log' && e.event)).toEqual([
      'receptionist.listing-ignored',
    ]);
  });

  it("a member's entries leave with it when it is downed or removed (and only then)", () => {
    const m3 = grown(3);
    const withB = run([membership(m3), listing(2, 1, [['inbox', [refOf(2, '/user/b')]]])]).context;
    // positive control: a new membership that still has member 2 keeps its entries
    const kept = run([membership(setStatus(m3, [key(3)], 'leaving'))], policy, withB);
    expect(ids(listingOf(kept.context, 'inbox'))).toEqual(['/user/b']);
    for (const gone of [downMembers(m3, [key(2)]), removeMembers(m3, [key(2)])]) {
      const { context, effects } = run([membership(gone)], policy, withB);
      expect(listingOf(context, 'inbox')).toEqual([]);
      expect(effects).toContainEqual({ kind: 'listing-changed', key: 'inbox', refs: [] });
    }
  });

  it("an actor's entries leave when it stops; a deregistered actor is unwatched", () => {
    const a = refOf(1, '/user/a');
    const start = run([membership(grown(2)), register('inbox', a), register('other', a)]).context;
    const stopped = run([{ type: 'doyen.terminated', ref: a, reason: 'stopped' }], policy, start);
    expect(listingOf(stopped.context, 'inbox')).toEqual([]);
    expect(listingOf(stopped.context, 'other')).toEqual([]);
    expect(sends(stopped.effects)).toEqual([{ to: [key(2)], version: 3, reply: false }]);
    const dereg = run(
      [
        { type: 'receptionist.deregister', key: 'inbox', ref: a },
        { type: 'receptionist.deregister', key: 'other', ref: a },
      ],
      policy,
      start,
    );
    expect(kinds(dereg.effects).filter((k) => k === 'watch' || k === 'unwatch')).toEqual(['unwatch']);
  });

  it('find answers the listing across members', () => {
    const answers: string[][] = [];
    const { effects } = run([
      membership(grown(3)),
      register('inbox', refOf(1, '/user/a')),
      listing(3, 1, [['inbox', [refOf(3, '/user/c')]]]),
      { type: 'receptionist.find', key: 'inbox', reply: (refs) => answers.push(ids(refs)) },
    ]);
    for (const e of effects) if (e.kind === 'answer') e.reply(e.refs);
    expect(answers).toEqual([['/user/a', '/user/c']]);
  });

  it('registrations are bounded per node and per key (positive control: unbounded accepts them)', () => {
    const many = Array.from({ length: 6 }, (_, i) => register(`key-${i}`, refOf(1, `/user/a${i}`)));
    const crowded = Array.from({ length: 6 }, (_, i) => register('inbox', refOf(1, `/user/b${i}`)));
    const bounded = run([membership(grown(2)), ...many, ...crowded]);
    expect(bounded.context.local.entries.size).toBe(policy.maxKeysPerNode);
    expect(bounded.context.local.entries.get('inbox')).toBeUndefined(); // 'inbox' would be a 5th key
    const refusals = bounded.effects.flatMap((e) => (e.kind === 'refused' ? [e.reason] : []));
    expect(refusals).toEqual(Array(8).fill('keys-per-node'));
    const perKey = run([membership(grown(2)), ...crowded]);
    expect(perKey.context.local.entries.get('inbox')).toHaveLength(policy.maxRefsPerKey);
    expect(perKey.effects.filter((e) => e.kind === 'refused')).toHaveLength(3);
    const open = { ...policy, maxKeysPerNode: Infinity, maxRefsPerKey: Infinity, maxRefsPerNode: Infinity };
    const unbounded = run([membership(grown(2)), ...many, ...crowded], open);
    expect(unbounded.context.local.entries.size).toBe(7);
    expect(unbounded.context.local.entries.get('inbox')).toHaveLength(6);
  });

  it('a node holds at most maxRefsPerNode registrations in all, here and from a member', () => {
    const six = Array.from({ length: 6 }, (_, i) => register(i < 3 ? 'a' : 'b', refOf(1, `/user/x${i}`)));
    const bounded = run([membership(grown(2)), ...six]);
    expect(bounded.effects.flatMap((e) => (e.kind === 'refused' ? [e.reason] : []))).toEqual([
      'refs-per-node',
    ]);
    const unbounded = run([membership(grown(2)), ...six], { ...policy, maxRefsPerNode: Infinity });
    expect(unbounded.effects.some((e) => e.kind === 'refused')).toBe(false); // positive control
    const wide = listing(2, 1, [
      ['a', [refOf(2, '/user/a0'), refOf(2, '/user/a1'), refOf(2, '/user/a2')]],
      ['b', [refOf(2, '/user/b0'), refOf(2, '/user/b1'), refOf(2, '/user/b2')]],
    ]);
    expect(
      run([membership(grown(2)), wide]).effects.flatMap((e) => (e.kind === 'refused' ? [e.reason] : [])),
    ).toEqual(['refs-per-node']);
    const kept = run([membership(grown(2)), wide], { ...policy, maxRefsPerNode: 6 });
    expect(listingOf(kept.context, 'b')).toHaveLength(3);
  });

  it("a member's listing over the bounds, or naming another node's actors, is refused", () => {
    const big = listing(2, 1, [['inbox', Array.from({ length: 4 }, (_, i) => refOf(2, `/user/b${i}`))]]);
    const refused = run([membership(grown(3)), big]);
    expect(listingOf(refused.context, 'inbox')).toEqual([]);
    expect(refused.effects.flatMap((e) => (e.kind === 'refused' ? [e.reason] : []))).toEqual([
      'refs-per-key',
    ]);
    // positive control: the same listing within the bounds is kept
    const open = { ...policy, maxRefsPerKey: 4 };
    expect(listingOf(run([membership(grown(3)), big], open).context, 'inbox')).toHaveLength(4);
    const foreign = run([membership(grown(3)), listing(2, 1, [['inbox', [refOf(3, '/user/c')]]])]);
    expect(foreign.effects.flatMap((e) => (e.kind === 'refused' ? [e.reason] : []))).toEqual(['foreign-ref']);
    expect(listingOf(foreign.context, 'inbox')).toEqual([]);
  });

  it('the wire refuses a listing over the hard caps or speaking for another node', () => {
    const types = new MessageTypes();
    registerReceptionistMessages(types);
    const origin = { host: '10.0.0.2', port: 2552, uid: 'u2' };
    const within = listing(2, 1, [
      ['inbox', Array.from({ length: MAX_REFS_PER_KEY }, (_, i) => refOf(2, `/user/b${i}`))],
    ]);
    expect(types.parse(within, origin).ok).toBe(true); // positive control
    const over = listing(2, 1, [
      ['inbox', Array.from({ length: MAX_REFS_PER_KEY + 1 }, (_, i) => refOf(2, `/user/b${i}`))],
    ]);
    expect(types.parse(over, origin)).toMatchObject({ ok: false, reason: 'invalid-message' });
    const forged = listing(2, 1, [['inbox', [refOf(3, '/user/c')]]]);
    expect(types.parse(forged, origin)).toMatchObject({ ok: false, reason: 'forged' });
    expect(types.authorityOf('receptionist.listing')).toBe('member');
  });
});
