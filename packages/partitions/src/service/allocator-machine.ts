import { type Cluster, nodeOfKey } from '@doyen/cluster';
import { type ActorSystem, enqueueDecision } from '@doyen/core';
import { fromCallback, setup } from 'xstate';
import type { AllocateOptions } from '../inputs.js';
import {
  type AllocatorContext,
  type AllocatorEffect,
  type AllocatorEvent,
  type AllocatorPolicy,
  type AllocatorStep,
  ackAhead,
  allAcked,
  allocateFor,
  initialAllocatorContext,
  membersChanged,
  membersEventOf,
  raiseVersion,
  resendToMissing,
  retire,
  retireNew,
  takeAck,
} from './allocator-decisions.js';
import type { TableMessage } from './allocator-messages.js';
import { PARTITIONS_PATH, type PartitionService } from './partition-service.js';

export const ALLOCATOR_SINGLETON = 'partition-allocator';

export interface AllocatorInput {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  readonly service: PartitionService;
  readonly options: AllocateOptions;
  readonly ackTimeoutMs: number;
}

/**
 * The fixed-partition allocator, a cluster singleton: on every change of the up members it
 * computes a balanced table with minimal movement from the previous one (the last table this
 * node knows, so a new allocator after a failover continues from it), publishes it to every
 * member and collects acknowledgements: stable → publishing → stable. A member about to leave
 * asks to retire (`partitions.retire`): the next table leaves it out while it is still up. The
 * logic closes over the node's system, cluster and partition service: the instance runs on
 * whichever node is oldest.
 * Decisions are the pure functions of allocator-decisions.ts; the action `run` executes their
 * effects.
 */
export function allocatorLogic(input: AllocatorInput) {
  const { system, cluster, service, options } = input;
  const policy: AllocatorPolicy = { selfKey: cluster.self.key, options };
  const selfRef = () => system.remoteRef(system.node, `/user/singleton-${ALLOCATOR_SINGLETON}`);

  const execute = (effect: AllocatorEffect): void => {
    switch (effect.kind) {
      case 'adopt':
        service.adopt(effect.table);
        return;
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
      case 'publish': {
        const message: TableMessage = {
          type: 'partitions.table',
          table: effect.table,
          replyTo: selfRef(),
          membershipVersion: effect.membershipVersion,
        };
        for (const key of effect.to) system.remoteRef(nodeOfKey(key), PARTITIONS_PATH).send(message);
        return;
      }
    }
  };

  const machineSetup = setup({
    types: { context: {} as AllocatorContext, events: {} as AllocatorEvent },
    actions: {
      run: (_, effect: AllocatorEffect) => execute(effect),
    },
    delays: { ackTimeout: input.ackTimeoutMs },
    actors: {
      // the service's table travels with the membership: before its first allocation this
      // allocator continues from the latest table the node knows
      membershipFeed: fromCallback<AllocatorEvent>(({ sendBack }) =>
        cluster.subscribeMembership((m) => sendBack(membersEventOf(m, service.table()))),
      ),
    },
    guards: {
      membersChanged: ({ context, event }) => membersChanged(context, event),
      allAcked: ({ context }) => allAcked(context),
      ackAhead: ({ context, event }) => ackAhead(context, event),
      retireNew: ({ context, event }) => retireNew(context, event),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (step: (context: AllocatorContext, event: AllocatorEvent) => AllocatorStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) =>
      enqueueDecision(enqueue, context, step(context, event)),
    );

  return machineSetup.createMachine({
    id: 'partitionAllocator',
    context: () => initialAllocatorContext(service.table()),
    invoke: { src: 'membershipFeed' },
    initial: 'stable',
    on: {
      'allocator.members': {
        guard: 'membersChanged',
        target: '.publishing',
        actions: apply((c, e) => allocateFor(policy, c, e)),
      },
      'partitions.ack': [
        // a member holds a newer table than this allocator's lineage: the same table, numbered past it
        { guard: 'ackAhead', target: '.publishing', actions: apply((c, e) => raiseVersion(policy, c, e)) },
        { actions: apply(takeAck) },
      ],
      // a member about to leave: the table without it, published like a membership change's
      'partitions.retire': {
        guard: 'retireNew',
        target: '.publishing',
        actions: apply((c, e) => retire(policy, c, e)),
      },
    },
    states: {
      stable: {},
      publishing: {
        always: { guard: 'allAcked', target: 'stable' },
        after: {
          ackTimeout: { target: 'stable', actions: apply(resendToMissing) },
        },
      },
    },
  });
}
