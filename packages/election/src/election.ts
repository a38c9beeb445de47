import type { ActorSystem, Message, NodeAddress } from '@doyen/core';
import { InvalidConfigError } from '@doyen/core';
import type { AnyStateMachine } from 'xstate';

/** Every election algorithm of the seeds that doyen runs (the emergent leader lives in @doyen/cluster). */
export const ELECTION_ALGORITHMS = [
  'quorum',
  'bully',
  'candidate',
  'invitation',
  'ring',
  'ring-max',
  'etcd',
] as const;
export type ElectionAlgorithm = (typeof ELECTION_ALGORITHMS)[number];

/** Where every node's election machine lives. */
export const ELECTION_PATH = '/system/election';

/** One participant. Ranks are unique; where an algorithm prefers someone, the higher rank wins. */
export interface ElectionPeer {
  /** `host:port`, the participant's identity in every message. */
  readonly address: string;
  readonly node: NodeAddress;
  readonly rank: number;
}

export type ElectionRole = 'looking' | 'following' | 'leading';

/** What one node believes about the leader, reported by its machine after every change. */
export interface LeaderView {
  readonly role: ElectionRole;
  /** The leader this node follows (itself when leading), undefined while looking. */
  readonly leader: string | undefined;
  /** Generation / epoch of the view where the algorithm has one (quorum, etcd revision), else 0. */
  readonly term: number;
  /**
   * Leading and allowed to act on it: the quorum leader only while a majority acknowledged it
   * within the lease; the etcd leader only while it holds the key's lease. Always equal to
   * `role === 'leading'` for the algorithms that do not promise a single leader.
   */
  readonly acting: boolean;
}

/** Timings shared by the algorithms (simulated or real ms). */
export interface ElectionTiming {
  /** Leader -> followers heartbeat period. */
  readonly heartbeatIntervalMs: number;
  /** A follower that heard nothing from its leader for this long starts an election. */
  readonly leaderTimeoutMs: number;
  /** How long to wait for an answer (Alive, vote, ring ack) before counting the peer as down. */
  readonly replyTimeoutMs: number;
  /** quorum: election timeouts are drawn uniformly from [min, max] (Raft's randomisation). */
  readonly electionTimeoutMinMs: number;
  readonly electionTimeoutMaxMs: number;
  /** candidate/ordinary: the tie-breaking delay δ grows by this much per rank step below the top. */
  readonly tieBreakStepMs: number;
  /** invitation: a group leader invites peers outside its group this often. */
  readonly inviteIntervalMs: number;
}

export const DEFAULT_TIMING: ElectionTiming = {
  heartbeatIntervalMs: 100,
  leaderTimeoutMs: 500,
  replyTimeoutMs: 100,
  electionTimeoutMinMs: 500,
  electionTimeoutMaxMs: 1000,
  tieBreakStepMs: 50,
  inviteIntervalMs: 300,
};

/** Persists the quorum election's generation and vote, so a restarted node never votes twice. */
export interface VoteStore {
  load(): PersistedVote;
  save(vote: PersistedVote): void;
}

export interface PersistedVote {
  readonly generation: number;
  /** Address voted for in `generation`, if any. */
  readonly votedFor: string | undefined;
}

/** An external linearizable store for the etcd election (etcd itself, or a simulated one). */
export interface LeaderStore {
  /**
   * Compare-and-swap: create `key` = `owner` with a TTL unless it exists. Resolves the holder
   * afterwards and the key's revision (`owner` when this call won).
   */
  campaign(owner: string): Promise<{ readonly holder: string | undefined; readonly revision: number }>;
  /** Keeps a won key alive; resolves false when it is gone or held by someone else. */
  keepAlive(owner: string): Promise<boolean>;
  /** Deletes the key if `owner` holds it. */
  resign(owner: string): Promise<void>;
  /**
   * Calls back with the current holder first, then whenever the key changes (undefined when
   * deleted or expired; revision = the key's mod revision, or the deletion's).
   */
  watch(listener: (holder: string | undefined, revision: number) => void): () => void;
  /** The key's TTL: a holder that cannot renew stops acting before this passes. */
  readonly ttlMs: number;
  close(): Promise<void>;
}

export interface ElectionOptions {
  readonly algorithm: ElectionAlgorithm;
  /** Every participant, this node included. Change them later with `Election.setPeers`. */
  readonly peers: readonly ElectionPeer[];
  readonly timing?: Partial<ElectionTiming>;
  /** quorum: where the generation and vote survive a restart (default: in memory only). */
  readonly voteStore?: VoteStore;
  /** quorum: how up to date this node is (log index, membership version); higher wins votes. */
  readonly lastIndex?: () => number;
  /** bully: size of the next-in-line failover list the leader hands out (default 2). */
  readonly failoverListSize?: number;
  /** candidate: the highest-ranked this many peers are candidates, the rest ordinary (default 3). */
  readonly candidates?: number;
  /** etcd: the store (required for `etcd`). */
  readonly leaderStore?: LeaderStore;
}

export type ResolvedElectionOptions = Required<
  Omit<ElectionOptions, 'leaderStore' | 'timing' | 'voteStore'>
> & {
  readonly timing: ElectionTiming;
  readonly voteStore: VoteStore | undefined;
  readonly leaderStore: LeaderStore | undefined;
};

/** What an algorithm's machine gets from the edge: effects only through these. */
export interface ElectionDeps {
  readonly system: ActorSystem;
  readonly self: ElectionPeer;
  readonly options: ResolvedElectionOptions;
  /** Sends to a peer's election machine (counted for `pnpm bench election`). */
  readonly send: (to: ElectionPeer, message: Message) => void;
  /** Reports this node's view after every change (deduplicated by the edge). */
  readonly report: (view: LeaderView) => void;
}

/** Tells a running machine the participants changed. */
export interface PeersChanged {
  readonly type: 'election.peers';
  readonly peers: readonly ElectionPeer[];
}

/** One algorithm: its machine and the message types it accepts from the network. */
export interface ElectionAlgorithmDefinition {
  readonly name: ElectionAlgorithm;
  /** Does it promise at most one acting leader under partitions? */
  readonly singleLeader: boolean;
  createMachine(deps: ElectionDeps): AnyStateMachine;
  registerMessages(types: ActorSystem['messageTypes']): void;
}

export class ElectionConfigError extends InvalidConfigError {}

export function resolveElectionOptions(options: ElectionOptions): ResolvedElectionOptions {
  const timing = { ...DEFAULT_TIMING, ...options.timing };
  for (const [name, value] of Object.entries(timing)) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new ElectionConfigError(`election timing ${name} must be a positive number of ms, got ${value}`);
    }
  }
  if (timing.electionTimeoutMaxMs < timing.electionTimeoutMinMs) {
    throw new ElectionConfigError('electionTimeoutMaxMs must not be below electionTimeoutMinMs');
  }
  if (timing.leaderTimeoutMs <= timing.heartbeatIntervalMs) {
    throw new ElectionConfigError('leaderTimeoutMs must exceed heartbeatIntervalMs');
  }
  if (!(ELECTION_ALGORITHMS as readonly string[]).includes(options.algorithm)) {
    throw new ElectionConfigError(
      `unknown election algorithm ${JSON.stringify(options.algorithm)}; one of ${ELECTION_ALGORITHMS.join(', ')}`,
    );
  }
  if (options.algorithm === 'etcd' && !options.leaderStore) {
    throw new ElectionConfigError('the etcd election needs a leaderStore');
  }
  const failoverListSize = options.failoverListSize ?? 2;
  const candidates = options.candidates ?? 3;
  if (!Number.isSafeInteger(failoverListSize) || failoverListSize < 0) {
    throw new ElectionConfigError('failoverListSize must be a non-negative integer');
  }
  if (!Number.isSafeInteger(candidates) || candidates < 1) {
    throw new ElectionConfigError('candidates must be a positive integer');
  }
  return {
    algorithm: options.algorithm,
    peers: options.peers,
    timing,
    voteStore: options.voteStore,
    lastIndex: options.lastIndex ?? (() => 0),
    failoverListSize,
    candidates,
    leaderStore: options.leaderStore,
  };
}
