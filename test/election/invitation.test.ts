import { afterEach, describe, expect, it } from 'vitest';
import { invitationElection } from '../../packages/election/src/invitation.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { forEachAgreedRun } from '../support/agreed-runs.js';
import { splitSixtyForty } from '../support/election-scenarios.js';
import { SimElectionCluster } from '../support/sim-election.js';

let cluster: SimElectionCluster | undefined;
afterEach(() => {
  cluster?.shutdown();
  cluster = undefined;
});

const SEEDS = [1, 2, 3, 4];

function start(seed: number, size = 5, network?: { dropRate: number }): SimElectionCluster {
  cluster = SimElectionCluster.start({
    seed,
    size,
    algorithm: 'invitation',
    ...(network ? { network } : {}),
  });
  return cluster;
}

describe("election 'invitation'", () => {
  /** Per seed of SEEDS: a run agreed on a leader, then `body` (see forEachAgreedRun). */
  const eachAgreed = (body: (run: { c: SimElectionCluster }) => Promise<void>) =>
    forEachAgreedRun(SEEDS, (seed) => ({ c: start(seed) }), body);

  it('does not promise a single leader', () => {
    expect(invitationElection.singleLeader).toBe(false);
  });

  it('merges the groups of one into one group at start, and it stays', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed);
      // every node starts leading a group of itself
      expect(c.leaders()).toHaveLength(5);
      await c.untilAgreed();
      const leader = c.agreedLeader();
      await c.sim.runFor(3_000);
      expect(c.agreedLeader()).toBe(leader);
      expect(c.leaders()).toEqual([leader]);
      c.shutdown();
    });
  });

  it('after the leader crashes, one leader leads one group of all live nodes', async () => {
    await eachAgreed(async ({ c }) => {
      const old = c.agreedLeader()!;
      c.crash(c.nodes.findIndex((n) => n.peer.address === old));
      await c.untilAgreed();
      const leader = c.agreedLeader();
      expect(leader).not.toBe(old);
      await c.sim.runFor(2_000);
      expect(c.agreedLeader()).toBe(leader);
      expect(c.leaders()).toEqual([leader]);
      expect(c.live()).toHaveLength(4);
    });
  });

  it('keeps one group per side of a 60/40 partition; after the heal the larger side leads', async () => {
    await eachAgreed(async ({ c }) => {
      const { majority, minority } = await splitSixtyForty(c);
      // let leaders drop the members they no longer hear, so sizes are the sides' sizes
      await c.sim.runFor(2_000);
      const big = c.agreedLeader(majority);
      expect(big).toBeDefined();
      expect(c.agreedLeader(minority)).toBeDefined();
      expect(c.leaders()).toHaveLength(2);
      c.heal();
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(big);
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([big]);
    });
  });

  it('converges despite 5% message loss', async () => {
    await forEachAgreedRun(
      [5, 6],
      (seed) => ({ c: start(seed, 5, { dropRate: 0.05 }) }),
      async ({ c }) => {
        const old = c.agreedLeader()!;
        c.crash(c.nodes.findIndex((n) => n.peer.address === old));
        await c.untilAgreed();
        expect(c.leaders()).toHaveLength(1);
      },
    );
  });

  it('a restarted node, alone in its new incarnation, is merged back', async () => {
    await eachAgreed(async ({ c }) => {
      const leader = c.agreedLeader()!;
      const other = c.nodes.find((n) => n.peer.address !== leader)!.index;
      c.crash(other);
      await c.sim.runFor(1_000);
      c.startNode(other);
      expect(c.nodes[other]!.election.view().role).toBe('leading');
      await c.untilAgreed();
      // the larger group absorbs the new singleton: same leader as before
      expect(c.agreedLeader()).toBe(leader);
      expect(c.leaders()).toEqual([leader]);
    });
  });

  it('25 nodes: after the leader crashes, one group forms again', async () => {
    await forEachSeed([7], async (seed) => {
      const c = start(seed, 25);
      await c.untilAgreed();
      const old = c.agreedLeader()!;
      c.crash(c.nodes.findIndex((n) => n.peer.address === old));
      await c.untilAgreed();
      expect(c.leaders()).toHaveLength(1);
    });
  });

  it('refuses malformed messages of each type', () => {
    const c = start(1, 1);
    const check = (m: Record<string, unknown>) => c.nodes[0]!.system.messageTypes.check(m as never);
    const a = c.peers[0]!.address;
    const good: Record<string, Record<string, unknown>> = {
      invite: { from: a, size: 3 },
      redirect: { from: a, leader: a },
      join: { from: a, id: 1, members: [a] },
      welcome: { from: a, id: 1 },
      'new-leader': { from: a, leader: a },
      heartbeat: { from: a, members: [a] },
      'heartbeat-ack': { from: a, leader: a },
    };
    for (const [kind, fields] of Object.entries(good)) {
      const m = { type: `election.invitation.${kind}`, ...fields };
      expect(check(m)).toBeUndefined();
      expect(check({ ...m, from: 42 })).toBeTypeOf('string');
    }
    expect(check({ type: 'election.invitation.invite', from: a, size: -1 })).toBeTypeOf('string');
    expect(check({ type: 'election.invitation.join', from: a, id: 1, members: [a, null] })).toBeTypeOf(
      'string',
    );
    expect(check({ type: 'election.invitation.heartbeat', from: a, members: 'x' })).toBeTypeOf('string');
    expect(check({ type: 'election.invitation.redirect', from: a, leader: null })).toBeTypeOf('string');
  });
});
