import { nodeOfKey } from '@doyen/cluster';
import { type ActorSystem, enqueueDecision, type Message } from '@doyen/core';
import { setup } from 'xstate';
import {
  batchEffects,
  decide,
  type HostLeaseContext,
  type HostLeaseEvent,
  type HostLeaseOutput,
  type HostLeasePolicy,
  initialHostLeaseContext,
  type OwnLease,
  type Placement,
} from './host-lease-decisions.js';

export const HOST_LEASE_PATH = '/system/host-lease';
const WAKE = 'host-lease.wake';
const LEASE_CHANGES = 'doyen_singleton_lease_changes_total';
const LEASE_CHANGES_HELP =
  'Host leases acquired, lost (no majority renewed in time) and released, per scope (owner scopes as scope "owner"); requests for scopes beyond the voter cap refused; owner fences completed, voter tombstones, this node fenced, fences refused';

export interface HostLeaseDeps {
  readonly system: ActorSystem;
  readonly policy: HostLeasePolicy;
  /** What the placement knows changed (it tells its singletons). */
  readonly onPlacement: (placement: Placement) => void;
  /** This node's own owner lease's bounds changed (the owner leases read them by the clock). */
  readonly onOwnLease?: (own: OwnLease) => void;
}

/**
 * One node's host lease: voter for every member's bid and bidder for the scopes this node should
 * host (see host-lease-decisions.ts for the protocol and its timing assumptions). One state,
 * one decision for every event, one timer (`wake`) rescheduled after each; the action `run`
 * performs the effects: the messages to other members' host-lease actors, the log lines and the
 * mandates handed to the placement.
 */
export function createHostLeaseMachine(deps: HostLeaseDeps) {
  const { system, policy } = deps;
  const peer = (key: string) => system.remoteRef(nodeOfKey(key), HOST_LEASE_PATH);

  const execute = (effect: HostLeaseOutput): void => {
    switch (effect.kind) {
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
      case 'send':
        peer(effect.to).send(effect.message as Message);
        return;
      case 'count':
        system.metrics.inc(LEASE_CHANGES, LEASE_CHANGES_HELP, { scope: effect.scope, change: effect.change });
        return;
      case 'own-lease':
        deps.onOwnLease?.({ heldUntil: effect.heldUntil, readyAt: effect.readyAt });
        return;
      case 'placement':
        deps.onPlacement({
          mandates: effect.mandates,
          holders: effect.holders,
          blockers: effect.blockers,
          fenced: effect.fenced,
          ownerFenced: effect.ownerFenced,
        });
        return;
    }
  };

  const machineSetup = setup({
    types: { context: {} as HostLeaseContext, events: {} as HostLeaseEvent },
    actions: {
      run: (_, effect: HostLeaseOutput) => execute(effect),
    },
  });

  const step = machineSetup.enqueueActions(({ context, event, enqueue }) => {
    const result = decide(policy, context, event, system.clock.now());
    // one message per member for the step's requests, fences and answers
    enqueueDecision(enqueue, context, {
      context: result.context,
      effects: batchEffects(policy.selfKey, result.effects),
    });
    enqueue.cancel(WAKE);
    if (result.wakeInMs !== null) enqueue.raise({ type: WAKE }, { id: WAKE, delay: result.wakeInMs });
  });

  return machineSetup.createMachine({
    id: 'hostLease',
    context: initialHostLeaseContext,
    initial: 'running',
    states: {
      running: {
        on: {
          'host-lease.membership': { actions: step },
          'host-lease.scope': { actions: step },
          'host-lease.hosting': { actions: step },
          'host-lease.wake': { actions: step },
          'host-lease.request': { actions: step },
          'host-lease.reply': { actions: step },
          'host-lease.release': { actions: step },
          'host-lease.batch': { actions: step },
          'host-lease.answers': { actions: step },
          'host-lease.want-own': { actions: step },
          'host-lease.fence': { actions: step },
        },
      },
    },
  });
}
