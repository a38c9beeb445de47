import { indirectlyConnected } from './indirectly-connected.js';
import type { SbrDecisionKind, SbrMember } from './sbr-view.js';
import { decideStrategy, keepMajority, type StrategyConfig } from './strategies.js';

/** How failures are resolved: the seed's `auto`, nobody (`manual`), or an Akka SBR strategy. */
export type DowningStrategyName =
  | 'auto'
  | 'manual'
  | 'keep-majority'
  | 'static-quorum'
  | 'keep-oldest'
  | 'down-all'
  | 'lease-majority';

export interface SbrInput {
  /** Live members of the last known membership. */
  readonly members: readonly SbrMember[];
  /** subject -> observers currently reporting it unreachable (ours included). */
  readonly observations: Readonly<Record<string, readonly string[]>>;
  readonly selfKey: string;
  /** Peers this node's own failure detector monitors and finds reachable. */
  readonly ownReachable: ReadonlySet<string>;
  /**
   * Members this side downed lately (no longer in `members`): they may still run over there,
   * so counting strategies count them on the other side (see downing-decisions.ts).
   */
  readonly absent?: readonly SbrMember[];
}

export interface SbrResolution {
  readonly decision: SbrDecisionKind;
  /** Member keys to down. */
  readonly down: readonly string[];
  readonly unreachable: readonly string[];
  readonly indirectlyConnected: readonly string[];
  readonly reason: string;
}

/** The pieces of a decision before the strategy runs: who is unreachable, who is indirectly connected. */
export interface PartitionView {
  readonly indirect: ReadonlySet<string>;
  readonly unreachable: ReadonlySet<string>;
  /** Members not indirectly connected: those the strategy decides over. */
  readonly clean: readonly SbrMember[];
}

export function partitionView(input: SbrInput): PartitionView {
  // nobody reported unreachable (joins, leaves, an idle cluster): nothing to sort out
  if (Object.keys(input.observations).length === 0) {
    return { indirect: new Set<string>(), unreachable: new Set<string>(), clean: input.members };
  }
  const live = new Set(input.members.map((m) => m.key));
  // Reports from observers this node itself cannot reach are stale: they describe the world
  // before the cut (and would make cleanly partitioned members look indirectly connected).
  const cutOffFromMe = new Set(
    Object.entries(input.observations)
      .filter(([, observers]) => observers.includes(input.selfKey))
      .map(([subject]) => subject),
  );
  const observations: Record<string, string[]> = {};
  for (const [subject, observers] of Object.entries(input.observations)) {
    const still = observers.filter((o) => live.has(o) && !cutOffFromMe.has(o));
    if (live.has(subject) && still.length > 0) observations[subject] = still;
  }
  const indirect = indirectlyConnected(observations, input.selfKey, input.ownReachable);
  // A member this node reaches (itself included) is never cleanly unreachable from here: the
  // reports about it are contradicted, and whoever made them is set aside as indirectly connected.
  // (Counting itself unreachable once made a decider reported by one liar think it was not the
  // decider, while everyone else waited for it: no decision, ever.)
  const reachedHere = (s: string) => s === input.selfKey || input.ownReachable.has(s);
  const unreachable = new Set(Object.keys(observations).filter((s) => !indirect.has(s) && !reachedHere(s)));
  const clean = input.members.filter((m) => !indirect.has(m.key));
  return { indirect, unreachable, clean };
}

/**
 * One side's decision (pure). Indirectly connected members are downed first; the strategy
 * decides over the rest. `lease-majority` is resolved separately (it needs the lease).
 */
export function resolve(
  strategy: StrategyConfig,
  input: SbrInput,
  partition: PartitionView = partitionView(input),
): SbrResolution {
  const { indirect, unreachable, clean } = partition;
  const base = { unreachable: [...unreachable], indirectlyConnected: [...indirect] };
  if (unreachable.size === 0) {
    return {
      ...base,
      decision: 'down-indirectly-connected',
      down: [...indirect],
      reason: 'only indirectly connected members',
    };
  }
  const absent = countsAbsent(strategy) ? (input.absent ?? []) : [];
  const outcome = decideStrategy(
    strategy,
    absent.length === 0
      ? { members: clean, unreachable }
      : {
          members: [...clean, ...absent],
          unreachable: new Set([...unreachable, ...absent.map((m) => m.key)]),
        },
  );
  return {
    ...base,
    // absent members are gone from the membership already: nothing to down there
    ...downSet(outcome.decision, input.members, unreachable, indirect),
    reason:
      absent.length === 0
        ? outcome.reason
        : `${outcome.reason} (${absent.length} downed lately counted over there)`,
  };
}

/**
 * Strategies that count sides. keep-oldest asks where the oldest is, which a member downed here
 * cannot change (and a downed lone oldest must not look "over there"); down-all counts nothing.
 */
export function countsAbsent(strategy: StrategyConfig | undefined): boolean {
  return strategy?.strategy === 'keep-majority' || strategy?.strategy === 'static-quorum';
}

/** lease-majority: does this side look like the minority (then it waits before trying the lease)? */
export function isMinoritySide(
  input: SbrInput,
  role?: string,
  partition: PartitionView = partitionView(input),
): boolean {
  const { unreachable, clean } = partition;
  return keepMajority({ members: clean, unreachable }, role).decision !== 'down-unreachable';
}

/** lease-majority after the lease attempt: the holder's side survives, the other side downs itself. */
export function resolveWithLease(
  input: SbrInput,
  acquired: boolean,
  partition: PartitionView = partitionView(input),
): SbrResolution {
  const { indirect, unreachable } = partition;
  const decision = acquired ? 'down-unreachable' : 'down-reachable';
  return {
    unreachable: [...unreachable],
    indirectlyConnected: [...indirect],
    ...downSet(decision, input.members, unreachable, indirect),
    reason: acquired ? 'acquired the lease' : 'the lease is held by the other side',
  };
}

function downSet(
  decision: 'down-unreachable' | 'down-reachable' | 'down-all',
  members: readonly SbrMember[],
  unreachable: ReadonlySet<string>,
  indirect: ReadonlySet<string>,
): { decision: SbrDecisionKind; down: string[] } {
  const keys = members.map((m) => m.key);
  switch (decision) {
    case 'down-unreachable':
      return { decision, down: keys.filter((k) => unreachable.has(k) || indirect.has(k)) };
    case 'down-reachable':
      return { decision, down: keys.filter((k) => !unreachable.has(k)) };
    case 'down-all':
      return { decision, down: keys };
  }
}

/**
 * Default stable-after per cluster size. Akka grows it with the cluster (7 s at 5 nodes … 30 s at
 * 1000) because gossip needs more rounds to spread reachability as the cluster grows. doyen has
 * no rounds to wait for: an observer sends its reachability report to every member directly, so
 * every member has every report one hop after the observer's detector fired, at any size. The
 * wait restarts at each change, so it must outlast the gaps between the observers' detections of
 * one failure (one heartbeat interval, 200 ms, plus the phi curve's slack: in simulation every
 * observer of a crash or a cut fires within ~150 ms of the first at 10, 25, 50 and 100 members)
 * and a stalled event loop (the membership bench's 100 ms stalls every 500 ms). 1 s is over three
 * times that spread, up to 250 members. A crash needs no phi: its port refuses the next dial, so
 * every observer judges it within a heartbeat or two (connectionRefused) and it is decided ~1.2 s
 * after the kill (≤ 0.2 s + 1 s). A cut or a pause still waits for phi (~1.1 s) first. A shorter
 * wait would let one side decide on a picture the other side has not finished forming (a late
 * observer's report then restarts nothing: the decision was taken); it is also the default
 * down-removal margin singletons wait after a downing. Beyond 250 (not measured here) it grows as
 * Akka's does.
 */
const STABLE_AFTER_TABLE: readonly (readonly [number, number])[] = [
  [250, 1000],
  [1000, 3000],
];

export function defaultStableAfterMs(clusterSize: number): number {
  for (const [size, ms] of STABLE_AFTER_TABLE) if (clusterSize <= size) return ms;
  return STABLE_AFTER_TABLE.at(-1)![1];
}

/**
 * How long after stable-after a side still undecided downs everything (down-all-when-unstable).
 * Akka's default is 3/4 of stable-after: 15 s after its 20 s. Ours is 2× stable-after and at
 * least 10 s. The multiple alone would be 3 s after a 1.5 s stable-after: two unrelated failures
 * seconds apart, or a host so loaded during a rolling start of 50 nodes that event loops stall
 * past the detector for a few seconds (measured: 5 s of flapping, then down-all of the whole
 * cluster), would shut a cluster down that needed only patience.
 */
export function defaultDownAllWhenUnstableMs(stableAfterMs: number): number {
  return Math.max(2 * stableAfterMs, 10_000);
}
