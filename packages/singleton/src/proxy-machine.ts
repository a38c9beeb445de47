import { type Membership, memberKey, nodeOfKey } from '@doyen/cluster';
import { type ActorRef, type ActorSystem, inSpan, type Message } from '@doyen/core';
import { assign, setup } from 'xstate';
import { managerPath, proxyPath } from './manager-machine.js';
import type { Drained, HandOverStarted, Identify, Identity } from './messages.js';
import type { SingletonPlacement } from './placement.js';

export interface ProxySettings {
  readonly name: string;
  readonly role: string | undefined;
  /** Messages kept while no instance is known; beyond it the oldest go to dead letters. */
  readonly bufferSize: number;
  readonly identifyIntervalMs: number;
  readonly placement: SingletonPlacement;
}

export type ProxyEvent =
  | { readonly type: 'singleton.membership'; readonly membership: Membership }
  | HandOverStarted
  | Identity
  | Message;

export interface ProxyContext {
  readonly oldestKey: string | undefined;
  readonly target: ActorRef | undefined;
  readonly buffer: readonly Message[];
  readonly dropped: number;
}

const isControl = (type: string) =>
  type === 'singleton.membership' || type === 'singleton.hand-over-started' || type === 'singleton.identity';

/**
 * The singleton proxy of one node (Akka's ClusterSingletonProxy): identifying → forwarding,
 * buffering in between. It follows the oldest; when the oldest changes or a hand-over starts it
 * sends a `drained` marker behind everything it forwarded, buffers, and identifies the new
 * instance, so each sender's messages arrive exactly once and in order across a graceful hand-over.
 */
export function createProxyMachine(system: ActorSystem, settings: ProxySettings) {
  const selfKey = memberKey(system.node);
  const managerOf = (key: string) => system.remoteRef(nodeOfKey(key), managerPath(settings.name));
  const selfRef = () => system.remoteRef(system.node, proxyPath(settings.name));

  return setup({
    types: { context: {} as ProxyContext, events: {} as ProxyEvent },
    delays: { identifyInterval: settings.identifyIntervalMs },
    actions: {
      buffer: assign(({ context, event }) => {
        if (isControl(event.type)) return {};
        const buffer = [...context.buffer, event as Message];
        let dropped = context.dropped;
        while (buffer.length > settings.bufferSize) {
          const oldest = buffer.shift()!;
          dropped++;
          system.logger.warn(
            {
              event: 'singleton.proxy-buffer-full',
              singleton: settings.name,
              bufferSize: settings.bufferSize,
            },
            `singleton ${settings.name}: proxy buffer full, dropping the oldest message`,
          );
          system.deadLetter(proxyPath(settings.name), oldest, undefined, 'mailbox-overflow-dropped-oldest');
        }
        return { buffer, dropped };
      }),
      forward: ({ context, event }) => {
        if (!isControl(event.type)) forwardTraced(settings.name, context.target!, event as Message);
      },
      drainOld: ({ context, event }) => {
        // behind everything forwarded so far, on the same lane: "nothing more from me"
        const inbox =
          event.type === 'singleton.hand-over-started' ? (event as HandOverStarted).inbox : context.target;
        const marker: Drained = { type: 'singleton.drained', proxy: selfKey };
        inbox?.send(marker);
      },
      identify: ({ context }) => {
        if (!context.oldestKey) return;
        const identify: Identify = { type: 'singleton.identify', name: settings.name, replyTo: selfRef() };
        managerOf(context.oldestKey).send(identify);
      },
    },
    guards: {
      // an identity is believed only from the node we take for the oldest (it names its inbox)
      identityFromOldest: ({ context, event }) =>
        event.type === 'singleton.identity' &&
        memberKey((event as Identity).inbox.address.node) === context.oldestKey,
      // a hand-over is announced by the node we forward to
      startedByTarget: ({ context, event }) =>
        event.type === 'singleton.hand-over-started' &&
        context.target !== undefined &&
        memberKey((event as HandOverStarted).inbox.address.node) === memberKey(context.target.address.node),
      oldestChanged: ({ context, event }) => {
        if (event.type !== 'singleton.membership') return false;
        const o = settings.placement.hostOf((event as { membership: Membership }).membership, settings.role);
        return (o && memberKey(o)) !== context.oldestKey;
      },
    },
  }).createMachine({
    id: 'singletonProxy',
    context: { oldestKey: undefined, target: undefined, buffer: [], dropped: 0 },
    initial: 'identifying',
    states: {
      identifying: {
        entry: 'identify',
        on: {
          'singleton.membership': {
            guard: 'oldestChanged',
            target: 'identifying',
            reenter: true,
            actions: assign({
              oldestKey: ({ event }) => {
                const o = settings.placement.hostOf(
                  (event as { membership: Membership }).membership,
                  settings.role,
                );
                return o && memberKey(o);
              },
            }),
          },
          'singleton.identity': {
            guard: 'identityFromOldest',
            target: 'forwarding',
            actions: [
              assign({ target: ({ event }) => (event as Identity).inbox }),
              ({ context, event }) => {
                const inbox = (event as Identity).inbox;
                for (const m of context.buffer) forwardTraced(settings.name, inbox, m);
              },
              assign({ buffer: [] }),
            ],
          },
          'singleton.hand-over-started': { actions: 'drainOld' },
          '*': { actions: 'buffer' },
        },
        after: { identifyInterval: { target: 'identifying', reenter: true } },
      },
      forwarding: {
        on: {
          'singleton.membership': {
            guard: 'oldestChanged',
            target: 'identifying',
            actions: [
              'drainOld',
              assign({
                target: undefined,
                oldestKey: ({ event }) => {
                  const o = settings.placement.hostOf(
                    (event as { membership: Membership }).membership,
                    settings.role,
                  );
                  return o && memberKey(o);
                },
              }),
            ],
          },
          'singleton.hand-over-started': {
            guard: 'startedByTarget',
            target: 'identifying',
            actions: ['drainOld', assign({ target: undefined })],
          },
          'singleton.identity': {},
          '*': { actions: 'forward' },
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
