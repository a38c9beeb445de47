// IPC between the singleton bench and its node processes (singleton-node.ts): the reports every bench node
// process sends (node-reports.ts), and the singleton bench's own (its log lines, singletons and table).
import type { MembershipFigures, NodeEvent, NodeFailed, NodeUp } from './node-reports.js';

export type { MemberView, NodeEvent, NodeFailed, NodeUp } from './node-reports.js';
export { wallMs } from './node-reports.js';

export const SINGLETON_CLUSTER = 'bench-singleton';
export const SINGLETON_SECRET = 'bench-singleton-secret';

/** Log events a node process forwards with their time (everything at warn or worse is forwarded too). */
export const FORWARDED_LOG_EVENTS: ReadonlySet<string> = new Set([
  'singleton.started',
  'singleton.stopped',
  'singleton.taking-over',
  'singleton.hand-over-requested',
  'singleton.handing-over',
  'singleton.handed-over',
  'partitions.allocated',
  'partitions.table',
]);

/** Cluster events a node process forwards (the breakdown of a failover). */
export const FORWARDED_CLUSTER_EVENTS: ReadonlySet<string> = new Set([
  'member.unreachable',
  'member.downed',
  'member.removed',
  'coordinator.changed',
]);

/** A log line the node wrote: its `event`, `singleton` (singleton.* lines), level and a few fields. */
export interface NodeLog {
  readonly kind: 'log';
  readonly event: string;
  readonly level: number;
  readonly singleton: string | undefined;
  /** `partitions.allocated`: owner changes of this allocation. */
  readonly moved: number | undefined;
  /** `singleton.stopped`: why (`handed over`, `node left the cluster`). */
  readonly reason: string | undefined;
  /** `partitions.allocated` / `partitions.table`: the table version. */
  readonly version: number | undefined;
  readonly t: number;
}

export interface NodeState extends MembershipFigures {
  readonly kind: 'state';
  readonly id: number;
  /** The current incarnation (a downed node restarts in its process as a new one, with a new uid). */
  readonly address: string;
  readonly uid: string;
  /** Singletons running on this node. */
  readonly running: readonly string[];
  /** The node's partition table: version and owner per partition ([] before the first table). */
  readonly tableVersion: number;
  readonly owners: readonly string[];
}

export type NodeReport = NodeUp | NodeLog | NodeEvent | NodeState | NodeFailed;

/** `state`: answer with a NodeState; `leave`: leave the cluster gracefully (shutdown()), then exit. */
export type NodeCommand = { readonly cmd: 'state'; readonly id: number } | { readonly cmd: 'leave' };
