import { afterEach, describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { Message } from '../../packages/core/src/index.js';
import {
  type ElectionDeps,
  type ElectionPeer,
  resolveElectionOptions,
} from '../../packages/election/src/index.js';
import { createRingMachine } from '../../packages/election/src/ring-machine.js';
import type { RingVariant } from '../../packages/election/src/ring-messages.js';
import { forEachSeed } from '../../packages/testkit/src/index.js';
import { forEachAgreedRun } from '../support/agreed-runs.js';
import { splitSixtyForty } from '../support/election-scenarios.js';
import { SimElectionCluster } from '../support/sim-election.js';

let cluster: SimElectionCluster | undefined;
afterEach(() => {
  cluster?.shutdown();
  cluster = undefined;
});

const VARIANTS: readonly RingVariant[] = ['ring', 'ring-max'];
const SEEDS = [1, 2, 3];

function start(seed: number, algorithm: RingVariant, size = 5): SimElectionCluster {
  cluster = SimElectionCluster.start({ seed, size, algorithm });
  return cluster;
}

describe.each(VARIANTS)("election '%s' (CHANG79)", (algorithm) => {
  /** Per seed of SEEDS: a run agreed on a leader, then `body` (see forEachAgreedRun). */
  const eachAgreed = (body: (run: { c: SimElectionCluster }) => Promise<void>) =>
    forEachAgreedRun(SEEDS, (seed) => ({ c: start(seed, algorithm) }), body);

  it('elects the highest rank at start, and it stays', async () => {
    await eachAgreed(async ({ c }) => {
      expect(c.agreedLeader()).toBe(c.peers[4]!.address);
      await c.sim.runFor(3_000);
      expect(c.agreedLeader()).toBe(c.peers[4]!.address);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
    });
  });

  it('after the leader crashes, the highest live rank leads', async () => {
    await eachAgreed(async ({ c }) => {
      c.crash(4);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[3]!.address);
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([c.peers[3]!.address]);
    });
  });

  it('skips unreachable successors: two adjacent nodes (the leader and its successor) crash', async () => {
    await eachAgreed(async ({ c }) => {
      // 4 leads; its successor in the ring is 0: the election from 3 must skip both
      c.crash(4);
      c.crash(0);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[3]!.address);
      expect(c.leaders()).toEqual([c.peers[3]!.address]);
    });
  });

  it('elects one leader per side of a 60/40 partition, and one after the heal', async () => {
    await eachAgreed(async ({ c }) => {
      const { majority, minority } = await splitSixtyForty(c);
      await c.sim.runFor(2_000);
      expect(c.agreedLeader(majority)).toBe(c.peers[2]!.address);
      expect(c.agreedLeader(minority)).toBe(c.peers[4]!.address);
      expect(c.leaders()).toHaveLength(2);
      c.heal();
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[4]!.address);
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
    });
  });

  it('a restarted higher node takes the lead back; lost and duplicated messages are survived', async () => {
    await forEachSeed([4, 5], async (seed) => {
      cluster = SimElectionCluster.start({
        seed,
        size: 5,
        algorithm,
        network: { dropRate: 0.05, duplicateRate: 0.05 },
      });
      const c = cluster;
      await c.untilAgreed();
      c.crash(4);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[3]!.address);
      c.startNode(4);
      await c.sim.runUntil(() => c.agreedLeader() === c.peers[4]!.address, {
        timeoutMs: 20_000,
        description: 'the restarted highest rank leads',
      });
      await c.sim.runFor(2_000);
      expect(c.leaders()).toEqual([c.peers[4]!.address]);
      c.shutdown();
    });
  });

  it('refuses malformed messages of each type', () => {
    const c = start(1, algorithm, 1);
    const check = (m: Record<string, unknown>) => c.nodes[0]!.system.messageTypes.check(m as never);
    const a = c.peers[0]!.address;
    const carried = algorithm === 'ring' ? { live: [a] } : { max: a };
    const good = {
      election: {
        type: `election.${algorithm}.election`,
        from: a,
        initiator: a,
        id: 1,
        token: 2,
        ...carried,
      },
      elected: {
        type: `election.${algorithm}.elected`,
        from: a,
        initiator: a,
        id: 1,
        token: 2,
        leader: a,
        ...(algorithm === 'ring' ? { live: [a] } : {}),
      },
      ack: { type: `election.${algorithm}.ack`, from: a, token: 2 },
      heartbeat: { type: `election.${algorithm}.heartbeat`, from: a },
    };
    for (const m of Object.values(good)) {
      expect(check(m)).toBeUndefined();
      expect(check({ ...m, from: 42 })).toBeTypeOf('string');
    }
    expect(check({ ...good.election, id: -1 })).toBeTypeOf('string');
    expect(check({ ...good.ack, token: 'x' })).toBeTypeOf('string');
    expect(check({ ...good.elected, leader: null })).toBeTypeOf('string');
    if (algorithm === 'ring') expect(check({ ...good.election, live: [a, 7] })).toBeTypeOf('string');
    else expect(check({ ...good.election, max: '' })).toBeTypeOf('string');
  });
});

describe('ring election at scale', () => {
  it('25 nodes: after the leader crashes, rank 23 leads', async () => {
    await forEachSeed([7], async (seed) => {
      const c = start(seed, 'ring', 25);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[24]!.address);
      c.crash(24);
      await c.untilAgreed();
      expect(c.agreedLeader()).toBe(c.peers[23]!.address);
      expect(c.leaders()).toHaveLength(1);
    });
  });
});

describe("election 'ring-max' carries only the highest rank", () => {
  /** The first Election a fresh node sends, captured from its machine. */
  function firstElection(variant: RingVariant): Record<string, unknown> {
    const c = start(1, variant, 3);
    const node = c.nodes[0]!;
    const sent: Message[] = [];
    const deps: ElectionDeps = {
      system: node.system,
      self: node.peer,
      options: resolveElectionOptions({ algorithm: variant, peers: c.peers }),
      send: (_to: ElectionPeer, m: Message) => sent.push(m),
      report: () => {},
    };
    const actor = createActor(createRingMachine(deps, variant)).start();
    actor.stop();
    const election = sent.find((m) => m.type === `election.${variant}.election`);
    expect(election).toBeDefined();
    return election as unknown as Record<string, unknown>;
  }

  it('sends the running max where ring sends the live set', () => {
    const set = firstElection('ring');
    expect(set.live).toEqual([cluster!.peers[0]!.address]);
    cluster!.shutdown();
    const max = firstElection('ring-max');
    expect(max).not.toHaveProperty('live');
    expect(max.max).toBe(cluster!.peers[0]!.address);
  });
});
