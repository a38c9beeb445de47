// IPC between the membership bench and its node processes (membership-node.ts). Timestamps are wall-clock
// milliseconds with sub-ms resolution, `performance.timeOrigin + performance.now()`, so figures taken in
// different processes on one machine can be subtracted.

import type { MemberView as HttpMemberView } from '../../packages/doyen/src/management-http.js';
export const MEMBERSHIP_CLUSTER = 'bench-membership';
export const MEMBERSHIP_SECRET = 'bench-membership-secret';

/** Wall-clock ms with sub-ms resolution, comparable across processes on this machine. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

/** A member as the node reports it: the management endpoint's view, the fields a bench reads. */
export type MemberView = Pick<HttpMemberView, 'address' | 'uid' | 'status' | 'age'>;

/** The node is a member (startNode resolved). */
export interface NodeUp {
  readonly kind: 'up';
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

/** A cluster event this node published, flattened. */
export interface NodeEvent {
  readonly kind: 'event';
  readonly type: string;
  /** The member the event is about (the new coordinator for `coordinator.changed`; '' when none). */
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

export interface NodeState {
  readonly kind: 'state';
  readonly id: number;
  readonly status: string;
  readonly version: number;
  readonly coordinator: string | undefined;
  readonly members: readonly MemberView[];
  readonly unreachable: readonly string[];
}

export interface StallDone {
  readonly kind: 'stall-done';
  readonly stalls: number;
  /** Longest gap between two consecutive ticks of a 10 ms timer while stalling: what the stalls really cost. */
  readonly maxTimerGapMs: number;
}

export interface NodeFailed {
  readonly kind: 'failed';
  readonly message: string;
}

export type NodeReport = NodeUp | NodeEvent | NodeState | StallDone | NodeFailed;

export type NodeCommand =
  | { readonly cmd: 'state'; readonly id: number }
  | { readonly cmd: 'stall'; readonly busyMs: number; readonly everyMs: number; readonly forMs: number };

export { memberKey } from '../../packages/cluster/src/member.js';
