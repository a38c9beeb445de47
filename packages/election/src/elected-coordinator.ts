import { type Cluster, type Member, type Membership, nodeOf } from '@doyen/cluster';
import { type ActorSystem, InvalidConfigError } from '@doyen/core';
import type { SingletonPlacement } from '@doyen/singleton';
import type { ElectionPeer, ElectionTiming, LeaderStore, LeaderView, VoteStore } from './election.js';
import { Election } from './election-service.js';

/**
 * Who coordinates: the emergent leader (the oldest member: availability first, the default), the
 * generation-clock leader that acts only while a majority acknowledges it (`quorum`), or the
 * holder of an etcd key with a lease (`etcd`): consistency first, as the seeds explain.
 */
export type CoordinatorMode = 'emergent' | 'quorum' | 'etcd';
export const COORDINATOR_MODES: readonly CoordinatorMode[] = ['emergent', 'quorum', 'etcd'];

export interface ElectedCoordinatorOptions {
  readonly mode: 'quorum' | 'etcd';
  readonly timing?: Partial<ElectionTiming>;
  /** quorum: keeps generation and vote across restarts (a FileVoteStore in production). */
  readonly voteStore?: VoteStore;
  /** etcd: the store client of this node incarnation. */
  readonly leaderStore?: LeaderStore;
}

/** Ranks for the election: the oldest member ranks highest (ages only grow). */
const rankOfAge = (age: number) => 2 ** 31 - age;

/**
 * The consistency-first coordinator of one node incarnation: runs the chosen election among the
 * up members (peers follow the membership; `lastIndex` is the membership version) and places
 * cluster singletons on the elected leader, which runs them only while it is `acting` (holds a
 * majority, or the lease). Membership bookkeeping (acks, ages, removals) stays with the oldest.
 */
export class ElectedCoordinator implements SingletonPlacement {
  readonly kind: 'quorum' | 'etcd';
  readonly exclusive = true;
  private election: Election | undefined;
  private peerKey = '';
  private version = 0;
  private readonly listeners = new Set<() => void>();
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    readonly options: ElectedCoordinatorOptions,
  ) {
    this.kind = options.mode;
    if (options.mode === 'etcd' && !options.leaderStore) {
      throw new InvalidConfigError("coordinator 'etcd' needs an etcd leader store (etcd endpoints)");
    }
    if (options.mode === 'quorum' && cluster.config.downing === 'auto') {
      throw new InvalidConfigError(
        "coordinator 'quorum' needs a split-brain resolver strategy: under downing 'auto' both sides of a partition shrink their membership and could each elect a majority",
      );
    }
    // read the vote now: a corrupt file fails the start, not a membership callback later
    options.voteStore?.load();
    this.unsubscribe = cluster.subscribeMembership((m) => this.onMembership(m));
    const m = cluster.state().membership;
    if (m) this.onMembership(m);
  }

  hostOf(membership: Membership, role: string | undefined): Member | undefined {
    const view = this.view();
    if (view.leader === undefined) return undefined;
    // we run singletons only while acting; others trust whom they follow
    if (view.leader === this.cluster.self.address && !view.acting) return undefined;
    const m = membership.members.find((x) => x.address === view.leader && x.status === 'up');
    if (!m || (role !== undefined && !m.roles.includes(role))) return undefined;
    return m;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** This node's view of the election (looking before this node is up). */
  view(): LeaderView {
    return this.election?.view() ?? { role: 'looking', leader: undefined, term: 0, acting: false };
  }

  /** The coordinator's address as this node sees it. */
  coordinator(): string | undefined {
    return this.view().leader;
  }

  /** The election machine's state, for the inspector and `/cluster`. */
  electionState(): unknown {
    return this.election?.machineState();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe();
    this.election?.stop();
    this.election = undefined;
    this.notify();
  }

  private onMembership(m: Membership): void {
    if (this.stopped) return;
    this.version = m.version;
    const self = m.members.find(
      (x) => x.address === this.cluster.self.address && x.uid === this.cluster.self.uid,
    );
    if (self?.status !== 'up') {
      // not (or no longer) a full member: take no part; the others elect without us
      if (this.election) {
        this.election.stop();
        this.election = undefined;
        this.peerKey = '';
        this.notify();
      }
      return;
    }
    const peers: ElectionPeer[] = m.members
      .filter((x) => x.status === 'up')
      .map((x) => {
        const { host, port } = nodeOf(x);
        return { address: x.address, node: { host, port }, rank: rankOfAge(x.age) };
      });
    const key = peers.map((p) => `${p.address}/${p.rank}`).join(',');
    if (!this.election) {
      this.election = Election.start(this.system, {
        algorithm: this.options.mode,
        peers,
        lastIndex: () => this.version,
        ...(this.options.timing ? { timing: this.options.timing } : {}),
        ...(this.options.voteStore ? { voteStore: this.options.voteStore } : {}),
        ...(this.options.leaderStore ? { leaderStore: this.options.leaderStore } : {}),
      });
      this.election.subscribe(() => this.notify());
      this.peerKey = key;
    } else if (key !== this.peerKey) {
      this.peerKey = key;
      this.election.setPeers(peers);
    }
    // the membership may have made the leader up (or not) in our view
    this.notify();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
