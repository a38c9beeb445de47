/**
 * What the console shows of one node: its own view of the cluster (`NodeView`) and the
 * structured events it logged (`TimelineEvent`). The shapes are the console's data contract
 * (routes, SSE and the page read them as they are); every member produces its own view and
 * the serving node gathers them over the cluster's wire.
 */

export interface ConsoleMemberRow {
  readonly key: string;
  readonly address: string;
  readonly status: string;
  readonly roles: readonly string[];
  /** 0 = the oldest member. */
  readonly ageRank: number;
}

export interface ReachabilityRecord {
  readonly observer: string;
  readonly subject: string;
  readonly status: 'unreachable' | 'terminated';
}

export interface SbrDecisionView {
  readonly at: number;
  readonly decision: string;
  readonly reason?: string;
  readonly downed: readonly string[];
}

export interface SbrStateView {
  readonly strategy: string;
  readonly state?: string;
  /** Ms until stable-after expires (null: not counting down). */
  readonly stableInMs?: number | null;
  readonly lastDecision?: SbrDecisionView;
}

export interface SingletonRow {
  readonly name: string;
  /** `host:port` of the member it runs on, as this node sees it. */
  readonly host: string | null;
  readonly runsHere: boolean;
  readonly state: unknown;
  readonly handingOver?: boolean;
}

export interface ElectionView {
  readonly kind: string;
  readonly term?: number;
  readonly leader?: string | null;
}

export interface PartitionGridView {
  readonly version: number;
  /** Owner member key per partition, '' while unassigned. */
  readonly owners: readonly string[];
  readonly backups: readonly (readonly string[])[];
  readonly moving?: readonly number[];
}

export interface MachineTransition {
  readonly at: number;
  readonly event: string;
  readonly state: unknown;
}

export interface MachineView {
  /** The actor path (`/system/membership`). */
  readonly id: string;
  readonly state: unknown;
  /** The last transitions, oldest first (at most MAX_TRANSITIONS). */
  readonly transitions: readonly MachineTransition[];
}

export interface NodeView {
  /** Member key `host:port#uid` of the node the view is about. */
  readonly key: string;
  readonly address: string;
  readonly name?: string;
  readonly roles: readonly string[];
  readonly incarnation: number;
  readonly upSince?: number;
  /** When the node made this view (its clock, ms since the epoch). */
  readonly at: number;
  /** Set by the serving node: nothing heard from this node lately. */
  readonly stale: boolean;
  /** Set by the serving node: the view's revision there (the stream's deltas go from one to the next). */
  readonly rev?: number;
  readonly membershipVersion: number;
  readonly members: readonly ConsoleMemberRow[];
  readonly coordinator?: string;
  readonly successor?: string;
  /** Subjects this node takes for unreachable. */
  readonly unreachable: readonly string[];
  /** The reachability records this node holds (the split-brain resolver's input). */
  readonly reachability: readonly ReachabilityRecord[];
  readonly sbr: SbrStateView;
  readonly singletons: readonly SingletonRow[];
  readonly election?: ElectionView;
  readonly partitions?: PartitionGridView;
  readonly entities?: Readonly<Record<string, number>>;
  readonly machines: readonly MachineView[];
}

export interface TimelineEvent {
  /** Per serving node: the order events were received in. */
  readonly seq: number;
  readonly at: number;
  /** Member key of the node that logged it. */
  readonly node: string;
  /** The log line's `event` (`member.unreachable`). */
  readonly event: string;
  readonly msg?: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** `GET /console/state`. */
export interface ConsoleState {
  readonly servedBy: string;
  readonly now: number;
  readonly nodes: Readonly<Record<string, NodeView>>;
  readonly events: readonly TimelineEvent[];
  readonly historyFrom: number;
}

export type HistoryFrame =
  | { readonly at: number; readonly kind: 'view'; readonly view: NodeView }
  | { readonly at: number; readonly kind: 'event'; readonly event: TimelineEvent };

/** `GET /console/history`: the export. */
export interface ConsoleHistory {
  readonly from: number;
  readonly to: number;
  readonly frames: readonly HistoryFrame[];
}
