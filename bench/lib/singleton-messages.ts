// IPC between the singleton bench and its node processes (singleton-node.ts). Timestamps are wall-clock
// milliseconds with sub-ms resolution, `performance.timeOrigin + performance.now()`, so a kill time taken in
// the bench and a log line written in a node process on the same machine can be subtracted.

import type { MemberView as HttpMemberView } from '../../packages/doyen/src/management-http.js';
export const SINGLETON_CLUSTER = 'bench-singleton';
export const SINGLETON_SECRET = 'bench-singleton-secret';

/** Wall-clock ms with sub-ms resolution, comparable across processes on this machine. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

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

/** A member as the node reports it: the management endpoint's view, the fields a bench reads. */
export type MemberView = Pick<HttpMemberView, 'address' | 'uid' | 'status' | 'age'>;

/** The node is a member (cluster.whenUp() resolved). */
export interface NodeUp {
  readonly kind: 'up';
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

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

/** A cluster event this node published, flattened to the member it is about. */
export interface NodeEvent {
  readonly kind: 'event';
  readonly type: string;
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

export interface NodeState {
  readonly kind: 'state';
  readonly id: number;
  /** The current incarnation (a downed node restarts in its process as a new one, with a new uid). */
  readonly address: string;
  readonly uid: string;
  readonly status: string;
  readonly version: number;
  readonly members: readonly MemberView[];
  readonly unreachable: readonly string[];
  /** Singletons running on this node. */
  readonly running: readonly string[];
  /** The node's partition table: version and owner per partition ([] before the first table). */
  readonly tableVersion: number;
  readonly owners: readonly string[];
}

export interface NodeFailed {
  readonly kind: 'failed';
  readonly message: string;
}

export type NodeReport = NodeUp | NodeLog | NodeEvent | NodeState | NodeFailed;

/** `state`: answer with a NodeState; `leave`: leave the cluster gracefully (shutdown()), then exit. */
export type NodeCommand = { readonly cmd: 'state'; readonly id: number } | { readonly cmd: 'leave' };

export { memberKey } from '../../packages/cluster/src/member.js';
