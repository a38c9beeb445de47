import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActorSystem, Message, NodeAddress } from '../../packages/core/src/index.js';
import {
  Election,
  type ElectionPeer,
  FileVoteStore,
  MemoryVoteStore,
  peersOf,
  quorumElection,
  type VoteStore,
} from '../../packages/election/src/index.js';
import { QUORUM_MESSAGE_TYPES } from '../../packages/election/src/quorum-messages.js';
import { forEachSeed, Simulation } from '../../packages/testkit/src/index.js';
import { SimElectionCluster, type SimElectionNode } from '../support/sim-election.js';

const SEEDS = [1, 2, 3, 4, 5];

let cluster: SimElectionCluster | undefined;
let sim: Simulation | undefined;
const dirs: string[] = [];

afterEach(() => {
  cluster?.shutdown();
  cluster = undefined;
  sim?.shutdown();
  sim = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Watches the whole run: never two acting leaders at one instant, never two leaders of one
 * generation (crashed incarnations included, since they are recorded while alive).
 */
function guard(c: SimElectionCluster): void {
  const leaderOf = new Map<number, string>();
  c.sim.addInvariant('at most one acting leader', () => {
    const acting = c.leaders(undefined, true);
    return acting.length <= 1 || `acting at once: ${acting.join(', ')}`;
  });
  c.sim.addInvariant('at most one leader per generation', () => {
    for (const n of c.live()) {
      const view = n.election.view();
      if (view.role !== 'leading') continue;
      const known = leaderOf.get(view.term);
      if (known === undefined) leaderOf.set(view.term, n.peer.address);
      else if (known !== n.peer.address) return `generation ${view.term}: ${known} and ${n.peer.address}`;
    }
    return true;
  });
}

function start(seed: number, size: number, voteStores = true): SimElectionCluster {
  cluster = SimElectionCluster.start({
    seed,
    size,
    algorithm: 'quorum',
    ...(voteStores ? { voteStore: () => new MemoryVoteStore() } : {}),
  });
  guard(cluster);
  return cluster;
}

const indexOf = (c: SimElectionCluster, address: string) => c.peers.findIndex((p) => p.address === address);

/** Runs until exactly one node of `group` acts and everyone in it follows that node. */
async function untilOneActing(c: SimElectionCluster, group?: readonly number[], timeoutMs = 20_000) {
  await c.sim.runUntil(
    () => c.leaders(group, true).length === 1 && c.agreedLeader(group) === c.leaders(group, true)[0],
    { timeoutMs, description: `one acting leader in ${group?.join(',') ?? 'all'}` },
  );
  return c.leaders(group, true)[0]!;
}

describe('quorum election (Leader and Followers, generation clock)', () => {
  it('elects a single acting leader after start, and keeps it (N=5, several seeds)', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed, 5);
      const leader = await untilOneActing(c);
      const term = c.nodes[indexOf(c, leader)]!.election.view().term;
      await c.sim.runFor(5_000);
      expect(c.leaders(undefined, true)).toEqual([leader]);
      expect(c.agreedLeader()).toBe(leader);
      // a quiet cluster stays in its generation: no spurious elections
      expect(c.live().map((n) => n.election.view().term)).toEqual(Array(5).fill(term));
      c.shutdown();
    });
  });

  it('elects a single acting leader at N=25', async () => {
    const c = start(7, 25);
    const leader = await untilOneActing(c);
    c.crash(indexOf(c, leader));
    const next = await untilOneActing(c);
    expect(next).not.toBe(leader);
  });

  it('replaces a crashed leader with exactly one, and a restarted node rejoins as follower', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed, 5);
      const first = await untilOneActing(c);
      const before = c.nodes[indexOf(c, first)]!.election.view().term;
      c.crash(indexOf(c, first));
      const second = await untilOneActing(c);
      expect(second).not.toBe(first);
      expect(c.nodes[indexOf(c, second)]!.election.view().term).toBeGreaterThan(before);
      // the old leader comes back with its persisted vote: it follows, nobody is unseated
      c.startNode(indexOf(c, first));
      await c.sim.runUntil(() => c.agreedLeader() === second, { timeoutMs: 5_000 });
      await c.sim.runFor(3_000);
      expect(c.leaders(undefined, true)).toEqual([second]);
      c.shutdown();
    });
  });

  for (const [name, size, minoritySize] of [
    ['3/2', 5, 2],
    ['60/40', 10, 4],
  ] as const) {
    it(`${name} partition: the majority has one acting leader, the minority none; one after heal`, async () => {
      await forEachSeed(SEEDS, async (seed) => {
        const c = start(seed, size);
        const leader = indexOf(c, await untilOneActing(c));
        // odd seeds cut the leader off in the minority, even ones leave it in the majority
        const rest = c.peers.map((_, i) => i).filter((i) => i !== leader);
        const minority =
          seed % 2 === 1 ? [leader, ...rest.slice(0, minoritySize - 1)] : rest.slice(0, minoritySize);
        const majority = c.peers.map((_, i) => i).filter((i) => !minority.includes(i));
        c.partition(minority, majority);
        const winner = await untilOneActing(c, majority);
        // settle: the cut-off leader's lease is long gone, and it stepped down
        await c.sim.runFor(3_000);
        expect(c.leaders(minority, true)).toEqual([]);
        expect(c.leaders(minority)).toEqual([]);
        expect(c.leaders(majority, true)).toEqual([winner]);
        const termBefore = c.nodes[indexOf(c, winner)]!.election.view().term;
        c.heal();
        await untilOneActing(c);
        await c.sim.runFor(2_000);
        // pre-votes kept the minority from inflating the generation: healing unseats nobody
        expect(c.leaders(undefined, true)).toEqual([winner]);
        expect(c.nodes[indexOf(c, winner)]!.election.view().term).toBe(termBefore);
        c.shutdown();
      });
    });
  }

  it('a follower cut off from the leader alone cannot unseat it (stickiness, pre-votes)', async () => {
    await forEachSeed(SEEDS, async (seed) => {
      const c = start(seed, 5);
      const leader = await untilOneActing(c);
      const term = c.nodes[indexOf(c, leader)]!.election.view().term;
      const cut = (indexOf(c, leader) + 1 + (seed % 4)) % 5;
      c.partition([indexOf(c, leader)], [cut]);
      await c.sim.runFor(5_000);
      // the others still hear the leader, so they refuse the cut-off node's campaign
      expect(c.leaders(undefined, true)).toEqual([leader]);
      expect(c.nodes[cut]!.election.view().role).toBe('looking');
      c.heal();
      await c.sim.runUntil(() => c.agreedLeader() === leader, { timeoutMs: 2_000 });
      expect(c.live().map((n) => n.election.view().term)).toEqual(Array(5).fill(term));
      c.shutdown();
    });
  });

  it('never two acting leaders under random crashes, restarts, partitions, loss and duplicates', async () => {
    await forEachSeed([21, 22, 23, 24, 106, 107], async (seed) => {
      const c = SimElectionCluster.start({
        seed,
        size: 5,
        algorithm: 'quorum',
        voteStore: () => new MemoryVoteStore(),
        network: { dropRate: 0.05, duplicateRate: 0.05, jitterMs: 3, reorder: true },
      });
      cluster = c;
      guard(c);
      const chaos = c.sim.random.fork('chaos');
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(chaos.next() * xs.length)]!;
      for (let step = 0; step < 40; step++) {
        await c.sim.runFor(150 + chaos.next() * 600);
        const dead = c.nodes.filter((n) => !n.alive).map((n) => n.index);
        const roll = chaos.next();
        if (roll < 0.25 && dead.length < 2) {
          // prefer the acting leader: that is where the interesting hand-overs are
          const acting = c.leaders(undefined, true)[0];
          c.crash(acting !== undefined && chaos.next() < 0.7 ? indexOf(c, acting) : pick(c.live()).index);
        } else if (roll < 0.45 && dead.length > 0) {
          c.startNode(pick(dead));
        } else if (roll < 0.65) {
          c.heal();
          const live = c.live().map((n) => n.index);
          const side = live.filter(() => chaos.next() < 0.5);
          c.partition(
            side,
            live.filter((i) => !side.includes(i)),
          );
        } else if (roll < 0.8) {
          c.heal();
        }
      }
      c.heal();
      for (const n of c.nodes) if (!n.alive) c.startNode(n.index);
      await untilOneActing(c);
      c.shutdown();
    });
  });

  it('a candidate less up to date (lower lastIndex) never wins', async () => {
    // nodes 0 and 1 lag behind (lastIndex 1); 2, 3, 4 are at 10
    const lastIndex = (i: number) => (i < 2 ? 1 : 10);
    await forEachSeed(SEEDS, async (seed) => {
      const c = new IndexedCluster({ seed, size: 5, algorithm: 'quorum' }, lastIndex);
      cluster = c;
      for (let i = 0; i < 5; i++) c.startNode(i);
      guard(c);
      c.sim.addInvariant('only up-to-date nodes lead', () =>
        c.leaders().every((a) => lastIndex(indexOf(c, a)) === 10),
      );
      // crash leaders until one up-to-date node is left: it must win over the two laggards
      const first = indexOf(c, await untilOneActing(c));
      c.crash(first);
      const second = indexOf(c, await untilOneActing(c));
      c.crash(second);
      const third = indexOf(c, await untilOneActing(c));
      expect(new Set([first, second, third])).toEqual(new Set([2, 3, 4]));
      c.shutdown();
    });
  });

  it('a restarted node with the same VoteStore never votes twice in one generation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-quorum-'));
    dirs.push(dir);
    const store = new FileVoteStore(join(dir, 'vote.json'));
    sim = new Simulation({ seed: 11 });
    const nodes: NodeAddress[] = [1, 2, 3].map((i) => ({ host: `10.2.0.${i}`, port: 2552 }));
    const peers = peersOf(nodes);
    const [a, b, c] = peers as [ElectionPeer, ElectionPeer, ElectionPeer];
    const startA = () => {
      const system = sim!.addSystem({ cluster: 'election', ...a.node });
      return {
        system,
        election: Election.start(system, {
          algorithm: 'quorum',
          peers,
          voteStore: store,
          lastIndex: () => 3,
        }),
      };
    };
    const probe = (peer: ElectionPeer) => {
      const system = sim!.addSystem({ cluster: 'election', ...peer.node });
      quorumElection.registerMessages(system.messageTypes);
      const votes: Message[] = [];
      system.functionRef('election', (m) => {
        if (m.type === 'election.quorum.vote') votes.push(m);
      });
      const ask = (generation: number, lastIndex: number) =>
        system.anyIncarnationRef(a.node, '/system/election').send({
          type: 'election.quorum.vote-request',
          from: peer.address,
          generation,
          lastIndex,
        } as Message);
      return { system, votes, ask };
    };
    let nodeA = startA();
    const pb = probe(b);
    const pc = probe(c);
    const lastVote = (p: { votes: Message[] }) => p.votes.at(-1);
    const vote = (generation: number, granted: boolean) => ({
      type: 'election.quorum.vote',
      from: a.address,
      generation,
      granted,
    });
    // a fresh incarnation may have acked a leader just before: no votes for the minimum timeout
    pb.ask(5, 3);
    await sim.runFor(20);
    expect(lastVote(pb)).toEqual(vote(0, false));
    await sim.runFor(500);
    pb.ask(5, 3);
    await sim.runFor(20);
    expect(lastVote(pb)).toEqual(vote(5, true));
    expect(store.load()).toEqual({ generation: 5, votedFor: b.address });

    // A restarts (a new incarnation, same address, same store) and is asked again in generation 5
    nodeA.election.stop();
    sim.crash(nodeA.system);
    nodeA = startA();
    await sim.runFor(520);
    pc.ask(5, 3);
    pb.ask(5, 3);
    await sim.runFor(20);
    expect(pc.votes).toEqual([vote(5, false)]);
    // the one it voted for still gets the same answer (a retry must not lose a won vote)
    expect(lastVote(pb)).toEqual(vote(5, true));
    // a newer generation, but C is behind A (lastIndex 2 < 3): refused, the generation moves on anyway
    pc.ask(6, 2);
    await sim.runFor(20);
    expect(lastVote(pc)).toEqual(vote(6, false));
    expect(store.load()).toEqual({ generation: 6, votedFor: undefined });
    // an older generation is refused outright
    pb.ask(4, 3);
    await sim.runFor(20);
    expect(lastVote(pb)).toEqual(vote(6, false));
    expect(nodeA.election.view()).toMatchObject({ role: 'looking', term: 6, acting: false });
  });

  it('refuses malformed messages of each of its types at the boundary', () => {
    sim = new Simulation({ seed: 1 });
    const system: ActorSystem = sim.addSystem({ cluster: 'election', host: '10.3.0.1', port: 2552 });
    quorumElection.registerMessages(system.messageTypes);
    const good: Record<string, Record<string, unknown>> = {
      'election.quorum.pre-vote': { from: '10.0.0.1:2552', generation: 1, lastIndex: 0 },
      'election.quorum.pre-vote-reply': { from: '10.0.0.1:2552', generation: 1, granted: true },
      'election.quorum.vote-request': { from: '10.0.0.1:2552', generation: 1, lastIndex: 0 },
      'election.quorum.vote': { from: '10.0.0.1:2552', generation: 1, granted: false },
      'election.quorum.heartbeat': { from: '10.0.0.1:2552', generation: 1, sentAt: 12.5 },
      'election.quorum.heartbeat-ack': { from: '10.0.0.1:2552', generation: 1, sentAt: 12.5, ok: true },
    };
    expect(Object.keys(good).sort()).toEqual([...QUORUM_MESSAGE_TYPES].sort());
    for (const [type, fields] of Object.entries(good)) {
      expect(system.messageTypes.check({ type, ...fields } as Message)).toBeUndefined();
      expect(system.messageTypes.check({ type, ...fields, from: 42 } as Message)).toBeDefined();
      expect(system.messageTypes.check({ type, ...fields, generation: -1 } as Message)).toBeDefined();
      for (const field of Object.keys(fields)) {
        const { [field]: _dropped, ...rest } = fields;
        expect(
          system.messageTypes.check({ type, ...rest } as Message),
          `${type} without ${field}`,
        ).toBeDefined();
      }
    }
    expect(
      system.messageTypes.check({
        type: 'election.quorum.heartbeat',
        from: '10.0.0.1:2552',
        generation: 1,
        sentAt: Number.NaN,
      } as Message),
    ).toBeDefined();
  });
});

/** The simulated cluster with a different lastIndex per node (the shared harness has one for all). */
class IndexedCluster extends SimElectionCluster {
  constructor(
    options: ConstructorParameters<typeof SimElectionCluster>[0],
    private readonly lastIndexOf: (index: number) => number,
  ) {
    super(options);
  }

  override startNode(index: number): SimElectionNode {
    const peer = this.peers[index]!;
    const system = this.sim.addSystem({ cluster: 'election', host: peer.node.host, port: peer.node.port });
    const voteStore: VoteStore = new MemoryVoteStore();
    const election = Election.start(system, {
      algorithm: 'quorum',
      peers: this.peers,
      voteStore,
      lastIndex: () => this.lastIndexOf(index),
    });
    const node: SimElectionNode = { index, peer, system, election, alive: true };
    this.nodes[index] = node;
    return node;
  }
}
