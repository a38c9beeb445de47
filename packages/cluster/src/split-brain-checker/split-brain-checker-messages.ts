import {
  type ActorRef,
  type MessageTypes,
  type NodeAddress,
  read,
  schema,
  type UniqueNodeAddress,
} from '@doyen/core';

/** Membership -> checker: what it needs to know, after every change. */
export interface SbcView {
  readonly type: 'sbc.view';
  readonly isCoordinator: boolean;
  readonly coordinator: UniqueNodeAddress | undefined;
  readonly coordinatorKey: string | undefined;
  readonly size: number;
  /** Addresses of failed members: perhaps alive in another sub-cluster. */
  readonly failed: readonly NodeAddress[];
  readonly memberAddresses: readonly string[];
}

/** Coordinator -> a failed member's address: are you alive, and how big is your cluster? */
export interface Probe {
  readonly type: 'sbc.probe';
  readonly coordinator: UniqueNodeAddress;
  readonly size: number;
  readonly replyTo: ActorRef;
}

/**
 * A member of the other sub-cluster answers with its coordinator and size (the seed's
 * SplitBrainJoinRequest exchange). It answers in its own name (`from`): a probe is not passed
 * on to the coordinator, since a member speaks only for itself.
 */
export interface ProbeReply {
  readonly type: 'sbc.probe-reply';
  readonly coordinator: UniqueNodeAddress;
  readonly size: number;
  readonly from: UniqueNodeAddress;
}

/** Coordinator of the smaller side -> its members: leave and rejoin through `target`. */
export interface Merge {
  readonly type: 'sbc.merge';
  readonly from: string;
  readonly target: NodeAddress;
}

export type SplitBrainCheckerEvent = SbcView | Probe | ProbeReply | Merge;

/**
 * The checker's messages from the network: probes and their replies from anyone (the other side
 * is by definition not one of ours), a merge order only from our coordinator.
 */
export function registerSplitBrainCheckerMessages(types: MessageTypes): void {
  types.register(
    'sbc.probe',
    schema<Probe>(
      { coordinator: read.node, size: read.count, replyTo: read.ref },
      (m) => [m.coordinator, m.replyTo],
      'anyone',
    ),
  );
  types.register(
    'sbc.probe-reply',
    schema<ProbeReply>(
      { coordinator: read.node, size: read.count, from: read.node },
      (m) => [m.from],
      'anyone',
    ),
  );
  types.register(
    'sbc.merge',
    schema<Merge>({ from: read.memberKey, target: read.nodeAddress }, (m) => [m.from], 'coordinator'),
  );
}
