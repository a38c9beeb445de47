import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import {
  addJoiner,
  createMembershipMachine,
  type Env,
  formCluster,
  initialContext,
  type JoinSeen,
  joinFailureReason,
  type MembershipContext,
  mayFormCluster,
  onJoin,
  onJoinSeen,
  resolveClusterConfig,
  setStatus,
} from '../../packages/cluster/src/index.js';
import type { ActorRef, ActorSystem, UniqueNodeAddress } from '../../packages/core/src/index.js';
import { stateName } from '../support/machine-paths.js';
import {
  addr,
  contextWith,
  envOf,
  grown,
  joinFrom,
  key,
  node,
  refOf,
  sends,
} from '../support/member-fixtures.js';

/**
 * A restarted first seed formed a second cluster because the welcome waits for every member's
 * ack (seconds) while the joiner waits one join timeout (1 s) before taking the silence for an
 * empty cluster. Now any live member that receives a join answers at once with
 * `membership.join-seen` (Akka's InitJoinAck), and a joiner that heard one never forms.
 */

/** The message types a step sends to joiner `n` (by its reply ref), in order. */
const toJoiner = (step: ReturnType<typeof onJoin>, n: number): string[] =>
  sends(step)
    .filter((o) => o.to.kind === 'ref' && o.to.ref.id === refOf(n).id)
    .map((o) => o.message.type);

const seenBy = (n: number): JoinSeen => ({ type: 'membership.join-seen', from: addr(n) });

describe('join-seen: every live member answers a join at once', () => {
  it('the coordinator taking a new join answers join-seen before anything else, and welcomes only later', () => {
    const step = onJoin(envOf(1), contextWith(grown(3)), joinFrom(4));
    expect(toJoiner(step, 4)).toEqual(['membership.join-seen']);
    const first = sends(step)[0]!;
    expect(first.message).toEqual({ type: 'membership.join-seen', from: addr(1) });
    // the welcome still waits for the acks of n2 and n3
    expect(step.context.collectors.map((c) => c.waiting)).toEqual([[key(2), key(3)]]);
  });

  it('a coordinator alone takes and welcomes at once, join-seen first', () => {
    const step = onJoin(envOf(1), contextWith(grown(1)), joinFrom(2));
    expect(toJoiner(step, 2)).toEqual(['membership.join-seen', 'membership.welcome']);
  });

  it('a retry of a join still collecting acks is answered join-seen; one already answered gets its welcome again', () => {
    const taken = onJoin(envOf(1), contextWith(grown(3)), joinFrom(4)).context;
    expect(toJoiner(onJoin(envOf(1), taken, joinFrom(4)), 4)).toEqual(['membership.join-seen']);
    const done = { ...taken, collectors: [] };
    expect(toJoiner(onJoin(envOf(1), done, joinFrom(4)), 4)).toEqual(['membership.welcome']);
  });

  it('a join held until the incarnation it would replace fails is answered join-seen, and changes nothing', () => {
    // n3 has an identity key; a new incarnation at its address proving another key is held
    const withKey = setStatus(
      addJoiner(grown(2), { ...node(3), publicKey: 'key-of-n3' }).membership,
      [key(3)],
      'up',
    );
    const ctx = contextWith(withKey);
    const restart = joinFrom(3, { node: { ...addr(3), uid: 'u3b' }, publicKey: 'another-key' });
    const step = onJoin(envOf(1), ctx, restart);
    expect(toJoiner(step, 3)).toEqual(['membership.join-seen']);
    expect(step.context).toBe(ctx);
  });

  it('a seed that is not the coordinator answers join-seen together with its redirect', () => {
    const step = onJoin(envOf(2), contextWith(grown(3)), joinFrom(4));
    expect(toJoiner(step, 4)).toEqual(['membership.join-seen', 'membership.redirect']);
    expect(sends(step)[0]!.message).toEqual({ type: 'membership.join-seen', from: addr(2) });
    expect(step.context.collectors).toEqual([]);
  });

  it('a node with no membership yet (joining itself) answers nothing', () => {
    expect(sends(onJoin(envOf(2), initialContext, joinFrom(4)))).toEqual([]);
  });
});

describe('join-seen: the joiner', () => {
  const firstSeed = envOf(1);

  it('notes the first member that answered, logs it once, and may no longer form a cluster', () => {
    expect(mayFormCluster(firstSeed, initialContext)).toBe(true);
    const step = onJoinSeen(firstSeed, initialContext, seenBy(2));
    expect(step.context.joinSeenBy).toBe(key(2));
    expect(step.effects).toEqual([
      expect.objectContaining({ kind: 'log', level: 'info', event: 'membership.join-seen' }),
    ]);
    expect(mayFormCluster(firstSeed, step.context)).toBe(false);
    const again = onJoinSeen(firstSeed, step.context, seenBy(3));
    expect(again.context).toBe(step.context);
    expect(again.effects).toEqual([]);
  });

  it('ignores join-seen once it has a membership, and one claiming to be itself', () => {
    const member = contextWith(grown(2));
    expect(onJoinSeen(firstSeed, member, seenBy(2)).context).toBe(member);
    expect(onJoinSeen(firstSeed, initialContext, seenBy(1)).context).toBe(initialContext);
  });

  it('a node that is not the first seed, or may not form, never forms whatever it heard', () => {
    expect(mayFormCluster(envOf(2), initialContext)).toBe(false);
    const noForming: Env = { ...firstSeed, config: { ...firstSeed.config, mayFormCluster: false } };
    expect(mayFormCluster(noForming, initialContext)).toBe(false);
  });

  it('gives up loudly, naming the member that saw the join, when its attempts run out', () => {
    const heard: MembershipContext = { ...initialContext, attempt: 3, joinSeenBy: key(2) };
    expect(joinFailureReason(firstSeed, heard)).toMatch(
      /a live cluster saw the join \(10\.0\.0\.2:2552#u2 answered\).*after 3 attempts; not forming a second cluster/,
    );
    expect(joinFailureReason(firstSeed, { ...initialContext, attempt: 3 })).toMatch(
      /^no seed answered after 3 attempts/,
    );
  });
});

describe('join-seen: the first seed machine alone', () => {
  const system = {
    node: addr(1),
    remoteRef: (n: UniqueNodeAddress, path: string) =>
      ({ address: { cluster: 't', node: n, path }, send: () => {} }) as unknown as ActorRef,
    anyIncarnationRef: (n: { host: string; port: number }, path: string) =>
      ({ address: { cluster: 't', node: { ...n, uid: '*' }, path }, send: () => {} }) as unknown as ActorRef,
    lookup: () => undefined,
    logger: { info() {}, warn() {}, debug() {}, error() {} },
  } as unknown as ActorSystem;
  const config = resolveClusterConfig({
    seeds: [
      { host: '10.0.0.1', port: 2552 },
      { host: '10.0.0.2', port: 2552 },
    ],
    maxJoinAttempts: 3,
  });
  const self = { ...node(1), key: key(1), node: addr(1) };
  const started = () => {
    const clock = new SimulatedClock();
    const actor = createActor(createMembershipMachine({ system, config, self }), { clock }).start();
    return { clock, actor, state: () => stateName(actor.getSnapshot().value) };
  };

  it('positive control: with no answer, the first seed forms a cluster of its own after one join timeout', () => {
    const { clock, state, actor } = started();
    clock.increment(config.joinTimeoutMs);
    expect(state()).toBe('up.coordinator.idle');
    expect(actor.getSnapshot().context.membership!.members.map((m) => m.name)).toEqual(['n1']);
  });

  it('after a join-seen it backs off and asks again instead of forming, then fails loudly when attempts run out', () => {
    const { clock, state, actor } = started();
    actor.send(seenBy(2));
    let elapsed = 0;
    const states = new Set<string>();
    while (state() !== 'joinFailed' && elapsed < 60_000) {
      clock.increment(50);
      elapsed += 50;
      states.add(state());
    }
    expect(states.has('backingOff')).toBe(true);
    expect([...states].some((s) => s.startsWith('up'))).toBe(false);
    expect(state()).toBe('joinFailed');
    const { attempt, failure, membership } = actor.getSnapshot().context;
    expect(attempt).toBe(3);
    expect(membership).toBeUndefined();
    expect(failure).toMatch(/a live cluster saw the join .* not forming a second cluster/);
  });

  it('a welcome from the coordinator still lets it in after a join-seen', () => {
    const { clock, state, actor } = started();
    actor.send(seenBy(2));
    clock.increment(config.joinTimeoutMs);
    expect(state()).toBe('backingOff');
    // n1 rejoins a cluster its old incarnation left: n2 is the oldest, and n1 a joiner in it
    const cluster = addJoiner(formCluster(node(2)), node(1)).membership;
    actor.send({ type: 'membership.welcome', membership: cluster, from: addr(2) });
    expect(state()).toBe('up.member');
  });
});
