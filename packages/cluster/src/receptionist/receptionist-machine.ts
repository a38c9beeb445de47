import { type ActorRef, type ActorSystem, enqueueDecision, nodeOfKey } from '@doyen/core';
import { setup } from 'xstate';
import { RECEPTIONIST_PATH } from '../model/system-actors.js';
import {
  decide,
  initialReceptionistContext,
  type ReceptionistContext,
  type ReceptionistEffect,
  type ReceptionistEvent,
  type ReceptionistPolicy,
} from './receptionist-decisions.js';

export interface ReceptionistEffects {
  /** The receptionist's own ref: the watcher of registered actors. */
  self(): ActorRef;
  /** Tells the subscribers of `key` its new cluster-wide listing. */
  listingChanged(key: string, refs: readonly ActorRef[]): void;
  /** Raises `receptionist.ask-due` in the receptionist after `afterMs` (the node's clock). */
  askLater(afterMs: number): void;
}

/**
 * One node's receptionist (Akka's Receptionist) as a machine with a single state: each event
 * goes through `decide` (receptionist-decisions.ts) and the action `run` executes the effects —
 * watches, listings sent to members, subscriber notifications, logs — the only I/O here.
 */
export function createReceptionistMachine(
  system: ActorSystem,
  policy: ReceptionistPolicy,
  effects: ReceptionistEffects,
) {
  const execute = (effect: ReceptionistEffect): void => {
    switch (effect.kind) {
      case 'watch':
        system.watch(effect.ref, effects.self());
        return;
      case 'unwatch':
        system.unwatch(effect.ref, effects.self());
        return;
      case 'send-listing':
        for (const key of effect.to) system.remoteRef(nodeOfKey(key), RECEPTIONIST_PATH).send(effect.listing);
        return;
      case 'listing-changed':
        effects.listingChanged(effect.key, effect.refs);
        return;
      case 'ask-later':
        effects.askLater(effect.afterMs);
        return;
      case 'answer':
        effect.reply(effect.refs);
        return;
      case 'refused':
        system.metrics.inc(
          'doyen_receptionist_refused_total',
          'Receptionist registrations and listings refused (over a bound, or not their own)',
          { reason: effect.reason },
        );
        system.logger.warn(
          { event: 'receptionist.refused', reason: effect.reason, ...effect.fields },
          effect.msg,
        );
        return;
      case 'log':
        system.logger.debug({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };

  const machineSetup = setup({
    types: { context: {} as ReceptionistContext, events: {} as ReceptionistEvent },
    actions: { run: (_, effect: ReceptionistEffect) => execute(effect) },
  });
  const apply = machineSetup.enqueueActions(({ context, event, enqueue }) =>
    enqueueDecision(enqueue, context, decide(policy, context, event)),
  );
  return machineSetup.createMachine({
    id: 'receptionist',
    context: initialReceptionistContext,
    // one state: the receptionist always serves; named so the inspectors draw what it handles
    initial: 'serving',
    states: {
      serving: {
        on: {
          'receptionist.register': { actions: apply },
          'receptionist.deregister': { actions: apply },
          'receptionist.find': { actions: apply },
          'receptionist.membership': { actions: apply },
          'receptionist.ask-due': { actions: apply },
          'receptionist.listing': { actions: apply },
          'doyen.terminated': { actions: apply },
        },
      },
    },
  });
}
