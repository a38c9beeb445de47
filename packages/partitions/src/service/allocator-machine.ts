import { type Cluster, type Membership, memberKey, nodeOfKey } from '@doyen/cluster';
import type { ActorSystem } from '@doyen/core';
import { assign, fromCallback, setup } from 'xstate';
import { allocate } from '../allocate.js';
import type { AllocateOptions, PartitionMember } from '../inputs.js';
import { movedPartitions } from '../movement.js';
import type { PartitionTable } from '../partition-table.js';
import {
  PARTITIONS_PATH,
  type PartitionService,
  type TableAck,
  type TableMessage,
} from './partition-service.js';

export const ALLOCATOR_SINGLETON = 'partition-allocator';

export interface AllocatorInput {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  readonly service: PartitionService;
  readonly options: AllocateOptions;
  readonly ackTimeoutMs: number;
}

type AllocatorEvent =
  | {
      readonly type: 'allocator.members';
      readonly members: readonly PartitionMember[];
      readonly all: readonly string[];
      /** The membership's version: receivers judge the table against their view at it. */
      readonly version: number;
    }
  | TableAck;

interface AllocatorContext {
  readonly table: PartitionTable | undefined;
  /** The membership version `table` was computed from (sent with it). */
  readonly membershipVersion: number;
  readonly memberKeys: string;
  readonly waiting: readonly string[];
}

/** Up members (those may own partitions) and everyone live (who must learn the table). */
function membersOf(m: Membership) {
  const members = m.members
    .filter((x) => x.status === 'up')
    .map((x) => ({ key: memberKey(x), roles: x.roles }));
  const all = m.members.filter((x) => x.status !== 'down' && x.status !== 'removed').map(memberKey);
  return { members, all, version: m.version };
}

/**
 * The fixed-partition allocator, a cluster singleton: on every change of the up members it
 * computes a balanced table with minimal movement from the previous one (the last table this
 * node knows, so a new allocator after a failover continues from it), publishes it to every
 * member and collects acknowledgements: stable → publishing → stable. The logic closes over the
 * node's system, cluster and partition service: the instance runs on whichever node is oldest.
 */
export function allocatorLogic(input: AllocatorInput) {
  const { system, cluster, service, options } = input;
  const selfRef = () => system.remoteRef(system.node, `/user/singleton-${ALLOCATOR_SINGLETON}`);
  return setup({
    types: { context: {} as AllocatorContext, events: {} as AllocatorEvent },
    delays: { ackTimeout: input.ackTimeoutMs },
    actors: {
      membershipFeed: fromCallback<AllocatorEvent>(({ sendBack }) =>
        cluster.subscribeMembership((m) => sendBack({ type: 'allocator.members', ...membersOf(m) })),
      ),
    },
    guards: {
      membersChanged: ({ context, event }) =>
        event.type === 'allocator.members' &&
        event.members
          .map((m) => m.key)
          .sort()
          .join(',') !== context.memberKeys,
      allAcked: ({ context }) => context.waiting.length === 0,
    },
  }).createMachine({
    id: 'partitionAllocator',
    context: () => ({ table: service.table(), membershipVersion: 0, memberKeys: '', waiting: [] }),
    invoke: { src: 'membershipFeed' },
    initial: 'stable',
    on: {
      'allocator.members': {
        guard: 'membersChanged',
        target: '.publishing',
        actions: assign(({ context, event }) => {
          const e = event as Extract<AllocatorEvent, { type: 'allocator.members' }>;
          const before = context.table ?? service.table();
          const next = allocate(before, e.members, options);
          const moved = before ? movedPartitions(before, next).length : next.owners.filter(Boolean).length;
          service.adopt(next);
          system.logger.info(
            { event: 'partitions.allocated', version: next.version, members: e.members.length, moved },
            `allocated ${options.partitionCount} partitions over ${e.members.length} members (${moved} moved)`,
          );
          const message: TableMessage = {
            type: 'partitions.table',
            table: next,
            replyTo: selfRef(),
            membershipVersion: e.version,
          };
          const others = e.all.filter((k) => k !== cluster.self.key);
          for (const key of others) system.remoteRef(nodeOfKey(key), PARTITIONS_PATH).send(message);
          return {
            table: next,
            membershipVersion: e.version,
            memberKeys: e.members
              .map((m) => m.key)
              .sort()
              .join(','),
            waiting: others,
          };
        }),
      },
      'partitions.ack': {
        actions: assign({
          waiting: ({ context, event }) =>
            context.waiting.filter((k) => !(event.type === 'partitions.ack' && k === event.from)),
        }),
      },
    },
    states: {
      stable: {},
      publishing: {
        always: { guard: 'allAcked', target: 'stable' },
        after: {
          ackTimeout: {
            target: 'stable',
            actions: ({ context }) => {
              system.logger.warn(
                { event: 'partitions.ack-timeout', missing: context.waiting },
                'partition table not acknowledged by every member in time',
              );
              // once more to those missing: a receiver refuses a table from a sender it does not
              // know as a member yet (its view lagged), and judges the same table again now
              if (!context.table) return;
              const message: TableMessage = {
                type: 'partitions.table',
                table: context.table,
                replyTo: selfRef(),
                membershipVersion: context.membershipVersion,
              };
              for (const key of context.waiting)
                system.remoteRef(nodeOfKey(key), PARTITIONS_PATH).send(message);
            },
          },
        },
      },
    },
  });
}
