import { memberKey, nodeOfKey } from '@doyen/cluster';
import { type ActorRef, type ActorSystem, enqueueDecision, type Message } from '@doyen/core';
import { setup } from 'xstate';
import {
  acceptHandOverRequest,
  answerNotRunning,
  askAgain,
  askBlocker,
  askedByNewOldest,
  askFirst,
  awaitMandate,
  awaitMargin,
  backlogEmpty,
  blockedByFormerHost,
  checkBacklog,
  drained,
  drainProgress,
  end,
  finishHandOver,
  formerCanHandOver,
  formerGoneWithoutHandOver,
  handedOverByFormer,
  hasMandate,
  identify,
  initialManagerContext,
  isOldest,
  lostMandate,
  type ManagerContext,
  type ManagerEffect,
  type ManagerEvent,
  type ManagerPolicy,
  type ManagerStep,
  nobodyToAsk,
  selfExitingOrGone,
  selfGone,
  start,
  startDraining,
  startsAtOnce,
  stopForMandate,
  takeHandOver,
  takeMembership,
} from './manager-decisions.js';
import type { HandedOver, HandOverStarted, HandOverToMe, Identity } from './messages.js';
import type { SingletonPlacement } from './placement.js';

export interface ManagerEffects {
  /** Starts the instance (resuming from a handed-over snapshot when given) behind its inbox. */
  startInstance(snapshot: unknown): void;
  /** Stops the instance; returns its persisted snapshot when hand-over snapshots are on. */
  stopInstance(reason: string): unknown;
  /** Messages still queued for the instance (hand-over waits until they are processed). */
  instanceBacklog(): number;
  /** The instance's inbox (one fixed path on this node): proxies forward there while it runs. */
  readonly inbox: ActorRef;
}

export interface ManagerSettings {
  readonly name: string;
  readonly role: string | undefined;
  readonly handOverRetryIntervalMs: number;
  readonly maxHandOverRetries: number;
  /** Read when needed: the default grows with the cluster (it is stable-after). */
  readonly downRemovalMarginMs: number | (() => number);
  readonly drainTimeoutMs: number;
  readonly placement: SingletonPlacement;
}

export type { ManagerContext, ManagerEffect, ManagerEvent } from './manager-decisions.js';

export function managerPath(name: string): string {
  return `/system/singleton-${name}`;
}

export function proxyPath(name: string): string {
  return `/system/singleton-proxy-${name}`;
}

/**
 * One node's singleton manager (Akka's ClusterSingletonManager, as an explicit machine):
 * start → younger ⇄ becomingOldest / takingOver → oldest → handingOver → younger, end.
 * - A graceful leave is an acknowledged hand-over: the new oldest asks (hand-over-to-me, with
 *   bounded retries), the former oldest drains the proxies, stops its instance (optionally
 *   passing its snapshot) and confirms (handed-over); only then the new one starts.
 * - After a crash or a partition the new oldest starts only once the former oldest is out of
 *   the membership and the down-removal margin has passed, so that under the safe downing
 *   strategies the downed side has stopped its instance first.
 * Decisions are the pure functions of manager-decisions.ts; the action `run` executes their
 * effects, and the instance's backlog comes back as an event (`singleton.backlog`).
 */
export function createManagerMachine(
  system: ActorSystem,
  settings: ManagerSettings,
  effects: ManagerEffects,
) {
  const selfKey = memberKey(system.node);
  const policy: ManagerPolicy = {
    name: settings.name,
    selfKey,
    inbox: effects.inbox,
    hostKeyOf: (m) => {
      const host = settings.placement.hostOf(m, settings.role);
      return host && memberKey(host);
    },
    exclusive: settings.placement.exclusive,
    leased: settings.placement.leased === true,
    maxHandOverRetries: settings.maxHandOverRetries,
  };
  const marginMs = () =>
    typeof settings.downRemovalMarginMs === 'function'
      ? settings.downRemovalMarginMs()
      : settings.downRemovalMarginMs;
  const managerAt = (key: string) => system.remoteRef(nodeOfKey(key), managerPath(settings.name));

  const execute = (effect: ManagerEffect, self: { send(event: ManagerEvent): void }): void => {
    switch (effect.kind) {
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
      case 'ask-hand-over': {
        const ask: HandOverToMe = {
          type: 'singleton.hand-over-to-me',
          name: settings.name,
          replyTo: managerAt(selfKey),
        };
        managerAt(effect.formerKey).send(ask);
        return;
      }
      case 'start-instance':
        // Spawning from an action makes xstate's development build warn that "custom actions
        // should not call assign()" when the instance's machine has a context function: a false
        // positive of its module-global flag (statelyai/xstate#5343); production builds are silent.
        effects.startInstance(effect.snapshot);
        return;
      case 'stop-instance': {
        const snapshot = effects.stopInstance(effect.reason);
        effect.confirmTo?.send(handedOver(snapshot) as Message);
        return;
      }
      case 'answer-not-running':
        effect.to.send(handedOver(undefined) as Message);
        return;
      case 'identity': {
        const identity: Identity = { type: 'singleton.identity', name: settings.name, inbox: effect.inbox };
        effect.to.send(identity);
        return;
      }
      case 'hand-over-started': {
        const started: HandOverStarted = {
          type: 'singleton.hand-over-started',
          name: settings.name,
          inbox: effect.inbox,
        };
        for (const key of effect.proxies)
          system.remoteRef(nodeOfKey(key), proxyPath(settings.name)).send(started);
        return;
      }
      case 'check-backlog':
        self.send({ type: 'singleton.backlog', size: effects.instanceBacklog() });
        return;
    }
  };
  const handedOver = (snapshot: unknown): HandedOver => ({
    type: 'singleton.handed-over',
    name: settings.name,
    snapshot: snapshot ?? null,
    from: selfKey,
  });

  const machineSetup = setup({
    types: { context: {} as ManagerContext, events: {} as ManagerEvent },
    actions: {
      run: ({ self }, effect: ManagerEffect) => execute(effect, self as { send(event: ManagerEvent): void }),
    },
    delays: {
      retry: settings.handOverRetryIntervalMs,
      margin: () => marginMs(),
      drainTimeout: settings.drainTimeoutMs,
      backlogPoll: 5,
    },
    guards: {
      selfGone: ({ context }) => selfGone(policy, context),
      selfExitingOrGone: ({ context }) => selfExitingOrGone(policy, context),
      isOldest: ({ context }) => isOldest(policy, context),
      notOldest: ({ context }) => !isOldest(policy, context),
      startsAtOnce: ({ context }) => startsAtOnce(policy, context),
      formerCanHandOver: ({ context }) => formerCanHandOver(policy, context),
      nobodyToAsk: ({ context }) => nobodyToAsk(policy, context),
      formerGoneWithoutHandOver: ({ context }) => formerGoneWithoutHandOver(context),
      lostMandate: ({ context }) => lostMandate(policy, context),
      hasMandate: ({ context }) => hasMandate(context),
      blockedByFormerHost: ({ context }) => blockedByFormerHost(policy, context),
      drained: ({ context }) => drained(context),
      backlogEmpty: ({ event }) => backlogEmpty(event),
      askedByNewOldest: ({ context, event }) => askedByNewOldest(context, event),
      handedOverByFormer: ({ context, event }) => handedOverByFormer(context, event),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (step: (context: ManagerContext, event: ManagerEvent) => ManagerStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) =>
      enqueueDecision(enqueue, context, step(context, event)),
    );
  const take = apply((c, e) => takeMembership(policy, c, e));

  return machineSetup.createMachine({
    id: 'singletonManager',
    context: initialManagerContext,
    initial: 'start',
    on: {
      'singleton.membership': { actions: take },
    },
    states: {
      start: {
        on: {
          'singleton.membership': { target: 'younger', actions: take },
        },
      },
      younger: {
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'startsAtOnce', target: 'starting' },
          { guard: 'formerCanHandOver', target: 'becomingOldest' },
          // gone without a hand-over (downed, or removed before it confirmed): wait the margin
          { guard: 'isOldest', target: 'takingOver' },
        ],
        on: {
          'singleton.hand-over-to-me': { actions: apply(answerNotRunning) },
        },
      },
      becomingOldest: {
        entry: apply((c) => askFirst(policy, c)),
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'notOldest', target: 'younger' },
          { guard: 'nobodyToAsk', target: 'starting' },
          { guard: 'formerGoneWithoutHandOver', target: 'takingOver' },
        ],
        on: {
          'singleton.handed-over': {
            guard: 'handedOverByFormer',
            target: 'starting',
            actions: apply(takeHandOver),
          },
          'singleton.hand-over-to-me': { actions: apply(answerNotRunning) },
        },
        // asked again every retry interval (a self-targeted `after` on the state itself would fire once)
        initial: 'asking',
        states: {
          asking: {
            after: {
              retry: { target: 'asking', reenter: true, actions: apply((c) => askAgain(policy, c)) },
            },
          },
        },
      },
      takingOver: {
        entry: apply((c) => awaitMargin(policy, c, marginMs())),
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'notOldest', target: 'younger' },
        ],
        after: { margin: 'starting' },
      },
      // the host waits for its placement's mandate (a leased placement: the lease) before it starts
      starting: {
        entry: apply((c) => awaitMandate(policy, c)),
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'notOldest', target: 'younger' },
          { guard: 'hasMandate', target: 'oldest' },
          { guard: 'blockedByFormerHost', target: 'becomingOldest', actions: apply(askBlocker) },
        ],
        on: {
          // nothing runs here yet: a host asking for a hand-over hears so at once
          'singleton.hand-over-to-me': { actions: apply(answerNotRunning) },
        },
      },
      oldest: {
        entry: apply((c) => start(policy, c)),
        always: [
          { guard: 'selfExitingOrGone', target: 'end' },
          { guard: 'lostMandate', target: 'younger', actions: apply((c) => stopForMandate(policy, c)) },
        ],
        on: {
          'singleton.identify': { actions: apply(identify) },
          'singleton.hand-over-to-me': {
            guard: 'askedByNewOldest',
            target: 'handingOver',
            actions: apply(acceptHandOverRequest),
          },
        },
      },
      handingOver: {
        always: [
          { guard: 'selfExitingOrGone', target: 'end' },
          { guard: 'lostMandate', target: 'younger', actions: apply((c) => stopForMandate(policy, c)) },
        ],
        entry: apply((c) => startDraining(policy, c)),
        on: {
          'singleton.drain-progress': { actions: apply(drainProgress) },
          'singleton.identify': {},
          'singleton.hand-over-to-me': { guard: 'askedByNewOldest', actions: apply(acceptHandOverRequest) },
        },
        initial: 'draining',
        states: {
          draining: {
            always: { guard: 'drained', target: 'finishing' },
            after: { drainTimeout: 'finishing' },
          },
          // forwarded messages are in the instance's mailbox: let it work through them (measured
          // every backlogPoll, within one drainTimeout)
          finishing: {
            initial: 'measuring',
            states: {
              measuring: {
                entry: apply(checkBacklog),
                on: {
                  'singleton.backlog': {
                    guard: 'backlogEmpty',
                    target: '#singletonManager.younger',
                    actions: apply((c) => finishHandOver(policy, c)),
                  },
                },
                after: { backlogPoll: { target: 'measuring', reenter: true } },
              },
            },
            after: {
              drainTimeout: {
                target: '#singletonManager.younger',
                actions: apply((c) => finishHandOver(policy, c)),
              },
            },
          },
        },
      },
      end: {
        entry: apply(end),
        type: 'final',
      },
    },
  });
}
