// IPC between the membership bench and its node processes (membership-node.ts): the reports every bench node
// process sends (node-reports.ts), and the membership bench's own.
import type { MembershipFigures, NodeEvent, NodeFailed, NodeUp } from './node-reports.js';

export type { MemberView, NodeEvent, NodeFailed, NodeUp } from './node-reports.js';
export { wallMs } from './node-reports.js';

export const MEMBERSHIP_CLUSTER = 'bench-membership';
export const MEMBERSHIP_SECRET = 'bench-membership-secret';

export interface NodeState extends MembershipFigures {
  readonly kind: 'state';
  readonly id: number;
  readonly coordinator: string | undefined;
}

export interface StallDone {
  readonly kind: 'stall-done';
  readonly stalls: number;
  /** Longest gap between two consecutive ticks of a 10 ms timer while stalling: what the stalls really cost. */
  readonly maxTimerGapMs: number;
}

export type NodeReport = NodeUp | NodeEvent | NodeState | StallDone | NodeFailed;

export type NodeCommand =
  | { readonly cmd: 'state'; readonly id: number }
  | { readonly cmd: 'stall'; readonly busyMs: number; readonly everyMs: number; readonly forMs: number };
