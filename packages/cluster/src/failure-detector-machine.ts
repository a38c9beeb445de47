import { type ActorSystem, type DecisionStep, enqueueDecision, type Message } from '@doyen/core';
import { setup } from 'xstate';
import type { OwnReachabilityMessage } from './downing/downing-messages.js';
import type { Heartbeater, PeerStatus } from './failure-detector/heartbeater.js';
import type { Membership } from './membership.js';
import type { ReachabilityChange } from './messages.js';

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
  /** Every peer that crossed the unreachable line in one table change: one report to the members. */
  | { readonly kind: 'tell-membership'; readonly changes: readonly ReachabilityChange[] }
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
): DecisionStep<FailureDetectorContext, FailureDetectorEffect> {
  const effects: FailureDetectorEffect[] = [];
  const changes: ReachabilityChange[] = [];
  for (const [key, after] of Object.entries(peers)) {
    const before = context.peers[key];
    // a new peer starts reachable: only a change of mind is news
    if (before !== undefined && (before === 'unreachable') !== (after === 'unreachable')) {
      changes.push({ subject: key, reachable: after !== 'unreachable' });
    }
  }
  if (changes.length > 0) effects.push({ kind: 'tell-membership', changes });
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
        system
          .lookup('/system/membership')
          ?.send({ type: 'fd.reachability', changes: effect.changes } as Message);
        return;
      case 'tell-downing': {
        const message: OwnReachabilityMessage = { type: 'sbr.own-reachability', reachable: effect.reachable };
        system.lookup('/system/downing')?.send(message);
        return;
      }
    }
  };

  const machineSetup = setup({
    types: { context: {} as FailureDetectorContext, events: {} as FailureDetectorEvent },
    actions: {
      run: (_, effect: FailureDetectorEffect) => execute(effect),
    },
  });
  const monitor = machineSetup.enqueueActions(({ event, enqueue }) => {
    if (event.type === 'fd.members')
      enqueue({ type: 'run', params: { kind: 'monitor', membership: event.membership } });
  });
  const takePeers = machineSetup.enqueueActions(({ context, event, enqueue }) => {
    if (event.type === 'fd.peers') enqueueDecision(enqueue, context, peersChanged(context, event.peers));
  });
  return machineSetup.createMachine({
    id: 'failureDetector',
    context: { peers: {} },
    initial: 'idle',
    on: {
      'fd.members': { actions: monitor },
      'fd.peers': { actions: takePeers },
    },
    states: {
      idle: {
        on: { 'fd.members': { target: 'monitoring', actions: monitor } },
      },
      monitoring: {},
    },
  });
}

export type FailureDetectorMachine = ReturnType<typeof createFailureDetectorMachine>;
