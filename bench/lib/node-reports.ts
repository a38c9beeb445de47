// What every bench node process (membership-node.ts, singleton-node.ts) reports to its parent over IPC, and
// the functions that flatten a node's facts into those reports. Timestamps are wall-clock milliseconds with
// sub-ms resolution, `performance.timeOrigin + performance.now()`, so a time taken in the bench and one taken
// in a node process on the same machine can be subtracted. Type-only imports of the packages: the child
// imports this before its slow imports (see node-process-child.ts).
import type { ClusterEvent, ClusterState } from '../../packages/cluster/src/index.js';
import type { MemberView as HttpMemberView } from '../../packages/doyen/src/management-http.js';

/** Wall-clock ms with sub-ms resolution, comparable across processes on this machine. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

/** A member as the node reports it: the management endpoint's view, the fields a bench reads. */
export type MemberView = Pick<HttpMemberView, 'address' | 'uid' | 'status' | 'age'>;

/** The node is a member (cluster.whenUp() resolved). */
export interface NodeUp {
  readonly kind: 'up';
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

/** A cluster event this node published, flattened to the member it is about. */
export interface NodeEvent {
  readonly kind: 'event';
  readonly type: string;
  /** The member the event is about (the new coordinator for `coordinator.changed`; '' when none). */
  readonly address: string;
  readonly uid: string;
  readonly t: number;
}

export interface NodeFailed {
  readonly kind: 'failed';
  readonly message: string;
}

/** The membership part of a state answer. */
export interface MembershipFigures {
  readonly status: string;
  readonly version: number;
  readonly members: readonly MemberView[];
  readonly unreachable: readonly string[];
}

/** `event` as a report, timed now. */
export function eventReport(event: ClusterEvent): NodeEvent {
  const member = 'member' in event ? event.member : event.coordinator;
  return {
    kind: 'event',
    type: event.type,
    address: member?.address ?? '',
    uid: member?.uid ?? '',
    t: wallMs(),
  };
}

/** The membership a node sees, as a state answer carries it. */
export function membershipFigures(state: ClusterState): MembershipFigures {
  return {
    status: state.status,
    version: state.membership?.version ?? 0,
    members: (state.membership?.members ?? []).map((m) => ({
      address: m.address,
      uid: m.uid,
      status: m.status,
      age: m.age,
    })),
    unreachable: [...(state.membership?.unreachable ?? [])],
  };
}
