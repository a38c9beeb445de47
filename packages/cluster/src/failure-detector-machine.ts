import type { ActorSystem, Message } from '@doyen/core';
import { enqueueActions, setup } from 'xstate';
import type { OwnReachabilityMessage } from './downing/downing-decisions.js';
import type { Heartbeater, PeerStatus } from './failure-detector/heartbeater.js';
import type { Membership } from './membership.js';

export { HEARTBEAT_PULSE_PATH, Heartbeater, type PeerStatus } from './failure-detector/heartbeater.js';

export interface FailureDetectorContext {
  /** Monitored peers (member keys) and what the detector currently thinks of each. */
  readonly peers: Readonly<Record<string, PeerStatus>>;
}

export type FailureDetectorEvent =
  | { readonly type: 'fd.members'; readonly membership: Membership }
  | { readonly type: 'fd.peers'; readonly peers: Readonly<Record<string, PeerStatus>> };

export const HEARTBEAT_PATH = '/system/heartbeat';

/** What the machine's named action `run` carries out. */
export type FailureDetectorEffect =
  | { readonly kind: 'monitor'; readonly membership: Membership }
  | { readonly kind: 'tell-membership'; readonly subject: string; readonly reachable: boolean }
  | { readonly kind: 'tell-downing'; readonly reachable: readonly string[] };

/** Peers heard from and not judged unreachable (an `unheard` one is no evidence either way). */
const reachableKeys = (peers: Readonly<Record<string, PeerStatus>>): string[] =>
  Object.entries(peers)
    .filter(([, s]) => s === 'reachable' || s === 'suspect')
    .map(([k]) => k)
    .sort();

/**
 * The heartbeater's table changed (pure): the membership hears of every peer that crossed the
 * unreachable line, the split-brain resolver of the new set of peers this node reaches.
 */
export function peersChanged(
  context: FailureDetectorContext,
  peers: Readonly<Record<string, PeerStatus>>,
): { context: FailureDetectorContext; effects: FailureDetectorEffect[] } {
  const effects: FailureDetectorEffect[] = [];
  for (const [key, after] of Object.entries(peers)) {
    const before = context.peers[key];
    // a new peer starts reachable: only a change of mind is news
    if (before !== undefined && (before === 'unreachable') !== (after === 'unreachable')) {
      effects.push({ kind: 'tell-membership', subject: key, reachable: after !== 'unreachable' });
    }
  }
  const was = reachableKeys(context.peers);
  const now = reachableKeys(peers);
  if (was.join(',') !== now.join(',') || Object.keys(context.peers).length === 0) {
    effects.push({ kind: 'tell-downing', reachable: now });
  }
  return { context: { peers }, effects };
}

/**
 * The failure detector of one node, for changes only: it hands every new membership to the
 * heartbeater (which heartbeats the ring targets on its own timer, see heartbeater.ts) and turns
 * the heartbeater's changes of mind into news for the membership (`fd.reachability`) and the
 * split-brain resolver (`sbr.own-reachability`). An idle cluster makes it take no transition.
 */
export function createFailureDetectorMachine(deps: {
  readonly system: ActorSystem;
  readonly heartbeater: Heartbeater;
}) {
  const { system, heartbeater } = deps;
  const execute = (effect: FailureDetectorEffect): void => {
    switch (effect.kind) {
      case 'monitor':
        heartbeater.takeMembership(effect.membership);
        return;
      case 'tell-membership':
        system.lookup('/system/membership')?.send({
          type: 'fd.reachability',
          subject: effect.subject,
          reachable: effect.reachable,
        } as Message);
        return;
      case 'tell-downing': {
        const message: OwnReachabilityMessage = { type: 'sbr.own-reachability', reachable: effect.reachable };
        system.lookup('/system/downing')?.send(message);
        return;
      }
    }
  };

  return setup({
    types: { context: {} as FailureDetectorContext, events: {} as FailureDetectorEvent },
    actions: {
      monitor: ({ event }) => {
        if (event.type === 'fd.members') execute({ kind: 'monitor', membership: event.membership });
      },
      takePeers: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'fd.peers') return;
        const step = peersChanged(context, event.peers);
        enqueue.assign(step.context);
        for (const effect of step.effects) enqueue(() => execute(effect));
      }),
    },
  }).createMachine({
    id: 'failureDetector',
    context: { peers: {} },
    initial: 'idle',
    on: {
      'fd.members': { actions: 'monitor' },
      'fd.peers': { actions: 'takePeers' },
    },
    states: {
      idle: {
        on: { 'fd.members': { target: 'monitoring', actions: 'monitor' } },
      },
      monitoring: {},
    },
  });
}

export type FailureDetectorMachine = ReturnType<typeof createFailureDetectorMachine>;
