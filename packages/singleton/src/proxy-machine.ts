import { type Membership, memberKey, nodeOfKey } from '@doyen/cluster';
import { type ActorRef, type ActorSystem, enqueueDecision, inSpan, type Message } from '@doyen/core';
import { setup } from 'xstate';
import { managerPath, proxyPath } from './manager-machine.js';
import type { Drained, Identify } from './messages.js';
import type { SingletonPlacement } from './placement.js';
import {
  bufferMessage,
  followHost,
  forward,
  handOverStarted,
  hostChanged,
  identify,
  identityFromHost,
  initialProxyContext,
  type ProxyContext,
  type ProxyEffect,
  type ProxyEvent,
  type ProxyPolicy,
  type ProxyStep,
  startedByTarget,
  takeIdentity,
} from './proxy-decisions.js';

export interface ProxySettings {
  readonly name: string;
  readonly role: string | undefined;
  /** Messages kept while no instance is known; beyond it the oldest go to dead letters. */
  readonly bufferSize: number;
  readonly identifyIntervalMs: number;
  readonly placement: SingletonPlacement;
}

export type { ProxyContext, ProxyEffect, ProxyEvent } from './proxy-decisions.js';

/**
 * The singleton proxy of one node (Akka's ClusterSingletonProxy): identifying → forwarding,
 * buffering in between. It follows the oldest; when the oldest changes or a hand-over starts it
 * sends a `drained` marker behind everything it forwarded, buffers, and identifies the new
 * instance, so each sender's messages arrive exactly once and in order across a graceful hand-over.
 * Decisions are the pure functions of proxy-decisions.ts; the action `run` executes their effects.
 */
export function createProxyMachine(system: ActorSystem, settings: ProxySettings) {
  const selfKey = memberKey(system.node);
  const policy: ProxyPolicy = {
    name: settings.name,
    bufferSize: settings.bufferSize,
    hostKeyOf: (m: Membership) => {
      const host = settings.placement.hostOf(m, settings.role);
      return host && memberKey(host);
    },
  };

  const execute = (effect: ProxyEffect): void => {
    switch (effect.kind) {
      case 'identify': {
        const ask: Identify = {
          type: 'singleton.identify',
          name: settings.name,
          replyTo: system.remoteRef(system.node, proxyPath(settings.name)),
        };
        system.remoteRef(nodeOfKey(effect.hostKey), managerPath(settings.name)).send(ask);
        return;
      }
      case 'forward':
        forwardTraced(settings.name, effect.to, effect.message);
        return;
      case 'drained': {
        const marker: Drained = { type: 'singleton.drained', proxy: selfKey };
        effect.to.send(marker);
        return;
      }
      case 'dead-letter':
        system.deadLetter(proxyPath(settings.name), effect.message, undefined, effect.reason);
        return;
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };

  const machineSetup = setup({
    types: { context: {} as ProxyContext, events: {} as ProxyEvent },
    actions: {
      run: (_, effect: ProxyEffect) => execute(effect),
    },
    delays: { identifyInterval: settings.identifyIntervalMs },
    guards: {
      identityFromHost: ({ context, event }) => identityFromHost(context, event),
      startedByTarget: ({ context, event }) => startedByTarget(context, event),
      hostChanged: ({ context, event }) => hostChanged(policy, context, event),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (step: (context: ProxyContext, event: ProxyEvent) => ProxyStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) =>
      enqueueDecision(enqueue, context, step(context, event)),
    );
  const follow = apply((c, e) => followHost(policy, c, e));

  return machineSetup.createMachine({
    id: 'singletonProxy',
    context: initialProxyContext,
    initial: 'identifying',
    states: {
      identifying: {
        entry: apply(identify),
        on: {
          'singleton.membership': {
            guard: 'hostChanged',
            target: 'identifying',
            reenter: true,
            actions: follow,
          },
          'singleton.identity': {
            guard: 'identityFromHost',
            target: 'forwarding',
            actions: apply(takeIdentity),
          },
          'singleton.hand-over-started': { actions: apply(handOverStarted) },
          '*': { actions: apply((c, e) => bufferMessage(policy, c, e)) },
        },
        after: { identifyInterval: { target: 'identifying', reenter: true } },
      },
      forwarding: {
        on: {
          'singleton.membership': { guard: 'hostChanged', target: 'identifying', actions: follow },
          'singleton.hand-over-started': {
            guard: 'startedByTarget',
            target: 'identifying',
            actions: apply(handOverStarted),
          },
          'singleton.identity': {},
          '*': { actions: apply(forward) },
        },
      },
    },
  });
}

/** One hop of the proxy: a producer span when OpenTelemetry traces, its context sent along. */
function forwardTraced(singleton: string, target: ActorRef, message: Message): void {
  inSpan('doyen.singleton.forward', 'producer', { 'doyen.singleton': singleton }, () =>
    target.send(message),
  ).span.end();
}
