import { beforeEach, describe, expect, it, vi } from 'vitest';
import { heartbeatPeers } from '../../packages/cluster/src/failure-detector/heartbeat-ring.js';
import {
  believedCoordinator,
  convergedHere,
  hasLeaderWork,
} from '../../packages/cluster/src/membership/membership-decisions.js';
import { contextWith, envOf, grown, key } from '../support/member-fixtures.js';

// heartbeatPeers counted, its answers unchanged
vi.mock('../../packages/cluster/src/failure-detector/heartbeat-ring.js', async (actual) => {
  const ring = await actual<typeof import('../../packages/cluster/src/failure-detector/heartbeat-ring.js')>();
  return { ...ring, heartbeatPeers: vi.fn(ring.heartbeatPeers) };
});
const ringBuilt = vi.mocked(heartbeatPeers);

/**
 * The membership machine's guards ask, on every event, whether the coordinator sees convergence
 * and whom this node believes: each built the heartbeat ring of the whole membership (a sort of
 * every member), a tenth of the CPU of a simulated rolling start of 50 (2.93 -> 2.59 s), where
 * nobody is unreachable. The ring is now built only for a member somebody observes unreachable.
 */
describe('the membership decisions build the heartbeat ring only when someone is observed unreachable', () => {
  const env = envOf(1);
  const ctx = contextWith(grown(30));
  // (a block body: a function returned from beforeEach would be run as its cleanup)
  beforeEach(() => {
    ringBuilt.mockClear();
  });
  /** Member 1's own heartbeat targets among the 30, as the ring chooses them. */
  const monitored = (): ReadonlySet<string> => {
    const { targets } = ringBuilt.getMockImplementation()!(
      { address: env.self.address, uid: env.self.uid },
      ctx.membership!.members.filter((m) => m.address !== env.self.address),
      { config: env.config.heartbeatRing },
    );
    return new Set(targets.map((m) => `${m.address}#${m.uid}`));
  };

  it('nobody observed: converged, the oldest believed, no leader work, and no ring built', () => {
    expect(convergedHere(env, ctx)).toBe(true);
    expect(believedCoordinator(env, ctx)?.address).toBe(ctx.membership!.members[0]!.address);
    expect(hasLeaderWork(env, ctx)).toBe(false);
    expect(ringBuilt).not.toHaveBeenCalled();
  });

  it('control: a member observed unreachable builds the ring, once per question, and is judged by it', () => {
    const watched = monitored();
    const target = [...watched][0]!;
    const other = Array.from({ length: 29 }, (_, i) => key(i + 2)).find((k) => !watched.has(k))!;
    ringBuilt.mockClear();
    // a member it monitors: only its own word counts; one it does not: anyone's
    expect(convergedHere(env, { ...ctx, observations: { [target]: [key(30)] } })).toBe(true);
    expect(ringBuilt).toHaveBeenCalledTimes(1);
    expect(convergedHere(env, { ...ctx, observations: { [target]: [key(1)] } })).toBe(false);
    expect(convergedHere(env, { ...ctx, observations: { [other]: [key(30)] } })).toBe(false);
    expect(ringBuilt).toHaveBeenCalledTimes(3);
  });

  it('the same answers as judging every member against the ring (random observations, 30 members)', () => {
    const watched = monitored();
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const observations: Record<string, string[]> = {};
      for (let i = random(4); i > 0; i--) {
        const subject = key(1 + random(30));
        const observers = Array.from({ length: random(3) }, () => key(1 + random(30)));
        observations[subject] = observers;
      }
      // the rule as it was written before: own word for the monitored, anyone's for the rest
      const eager = (k: string) =>
        k !== env.self.key &&
        (watched.has(k)
          ? (observations[k] ?? []).includes(env.self.key)
          : (observations[k] ?? []).length > 0);
      const expected = !Object.entries(observations).some(([k, o]) => o.length > 0 && eager(k));
      expect(convergedHere(env, { ...ctx, observations }), JSON.stringify(observations)).toBe(expected);
    }
  });
});
