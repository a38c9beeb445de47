import { afterEach } from 'vitest';
import type { ActorSystem, NodeAddress } from '../../packages/core/src/index.js';
import {
  Election,
  type ElectionAlgorithm,
  type ElectionOptions,
  type ElectionPeer,
  type LeaderStore,
  peersOf,
  type VoteStore,
} from '../../packages/election/src/index.js';
import { Simulation, type SimulationOptions } from '../../packages/testkit/src/index.js';

export interface SimElectionNode {
  readonly index: number;
  readonly peer: ElectionPeer;
  system: ActorSystem;
  election: Election;
  alive: boolean;
}

export interface SimElectionOptions extends Partial<SimulationOptions> {
  readonly seed: number;
  readonly size: number;
  readonly algorithm: ElectionAlgorithm;
  /** Extra options for every node (timing, candidates, ...). */
  readonly election?: Omit<ElectionOptions, 'algorithm' | 'peers'>;
  /** Per node: the quorum election's vote store (kept across restarts by the harness). */
  readonly voteStore?: (index: number) => VoteStore;
  /** Per node incarnation: the etcd election's store client. */
  readonly leaderStore?: (index: number, sim: Simulation, address: string) => LeaderStore;
}

/** A simulated group of N nodes at 10.1.0.(i+1):2552 each running one election; rank = index. */
export class SimElectionCluster {
  readonly sim: Simulation;
  readonly nodes: SimElectionNode[] = [];
  readonly peers: ElectionPeer[];
  private readonly voteStores = new Map<number, VoteStore>();
  /** Messages sent by incarnations that have since crashed (total and by type). */
  private sentByGone = 0;
  private readonly typesByGone = new Map<string, number>();

  constructor(readonly options: SimElectionOptions) {
    const {
      seed,
      size,
      algorithm: _a,
      election: _e,
      voteStore: _v,
      leaderStore: _l,
      ...simOptions
    } = options;
    this.sim = new Simulation({ seed, ...simOptions });
    const addresses: NodeAddress[] = Array.from({ length: size }, (_, i) => ({
      host: `10.1.${Math.floor((i + 1) / 250)}.${((i + 1) % 250) + 1}`,
      port: 2552,
    }));
    this.peers = peersOf(addresses);
  }

  /** Starts every node. */
  static start(options: SimElectionOptions): SimElectionCluster {
    const c = new SimElectionCluster(options);
    for (let i = 0; i < options.size; i++) c.startNode(i);
    return c;
  }

  /** Starts (or restarts as a new incarnation) node `index`. */
  startNode(index: number): SimElectionNode {
    const peer = this.peers[index]!;
    const system = this.sim.addSystem({ cluster: 'election', host: peer.node.host, port: peer.node.port });
    let voteStore = this.voteStores.get(index);
    if (!voteStore && this.options.voteStore) {
      voteStore = this.options.voteStore(index);
      this.voteStores.set(index, voteStore);
    }
    const election = Election.start(system, {
      ...this.options.election,
      algorithm: this.options.algorithm,
      peers: this.peers,
      ...(voteStore ? { voteStore } : {}),
      ...(this.options.leaderStore
        ? { leaderStore: this.options.leaderStore(index, this.sim, peer.address) }
        : {}),
    });
    const node: SimElectionNode = { index, peer, system, election, alive: true };
    this.nodes[index] = node;
    return node;
  }

  crash(index: number): void {
    const node = this.nodes[index]!;
    this.sentByGone += node.election.messagesSent;
    for (const [type, n] of node.election.sentByType())
      this.typesByGone.set(type, (this.typesByGone.get(type) ?? 0) + n);
    node.election.stop();
    this.sim.crash(node.system);
    node.alive = false;
  }

  /** Cuts every link between the two groups (by index). */
  partition(a: readonly number[], b: readonly number[]): void {
    this.sim.partition(
      a.map((i) => this.nodes[i]!.system),
      b.map((i) => this.nodes[i]!.system),
    );
  }

  heal(): void {
    this.sim.heal();
  }

  live(group?: readonly number[]): SimElectionNode[] {
    return this.nodes.filter((n) => n.alive && (group === undefined || group.includes(n.index)));
  }

  /** Live nodes that consider themselves leader (`acting` only, if asked). */
  leaders(group?: readonly number[], acting = false): string[] {
    return this.live(group)
      .filter((n) => (acting ? n.election.isActing() : n.election.view().role === 'leading'))
      .map((n) => n.peer.address);
  }

  /**
   * The one leader every live node of `group` follows, when they all agree, it is live and in
   * the group, and it leads; otherwise undefined.
   */
  agreedLeader(group?: readonly number[]): string | undefined {
    const live = this.live(group);
    if (live.length === 0) return undefined;
    const leader = live[0]!.election.leader();
    if (leader === undefined || !live.every((n) => n.election.leader() === leader)) return undefined;
    const node = live.find((n) => n.peer.address === leader);
    return node && node.election.view().role === 'leading' ? leader : undefined;
  }

  /** Messages sent by every incarnation so far. */
  messagesSent(): number {
    return this.sentByGone + this.live().reduce((sum, n) => sum + n.election.messagesSent, 0);
  }

  /** Messages sent by every incarnation so far, heartbeats (`*.heartbeat*`) left out. */
  electionMessagesSent(): number {
    let sum = 0;
    const add = (types: ReadonlyMap<string, number>) => {
      for (const [type, n] of types) if (!type.includes('.heartbeat')) sum += n;
    };
    add(this.typesByGone);
    for (const n of this.live()) add(n.election.sentByType());
    return sum;
  }

  /** Runs until `group` agrees on one leader; returns the simulated ms it took. */
  async untilAgreed(group?: readonly number[], timeoutMs = 30_000): Promise<number> {
    return this.sim.runUntil(() => this.agreedLeader(group) !== undefined, {
      timeoutMs,
      description: `nodes ${group ? group.join(',') : 'all'} agree on a leader (${this.options.algorithm})`,
    });
  }

  shutdown(): void {
    for (const n of this.nodes) n?.election.stop();
    this.sim.shutdown();
  }
}

/**
 * One simulated election cluster at a time in a test file: `start` shuts the previous one down,
 * and the current one is shut down after each test.
 */
export function simElectionPerTest(): {
  start(options: SimElectionOptions): SimElectionCluster;
  readonly current: SimElectionCluster | undefined;
} {
  let current: SimElectionCluster | undefined;
  afterEach(() => {
    current?.shutdown();
    current = undefined;
  });
  return {
    start(options) {
      current?.shutdown();
      current = SimElectionCluster.start(options);
      return current;
    },
    get current() {
      return current;
    },
  };
}
