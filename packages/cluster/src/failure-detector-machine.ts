import type { ActorSystem, Message } from '@doyen/core';
import { assign, enqueueActions, setup } from 'xstate';
import type { ClusterConfig } from './config.js';
import type { PhiAccrualFailureDetector } from './failure-detector/phi-accrual.js';
import { FailureDetectorRegistry } from './failure-detector/registry.js';
import { heartbeatPeers } from './heartbeat-ring.js';
import { keyOf, keyOfNode, nodeOf } from './member.js';
import { liveMembers, type Membership } from './membership.js';
import type { SelfInfo } from './membership-protocol.js';
import type { HeartbeatPing, HeartbeatPong } from './messages.js';

export type PeerStatus = 'reachable' | 'suspect' | 'unreachable';

export interface FailureDetectorContext {
  readonly version: number;
  /** Live members (keys) we answer heartbeats from, and the downed ones we tell so. */
  readonly memberKeys: readonly string[];
  readonly failedKeys: readonly string[];
  /** Monitored peers (member keys) and what the detector currently thinks of each. */
  readonly peers: Readonly<Record<string, PeerStatus>>;
}

export type FailureDetectorEvent =
  | { readonly type: 'fd.members'; readonly membership: Membership }
  | HeartbeatPing
  | HeartbeatPong;

export const HEARTBEAT_PATH = '/system/heartbeat';

/**
 * The failure detector of one node: heartbeats its ring targets (everyone in small clusters),
 * feeds the replies into a phi-accrual (or deadline) detector per peer, and tells the membership
 * machine when a peer becomes unreachable or reachable again. Heartbeats carry the membership
 * version, so a node that missed an update is noticed (the seed's catch-up through heartbeats).
 */
export function createFailureDetectorMachine(deps: {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly self: SelfInfo;
}) {
  const { system, config, self } = deps;
  const registry = new FailureDetectorRegistry(config.failureDetector);
  const phiThreshold =
    config.failureDetector.kind === 'phi-accrual'
      ? (config.failureDetector.threshold ?? 8)
      : Number.POSITIVE_INFINITY;
  const membershipRef = () => system.lookup('/system/membership');
  const tellMembership = (message: Message) => membershipRef()?.send(message);

  function statusOf(key: string, now: number): PeerStatus {
    if (!registry.isAvailable(key, now)) return 'unreachable';
    const detector = registry.get(key) as PhiAccrualFailureDetector | undefined;
    if (detector && typeof detector.phi === 'function' && detector.phi(now) > phiThreshold / 2)
      return 'suspect';
    return 'reachable';
  }

  const answerPing = ({
    context,
    event,
  }: {
    context: FailureDetectorContext;
    event: FailureDetectorEvent;
  }) => {
    if (event.type !== 'heartbeat.ping') return;
    const from = keyOfNode(event.from);
    if (!context.memberKeys.includes(from)) {
      // Not one of ours. If we downed it, say so (Akka's quarantine): it may still believe it
      // is a member and run singletons; silence alone would leave it guessing for seconds.
      if (context.failedKeys.includes(from)) {
        system
          .remoteRef(event.from, '/system/membership')
          .send({ type: 'membership.downed-notice', by: self.key } as Message);
      }
      return;
    }
    const pong: HeartbeatPong = { type: 'heartbeat.pong', from: self.node, version: context.version };
    system.remoteRef(event.from, HEARTBEAT_PATH).send(pong);
    if (event.version !== context.version && context.version > 0) {
      tellMembership({ type: 'fd.version-seen', peer: event.from, version: event.version } as Message);
    }
  };

  return setup({
    types: { context: {} as FailureDetectorContext, events: {} as FailureDetectorEvent },
    delays: { heartbeatInterval: config.heartbeatIntervalMs },
    actions: {
      answerPing,
      // Taking a new membership must not restart the heartbeat timer: a burst of versions
      // (a wave of joins) would otherwise stop heartbeats and checks for as long as it lasts.
      takeMembers: assign(({ context, event }) => {
        const membership = (event as { membership: Membership }).membership;
        const members = liveMembers(membership).map((m) => ({ ...m, key: keyOf(m) }));
        const unreachable = new Set(
          Object.entries(context.peers)
            .filter(([, s]) => s === 'unreachable')
            .map(([k]) => k),
        );
        const { targets } = heartbeatPeers(
          { address: self.address, uid: self.uid },
          members.filter((m) => m.key !== self.key),
          { unreachable, config: config.heartbeatRing },
        );
        const peers: Record<string, PeerStatus> = {};
        const now = system.clock.now();
        for (const t of targets) {
          const key = keyOf(t);
          // A new target starts with a heartbeat "now": if none ever arrives it still gets detected.
          if (!(key in context.peers)) registry.heartbeat(key, now);
          peers[key] = context.peers[key] ?? 'reachable';
        }
        for (const key of Object.keys(context.peers)) if (!(key in peers)) registry.remove(key);
        return {
          version: membership.version,
          peers,
          memberKeys: members.map((m) => m.key),
          failedKeys: membership.failed.map(keyOf),
        };
      }),
    },
  }).createMachine({
    id: 'failureDetector',
    context: { version: 0, peers: {}, memberKeys: [], failedKeys: [] },
    initial: 'idle',
    on: {
      'heartbeat.ping': { actions: 'answerPing' },
      'fd.members': { actions: 'takeMembers' },
      'heartbeat.pong': {
        actions: enqueueActions(({ context, event }) => {
          if (event.type !== 'heartbeat.pong') return;
          const key = keyOfNode(event.from);
          if (key in context.peers) registry.heartbeat(key, system.clock.now());
          if (event.version > context.version && context.version > 0) {
            tellMembership({ type: 'fd.version-seen', peer: event.from, version: event.version } as Message);
          }
        }),
      },
    },
    states: {
      idle: {
        on: { 'fd.members': { target: 'monitoring', actions: 'takeMembers' } },
      },
      monitoring: {
        after: {
          heartbeatInterval: {
            target: 'monitoring',
            reenter: true,
            actions: [
              ({ context }) => {
                const ping: HeartbeatPing = {
                  type: 'heartbeat.ping',
                  from: self.node,
                  version: context.version,
                };
                for (const key of Object.keys(context.peers)) {
                  system.remoteRef(nodeOf(parseKey(key)), HEARTBEAT_PATH).send(ping);
                }
              },
              enqueueActions(({ context, enqueue }) => {
                const now = system.clock.now();
                let changed = false;
                const peers: Record<string, PeerStatus> = {};
                for (const [key, before] of Object.entries(context.peers)) {
                  const after = statusOf(key, now);
                  peers[key] = after;
                  if (after !== before) changed = true;
                  const wasUnreachable = before === 'unreachable';
                  const isUnreachable = after === 'unreachable';
                  if (wasUnreachable !== isUnreachable) {
                    enqueue(() =>
                      tellMembership({
                        type: 'fd.reachability',
                        subject: key,
                        reachable: !isUnreachable,
                      } as Message),
                    );
                  }
                }
                if (changed) enqueue.assign({ peers });
              }),
            ],
          },
        },
      },
    },
  });
}

function parseKey(key: string): { address: string; uid: string } {
  const i = key.lastIndexOf('#');
  return { address: key.slice(0, i), uid: key.slice(i + 1) };
}

export type FailureDetectorMachine = ReturnType<typeof createFailureDetectorMachine>;
