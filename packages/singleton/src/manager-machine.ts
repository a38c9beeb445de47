import { type Membership, memberKey, nodeOfKey } from '@doyen/cluster';
import type { ActorRef, ActorSystem, Message } from '@doyen/core';
import { assign, setup } from 'xstate';
import type { HandedOver, HandOverStarted, HandOverToMe, Identify, Identity } from './messages.js';
import { fateOf } from './oldest.js';
import type { SingletonPlacement } from './placement.js';

export interface ManagerEffects {
  /** Starts the instance (resuming from a handed-over snapshot when given); returns its inbox. */
  startInstance(snapshot: unknown): Promise<ActorRef> | ActorRef;
  /** Stops the instance; returns its persisted snapshot when hand-over snapshots are on. */
  stopInstance(reason: string): unknown;
  /** Messages still queued for the instance (hand-over waits until they are processed). */
  instanceBacklog(): number;
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

export type ManagerEvent =
  | { readonly type: 'singleton.membership'; readonly membership: Membership }
  | { readonly type: 'singleton.drain-progress'; readonly proxy: string }
  | HandOverToMe
  | HandedOver
  | Identify;

export interface ManagerContext {
  readonly membership: Membership | undefined;
  /** Key of the oldest as of the last membership, and of the one before it changed to us. */
  readonly oldestKey: string | undefined;
  readonly formerOldest: string | undefined;
  readonly retries: number;
  readonly snapshot: unknown;
  readonly inbox: ActorRef | undefined;
  readonly waitingProxies: readonly ActorRef[];
  readonly handOverTo: ActorRef | undefined;
  readonly pendingDrains: readonly string[];
}

const keyOfRef = (ref: ActorRef) => memberKey(ref.address.node);

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
 */
export function createManagerMachine(
  system: ActorSystem,
  settings: ManagerSettings,
  effects: ManagerEffects,
) {
  const selfKey = memberKey(system.node);
  const log = (event: string, fields: Record<string, unknown>, msg: string) =>
    system.logger.info({ event, singleton: settings.name, ...fields }, msg);
  const oldestKeyOf = (m: Membership) => {
    const o = settings.placement.hostOf(m, settings.role);
    return o && memberKey(o);
  };
  const exclusive = settings.placement.exclusive;
  /** Exclusive placement: the former host is gone or cut off, so it cannot hand over (and stopped acting). */
  const formerOutOfReach = (c: ManagerContext) =>
    c.formerOldest === undefined ||
    fateOf(c.formerOldest, c.membership!) !== 'alive' ||
    c.membership!.unreachable.includes(c.formerOldest);
  const selfStatus = (m: Membership | undefined) => m?.members.find((x) => memberKey(x) === selfKey)?.status;
  const managerAt = (key: string) => system.remoteRef(nodeOfKey(key), managerPath(settings.name));
  const isOldest = (c: ManagerContext) => c.oldestKey === selfKey;
  const selfGone = (c: ManagerContext) => {
    const s = selfStatus(c.membership);
    return s === undefined || s === 'down' || s === 'removed';
  };

  return setup({
    types: { context: {} as ManagerContext, events: {} as ManagerEvent },
    delays: {
      retry: settings.handOverRetryIntervalMs,
      margin: () =>
        typeof settings.downRemovalMarginMs === 'function'
          ? settings.downRemovalMarginMs()
          : settings.downRemovalMarginMs,
      drainTimeout: settings.drainTimeoutMs,
      backlogPoll: 5,
    },
    guards: {
      selfGone: ({ context }) => selfGone(context),
      selfExitingOrGone: ({ context }) => selfGone(context) || selfStatus(context.membership) === 'exiting',
      isOldest: ({ context }) => isOldest(context),
      notOldest: ({ context }) => !isOldest(context),
      formerAlive: ({ context }) =>
        context.formerOldest !== undefined && fateOf(context.formerOldest, context.membership!) === 'alive',
      formerDowned: ({ context }) =>
        context.formerOldest !== undefined && fateOf(context.formerOldest, context.membership!) === 'downed',
      drained: ({ context }) => context.pendingDrains.length === 0,
      // only the node we take for the new oldest may ask for the instance
      askedByNewOldest: ({ context, event }) =>
        event.type === 'singleton.hand-over-to-me' &&
        context.oldestKey !== undefined &&
        context.oldestKey === keyOfRef(event.replyTo),
      // only the former oldest we asked may say it stopped its instance
      handedOverByFormer: ({ context, event }) =>
        event.type === 'singleton.handed-over' && event.from === context.formerOldest,
    },
    actions: {
      takeMembership: assign(({ context, event }) => {
        if (event.type !== 'singleton.membership') return {};
        const newOldest = oldestKeyOf(event.membership);
        const changedToUs = newOldest === selfKey && context.oldestKey !== selfKey;
        return {
          membership: event.membership,
          oldestKey: newOldest,
          formerOldest: changedToUs ? context.oldestKey : context.formerOldest,
        };
      }),
      finishHandOver: assign(({ context }) => {
        const snapshot = effects.stopInstance('handed over');
        const done: HandedOver = {
          type: 'singleton.handed-over',
          name: settings.name,
          snapshot: snapshot ?? null,
          from: selfKey,
        };
        context.handOverTo?.send(done as Message);
        log(
          'singleton.handed-over',
          { to: context.handOverTo?.id },
          `singleton ${settings.name} handed over`,
        );
        return { inbox: undefined, handOverTo: undefined, pendingDrains: [] };
      }),
      answerNotRunning: ({ event }) => {
        if (event.type === 'singleton.hand-over-to-me') {
          const reply: HandedOver = {
            type: 'singleton.handed-over',
            name: settings.name,
            snapshot: null,
            from: selfKey,
          };
          event.replyTo.send(reply);
        }
      },
    },
  }).createMachine({
    id: 'singletonManager',
    context: {
      membership: undefined,
      oldestKey: undefined,
      formerOldest: undefined,
      retries: 0,
      snapshot: null,
      inbox: undefined,
      waitingProxies: [],
      handOverTo: undefined,
      pendingDrains: [],
    },
    initial: 'start',
    on: {
      'singleton.membership': { actions: 'takeMembership' },
    },
    states: {
      start: {
        on: {
          'singleton.membership': { target: 'younger', actions: 'takeMembership' },
        },
      },
      younger: {
        always: [
          { guard: 'selfGone', target: 'end' },
          {
            guard: ({ context }) =>
              isOldest(context) &&
              (context.formerOldest === undefined || (exclusive && formerOutOfReach(context))),
            target: 'oldest',
          },
          {
            guard: ({ context }) =>
              isOldest(context) && fateOf(context.formerOldest!, context.membership!) === 'alive',
            target: 'becomingOldest',
          },
          // gone without a hand-over (downed, or removed before it confirmed): wait the margin
          { guard: 'isOldest', target: 'takingOver' },
        ],
        on: {
          'singleton.hand-over-to-me': { actions: 'answerNotRunning' },
        },
      },
      becomingOldest: {
        entry: [
          assign({ retries: 0 }),
          ({ context }) => {
            log(
              'singleton.hand-over-requested',
              { from: context.formerOldest },
              'asking the former oldest to hand over',
            );
            const ask: HandOverToMe = {
              type: 'singleton.hand-over-to-me',
              name: settings.name,
              replyTo: managerAt(selfKey),
            };
            managerAt(context.formerOldest!).send(ask);
          },
        ],
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'notOldest', target: 'younger' },
          { guard: ({ context }) => !context.formerOldest, target: 'oldest' },
          { guard: ({ context }) => exclusive && formerOutOfReach(context), target: 'oldest' },
          {
            guard: ({ context }) => fateOf(context.formerOldest!, context.membership!) !== 'alive',
            target: 'takingOver',
          },
        ],
        on: {
          'singleton.handed-over': {
            guard: 'handedOverByFormer',
            target: 'oldest',
            actions: assign({ snapshot: ({ event }) => (event as HandedOver).snapshot ?? null }),
          },
          'singleton.hand-over-to-me': { actions: 'answerNotRunning' },
        },
        after: {
          retry: {
            target: 'becomingOldest',
            reenter: false,
            actions: [
              assign({ retries: ({ context }) => context.retries + 1 }),
              ({ context }) => {
                if (context.retries === settings.maxHandOverRetries) {
                  system.logger.warn(
                    {
                      event: 'singleton.hand-over-stuck',
                      singleton: settings.name,
                      former: context.formerOldest,
                    },
                    `no hand-over from ${context.formerOldest} after ${context.retries} attempts; waiting until it is removed`,
                  );
                }
                const ask: HandOverToMe = {
                  type: 'singleton.hand-over-to-me',
                  name: settings.name,
                  replyTo: managerAt(selfKey),
                };
                managerAt(context.formerOldest!).send(ask);
              },
            ],
          },
        },
      },
      takingOver: {
        entry: ({ context }) =>
          log(
            'singleton.taking-over',
            { former: context.formerOldest, marginMs: settings.downRemovalMarginMs },
            'former oldest downed: waiting the down-removal margin',
          ),
        always: [
          { guard: 'selfGone', target: 'end' },
          { guard: 'notOldest', target: 'younger' },
        ],
        after: { margin: 'oldest' },
      },
      oldest: {
        entry: assign(({ context }) => {
          const started = effects.startInstance(context.snapshot);
          const inbox = started as ActorRef;
          log('singleton.started', {}, `singleton ${settings.name} started`);
          const identity: Identity = { type: 'singleton.identity', name: settings.name, inbox };
          for (const p of context.waitingProxies) p.send(identity);
          return { inbox, waitingProxies: [], snapshot: null, formerOldest: undefined };
        }),
        // exiting: the coordinator is about to remove us; stop rather than outlive our membership
        always: [
          { guard: 'selfExitingOrGone', target: 'end' },
          // an elected host that lost its majority or lease stops at once: another may start soon
          {
            guard: ({ context }) => exclusive && !isOldest(context),
            target: 'younger',
            actions: assign(() => {
              effects.stopInstance('lost the coordinator mandate');
              return { inbox: undefined };
            }),
          },
        ],
        on: {
          'singleton.identify': {
            actions: ({ context, event }) => {
              const identity: Identity = {
                type: 'singleton.identity',
                name: settings.name,
                inbox: context.inbox!,
              };
              (event as Identify).replyTo.send(identity);
            },
          },
          'singleton.hand-over-to-me': {
            guard: 'askedByNewOldest',
            target: 'handingOver',
            actions: assign({ handOverTo: ({ event }) => (event as HandOverToMe).replyTo }),
          },
        },
      },
      handingOver: {
        always: [{ guard: 'selfExitingOrGone', target: 'end' }],
        entry: [
          assign(({ context }) => {
            // every live member's proxy must drain first
            const proxies = (context.membership?.members ?? []).map(memberKey);
            return { pendingDrains: proxies };
          }),
          ({ context }) => {
            log('singleton.handing-over', { to: context.handOverTo?.id }, 'handing over: draining proxies');
            const started: HandOverStarted = {
              type: 'singleton.hand-over-started',
              name: settings.name,
              inbox: context.inbox!,
            };
            for (const key of context.pendingDrains) {
              system.remoteRef(nodeOfKey(key), proxyPath(settings.name)).send(started);
            }
          },
        ],
        on: {
          'singleton.drain-progress': {
            actions: assign({
              pendingDrains: ({ context, event }) =>
                context.pendingDrains.filter((k) => k !== (event as { proxy: string }).proxy),
            }),
          },
          'singleton.identify': {},
          'singleton.hand-over-to-me': {
            guard: 'askedByNewOldest',
            actions: assign({ handOverTo: ({ event }) => (event as HandOverToMe).replyTo }),
          },
        },
        initial: 'draining',
        states: {
          draining: {
            always: { guard: 'drained', target: 'finishing' },
            after: { drainTimeout: 'finishing' },
          },
          // forwarded messages are in the instance's mailbox: let it work through them
          finishing: {
            always: {
              guard: () => effects.instanceBacklog() === 0,
              target: '#singletonManager.younger',
              actions: 'finishHandOver',
            },
            after: { drainTimeout: { target: '#singletonManager.younger', actions: 'finishHandOver' } },
          },
        },
      },
      end: {
        entry: ({ context }) => {
          const snapshot = context.inbox ? effects.stopInstance('node left the cluster') : undefined;
          // a hand-over cut short by our own exit still completes: the instance is stopped now
          if (context.handOverTo) {
            const done: HandedOver = {
              type: 'singleton.handed-over',
              name: settings.name,
              snapshot: snapshot ?? null,
              from: selfKey,
            };
            context.handOverTo.send(done as Message);
          }
        },
        type: 'final',
      },
    },
  });
}
