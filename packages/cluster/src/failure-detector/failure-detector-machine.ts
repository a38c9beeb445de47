import { type ActorSystem, enqueueDecision, type Message } from '@doyen/core';
import { setup } from 'xstate';
import type { OwnReachabilityMessage } from '../downing/downing-messages.js';
import { DOWNING_PATH, MEMBERSHIP_PATH } from '../model/system-actors.js';
import {
  type FailureDetectorContext,
  type FailureDetectorEffect,
  type FailureDetectorEvent,
  peersChanged,
} from './failure-detector-decisions.js';
import type { Heartbeater } from './heartbeater.js';

export {
  type FailureDetectorContext,
  type FailureDetectorEffect,
  type FailureDetectorEvent,
  peersChanged,
} from './failure-detector-decisions.js';
export { Heartbeater, type PeerStatus } from './heartbeater.js';

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
        system.lookup(MEMBERSHIP_PATH)?.send({ type: 'fd.reachability', changes: effect.changes } as Message);
        return;
      case 'tell-downing': {
        const message: OwnReachabilityMessage = { type: 'sbr.own-reachability', reachable: effect.reachable };
        system.lookup(DOWNING_PATH)?.send(message);
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
