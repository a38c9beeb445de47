import { type ActorSystem, enqueueDecision, formatNodeAddress, type Message } from '@doyen/core';
import { fromCallback, setup } from 'xstate';
import type { OwnReachabilityMessage } from '../downing/downing-messages.js';
import { DOWNING_PATH, MEMBERSHIP_PATH } from '../model/system-actors.js';
import {
  connectionRefused,
  type FailureDetectorContext,
  type FailureDetectorEffect,
  type FailureDetectorEvent,
  peersChanged,
} from './failure-detector-decisions.js';
import type { Heartbeater } from './heartbeater.js';

export {
  CONNECTION_REFUSED,
  connectionRefused,
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
 * It also hears the transport's refused dials (`fd.refused`): a crashed peer's port refuses at
 * once, so it is judged unreachable without waiting for phi (see connectionRefused).
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
      case 'hold-unreachable':
        heartbeater.holdUnreachable(effect.keys);
        return;
      case 'count-refused':
        system.metrics.inc(
          'doyen_fd_connection_refused_total',
          'Peers judged unreachable at once because a dial to them was refused',
          {},
          effect.peers,
        );
        return;
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };
  // The transport's refused dials, as events (network only through the transport).
  const refusals = fromCallback<FailureDetectorEvent>(({ sendBack }) =>
    system.onConnectionRefused((node) => sendBack({ type: 'fd.refused', address: formatNodeAddress(node) })),
  );

  const machineSetup = setup({
    types: { context: {} as FailureDetectorContext, events: {} as FailureDetectorEvent },
    actors: { refusals },
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
  const takeRefusal = machineSetup.enqueueActions(({ context, event, enqueue }) => {
    if (event.type === 'fd.refused')
      enqueueDecision(enqueue, context, connectionRefused(context, event.address));
  });
  return machineSetup.createMachine({
    id: 'failureDetector',
    context: { peers: {} },
    initial: 'idle',
    invoke: { src: 'refusals' },
    on: {
      'fd.members': { actions: monitor },
      'fd.peers': { actions: takePeers },
      'fd.refused': { actions: takeRefusal },
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
