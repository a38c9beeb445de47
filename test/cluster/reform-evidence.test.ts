import { describe, expect, it } from 'vitest';
import {
  type Env,
  initialContext,
  joinAttempt,
  type MembershipContext,
  mayFormCluster,
  mayReformCluster,
  noteJoinAsked,
  onJoin,
  onJoinSeen,
  reformCluster,
  resolveClusterConfig,
} from '../../packages/cluster/src/index.js';
import { addr, envOf, joinFrom, key, refOf, sends } from '../support/member-fixtures.js';

/**
 * The pure rule that lets the first seed form again after a total downing (see
 * total-downing-reform.test.ts for the simulated runs): every other forming seed and, with this
 * node, a strict majority of the members it last knew asked it to join within this attempt and
 * the one before, and no member answered join-seen meanwhile.
 */

const at = (n: number) => ({ host: `10.0.0.${n}`, port: 2552 });

/**
 * Member n restarted in place: joins through the members it knew, may not form on silence,
 * forming seeds 1..3, its last membership 1..5 (itself among them, as `knownAddresses` leaves it out).
 */
function restarted(n: number, forming = [1, 2, 3], last: number[] | null = [1, 2, 3, 4, 5]): Env {
  const base = envOf(n);
  return {
    ...base,
    config: resolveClusterConfig({
      seeds: [at(3), at(2), at(4)],
      mayFormCluster: false,
      formingSeeds: forming.map(at),
      ...(last === null ? {} : { lastMembers: last.filter((x) => x !== n).map(at) }),
    }),
  };
}

const joining = (attempt: number, extra: Partial<MembershipContext> = {}): MembershipContext => ({
  ...initialContext,
  attempt,
  ...extra,
});

describe('the first forming seed notes the seeds that ask it to join', () => {
  it('records a forming seed joining, with this attempt, and answers nothing', () => {
    const step = onJoin(restarted(1), joining(2), joinFrom(2));
    expect(step.context.joinAskedBy).toEqual({ '10.0.0.2:2552': 2 });
    expect(sends(step)).toEqual([]);
  });

  it('records a last-known member joining too; ignores a node that is neither, or a join not from its own connection', () => {
    const env = restarted(1);
    expect(noteJoinAsked(env, joining(2), joinFrom(4)).context.joinAskedBy).toEqual({ '10.0.0.4:2552': 2 });
    expect(noteJoinAsked(env, joining(2), joinFrom(6)).context.joinAskedBy).toEqual({});
    // claims to be seed 2 but comes from 4's connection
    const forged = joinFrom(2, { replyTo: refOf(4) });
    expect(noteJoinAsked(env, joining(2), forged).context.joinAskedBy).toEqual({});
  });

  it('a node that is not the first forming seed, or a first start (no last membership), notes nothing', () => {
    expect(noteJoinAsked(restarted(2), joining(2), joinFrom(3)).context.joinAskedBy).toEqual({});
    expect(noteJoinAsked(restarted(1, [1, 2, 3], null), joining(2), joinFrom(2)).context.joinAskedBy).toEqual(
      {},
    );
  });

  it('its join attempts go to the forming seeds too, never to itself', () => {
    const targets = sends(joinAttempt(restarted(2), joining(0))).map((o) =>
      o.to.kind === 'seed' ? `${o.to.address.host}:${o.to.address.port}` : '?',
    );
    expect(targets).toEqual(['10.0.0.3:2552', '10.0.0.4:2552', '10.0.0.1:2552']);
  });
});

describe('mayReformCluster', () => {
  const env = restarted(1);
  // seeds 2 and 3 asked (with node 1 itself: 3 of the 5 last members, a strict majority)
  const both = (a: number, b: number) => ({ joinAskedBy: { '10.0.0.2:2552': a, '10.0.0.3:2552': b } });

  it('holds when every other forming seed asked within this attempt or the one before, a majority with it, and nobody answered', () => {
    expect(mayFormCluster(env, joining(5, both(5, 4)))).toBe(false); // silence alone: never, on a restart
    expect(mayReformCluster(env, joining(5, both(5, 4)))).toBe(true);
  });

  it('does not hold while one forming seed has not asked, or asked only long ago', () => {
    const four = { '10.0.0.4:2552': 5, '10.0.0.5:2552': 5 };
    expect(mayReformCluster(env, joining(5, { joinAskedBy: { '10.0.0.2:2552': 5, ...four } }))).toBe(false);
    expect(mayReformCluster(env, joining(5, both(5, 3)))).toBe(false);
  });

  it('does not hold while the askers and itself are no strict majority of the members it last knew', () => {
    // seeds 1..2 only, last membership 1..5: seed 2 asking makes 2 of 5; the other three may be a live cluster
    const twoSeeds = restarted(1, [1, 2]);
    expect(mayReformCluster(twoSeeds, joining(5, { joinAskedBy: { '10.0.0.2:2552': 5 } }))).toBe(false);
    // a third (member 4) asking makes 3 of 5: the rest cannot be a majority
    const three = { '10.0.0.2:2552': 5, '10.0.0.4:2552': 4 };
    expect(mayReformCluster(twoSeeds, joining(5, { joinAskedBy: three }))).toBe(true);
    // an even split is no majority: 3 of 6
    const six = restarted(1, [1, 2], [1, 2, 3, 4, 5, 6]);
    expect(mayReformCluster(six, joining(5, { joinAskedBy: three }))).toBe(false);
    // asks from addresses outside the last membership never count (the forming seeds aside)
    expect(
      mayReformCluster(twoSeeds, joining(5, { joinAskedBy: { '10.0.0.2:2552': 5, '10.0.0.9:2552': 5 } })),
    ).toBe(false);
  });

  it('never holds on a first start (no last membership), however many asked', () => {
    const first = restarted(1, [1, 2, 3], null);
    expect(mayReformCluster(first, joining(5, both(5, 5)))).toBe(false);
  });

  it('does not hold while a member answered join-seen lately; does again once that cluster went silent', () => {
    expect(mayReformCluster(env, joining(5, { ...both(5, 5), joinSeenBy: key(4), joinSeenAttempt: 4 }))).toBe(
      false,
    );
    expect(mayReformCluster(env, joining(5, { ...both(5, 5), joinSeenBy: key(4), joinSeenAttempt: 3 }))).toBe(
      true,
    );
  });

  it('never holds for a node that is not the first forming seed, or the only one', () => {
    expect(mayReformCluster(restarted(2), joining(5, both(5, 5)))).toBe(false);
    expect(mayReformCluster(restarted(1, [1]), joining(5))).toBe(false);
  });

  it('is off for a node that may not form and was given no forming seeds', () => {
    const never: Env = {
      ...env,
      config: resolveClusterConfig({ seeds: [at(1), at(2)], mayFormCluster: false }),
    };
    expect(mayReformCluster(never, joining(5, both(5, 5)))).toBe(false);
  });

  it('a later join-seen refreshes the evidence of a live cluster without logging again', () => {
    const first = onJoinSeen(env, joining(2), { type: 'membership.join-seen', from: addr(4) });
    expect(first.context.joinSeenAttempt).toBe(2);
    const later = onJoinSeen(
      env,
      { ...first.context, attempt: 6 },
      { type: 'membership.join-seen', from: addr(4) },
    );
    expect(later.context.joinSeenAttempt).toBe(6);
    expect(later.context.joinSeenBy).toBe(key(4));
    expect(later.effects).toEqual([]);
  });

  it('forming on the evidence logs membership.reformed and forms a cluster of this node', () => {
    const step = reformCluster(env, joining(5, both(5, 4)));
    expect(step.effects[0]).toEqual(expect.objectContaining({ kind: 'log', event: 'membership.reformed' }));
    expect(step.context.membership?.members.map((m) => m.address)).toEqual(['10.0.0.1:2552']);
  });
});
