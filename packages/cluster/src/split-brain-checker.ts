import type { ActorRef, ActorSystem, Message, NodeAddress, UniqueNodeAddress } from '@doyen/core';
import { assign, setup } from 'xstate';
import type { ClusterConfig } from './config.js';
import { compareAddress } from './downing/sbr-view.js';
import { isLive, memberKey, nodeOf } from './member.js';
import { coordinatorOf } from './membership.js';
import type { MembershipContext } from './membership-protocol.js';

export const SPLIT_BRAIN_CHECKER_PATH = '/system/split-brain-checker';

/** Time for the merge orders to reach the other members before the initiator restarts. */
const MERGE_SEND_GRACE_MS = 250;

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

export function sbcView(selfKey: string, ctx: MembershipContext): SbcView & Message {
  const m = ctx.membership!;
  const coordinator = coordinatorOf(m);
  const members = m.members.filter((x) => isLive(x.status));
  return {
    type: 'sbc.view',
    isCoordinator: coordinator !== undefined && memberKey(coordinator) === selfKey,
    coordinator: coordinator && nodeOf(coordinator),
    coordinatorKey: coordinator && memberKey(coordinator),
    size: members.length,
    failed: m.failed.map((f) => {
      const n = nodeOf(f);
      return { host: n.host, port: n.port };
    }),
    memberAddresses: members.map((x) => x.address),
  };
}

/**
 * Who merges into whom (pure, the same answer on both sides): the smaller sub-cluster joins the
 * larger; equal sizes keep the side whose coordinator has the lowest address.
 */
export function shouldMergeInto(
  mine: { size: number; address: string },
  theirs: { size: number; address: string },
) {
  if (mine.size !== theirs.size) return mine.size < theirs.size;
  return compareAddress(mine.address, theirs.address) > 0;
}

/** The addresses one probing round asks (failed members' addresses that are not ours now). */
export function probeTargets(view: SbcView): string[] {
  const targets = new Set<string>();
  for (const f of view.failed) {
    const a = addressOf(f);
    if (!view.memberAddresses.includes(a)) targets.add(a);
  }
  return [...targets];
}

/**
 * Whether a probe reply may lead to a merge (pure): it answers a probe of ours (it comes from an
 * address this node probed), and the cluster it names was found by this node itself: its
 * coordinator is an address we probed or one of our seeds (the seeds discovery resolved). An
 * unsolicited reply, or one pointing elsewhere, could otherwise move the whole cluster into
 * whatever address a peer names.
 */
export function isOwnFinding(
  probed: readonly string[],
  seeds: readonly NodeAddress[],
  reply: Pick<ProbeReply, 'from' | 'coordinator'>,
): boolean {
  if (!probed.includes(addressOf(reply.from))) return false;
  const target = addressOf(reply.coordinator);
  return probed.includes(target) || seeds.some((s) => addressOf(s) === target);
}

export interface SplitBrainCheckerDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly selfAddress: string;
  readonly probeIntervalMs: number;
  /** The edge restarts this node as a new incarnation joining through `seeds`. */
  readonly rejoin: (seeds: readonly NodeAddress[], reason: 'merge') => void;
}

const addressOf = (n: NodeAddress) =>
  n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`;

/**
 * The seed's split-brain recovery for `auto` downing: the coordinator keeps probing the
 * addresses of failed members; when one answers as the coordinator of another sub-cluster, the
 * smaller side's coordinator tells its members to merge, and each restarts as a new incarnation
 * that joins the larger side. Idle under the resolver strategies (there the minority is down).
 */
export function createSplitBrainCheckerMachine(deps: SplitBrainCheckerDeps) {
  const { system, config } = deps;
  const self = () => system.remoteRef(system.node, SPLIT_BRAIN_CHECKER_PATH);
  const peer = (node: NodeAddress) => system.anyIncarnationRef(node, SPLIT_BRAIN_CHECKER_PATH);

  const startMerge = (view: SbcView, target: UniqueNodeAddress, size: number) => {
    system.logger.warn(
      {
        event: 'split-brain.merge',
        role: 'initiator',
        target: addressOf(target),
        ourSize: view.size,
        theirSize: size,
      },
      `split brain: merging our ${view.size} members into ${addressOf(target)}'s ${size}`,
    );
    const merge: Merge = {
      type: 'sbc.merge',
      from: view.coordinatorKey!,
      target: { host: target.host, port: target.port },
    };
    for (const address of view.memberAddresses) {
      if (address !== deps.selfAddress) {
        const i = address.lastIndexOf(':');
        peer({ host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) }).send(
          merge,
        );
      }
    }
    // the merge orders must leave before this node's transport closes for its own restart
    system.clock.setTimeout(() => deps.rejoin([merge.target], 'merge'), MERGE_SEND_GRACE_MS);
  };

  return setup({
    types: {
      context: {} as { view: SbcView | undefined; merging: boolean; probed: readonly string[] },
      events: {} as SplitBrainCheckerEvent,
    },
    delays: { probeInterval: deps.probeIntervalMs },
    guards: {
      probing: ({ context }) =>
        !context.merging &&
        context.view !== undefined &&
        context.view.isCoordinator &&
        context.view.failed.length > 0,
    },
  }).createMachine({
    id: 'splitBrainChecker',
    context: { view: undefined, merging: false, probed: [] },
    initial: config.downing === 'auto' ? 'idle' : 'inactive',
    states: {
      inactive: {},
      idle: {
        always: { guard: 'probing', target: 'probing' },
        on: {
          'sbc.view': { actions: assign({ view: ({ event }) => event as SbcView }) },
        },
      },
      probing: {
        always: {
          guard: ({ context }) =>
            !context.merging && !(context.view?.isCoordinator && context.view.failed.length > 0),
          target: 'idle',
        },
        on: {
          'sbc.view': { actions: assign({ view: ({ event }) => event as SbcView }) },
        },
        after: {
          probeInterval: {
            target: 'probing',
            reenter: true,
            actions: [
              // the round's targets are remembered first: only their replies are believed
              assign({ probed: ({ context }) => probeTargets(context.view!) }),
              ({ context }) => {
                const view = context.view!;
                const probe: Probe = {
                  type: 'sbc.probe',
                  coordinator: system.node,
                  size: view.size,
                  replyTo: self(),
                };
                const targets = new Set(context.probed);
                for (const f of view.failed) {
                  const a = addressOf(f);
                  if (!targets.delete(a)) continue;
                  peer(f).send(probe);
                }
              },
            ],
          },
        },
      },
      merging: {},
    },
    on: {
      'sbc.probe': {
        actions: ({ context, event }) => {
          const view = context.view;
          const probe = event as Probe;
          if (!view || context.merging || !view.coordinator) return;
          // the prober is one of ours: nothing to merge
          if (view.memberAddresses.includes(addressOf(probe.coordinator))) return;
          const reply: ProbeReply = {
            type: 'sbc.probe-reply',
            coordinator: view.coordinator,
            size: view.size,
            from: system.node,
          };
          probe.replyTo.send(reply);
        },
      },
      'sbc.probe-reply': {
        guard: ({ context, event }) => {
          const view = context.view;
          const reply = event as ProbeReply;
          if (!view?.isCoordinator || context.merging) return false;
          if (view.memberAddresses.includes(addressOf(reply.coordinator))) return false;
          if (!isOwnFinding(context.probed, config.seeds, reply)) return false;
          return shouldMergeInto(
            { size: view.size, address: deps.selfAddress },
            { size: reply.size, address: addressOf(reply.coordinator) },
          );
        },
        target: '.merging',
        actions: [
          assign({ merging: true }),
          ({ context, event }) =>
            startMerge(context.view!, (event as ProbeReply).coordinator, (event as ProbeReply).size),
        ],
      },
      'sbc.merge': {
        guard: ({ context, event }) =>
          !context.merging && (event as Merge).from === context.view?.coordinatorKey,
        target: '.merging',
        actions: [
          assign({ merging: true }),
          ({ event }) => {
            const merge = event as Merge;
            system.logger.warn(
              { event: 'split-brain.merge', role: 'member', target: addressOf(merge.target) },
              `split brain: our coordinator merges us into ${addressOf(merge.target)}; rejoining`,
            );
            deps.rejoin([merge.target], 'merge');
          },
        ],
      },
    },
  });
}
