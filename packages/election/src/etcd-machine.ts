import { type DecisionEnqueue, enqueueDecision } from '@doyen/core';
import { enqueueActions, fromCallback, fromPromise, setup } from 'xstate';
import { ElectionConfigError, type ElectionDeps } from './election.js';
import {
  confirmed,
  deadlineInMs,
  type EtcdContext,
  type EtcdEffect,
  type EtcdEvent,
  type EtcdPolicy,
  type EtcdStep,
  forgetWin,
  heldByOther,
  initialEtcdContext,
  type LossReason,
  learnWatch,
  leaves,
  logCampaign,
  logLost,
  logWon,
  member,
  newer,
  newerNotMine,
  news,
  renewInMs,
  reportFollowing,
  reportLeading,
  reportLooking,
  takeCampaignAnswer,
  takePeers,
  takeRenewal,
  unanswered,
  won,
} from './etcd-decisions.js';
import type { CampaignAnswer, KeepAliveAnswer, StoreChanged } from './etcd-messages.js';

export type { EtcdContext, EtcdEffect, EtcdEvent } from './etcd-decisions.js';

type EtcdDelay = 'retry' | 'recheck' | 'renew' | 'deadline';

/** Ids of the store calls the machine invokes (their answers arrive as `xstate.done.actor.<id>`). */
export const ETCD_CALLS = {
  campaign: 'campaign',
  recheck: 'recheck',
  keepAlive: 'keep-alive',
  resign: 'resign',
} as const;

/**
 * Election through an external linearizable store (the seed's ZooKeeper/etcd pattern): every node
 * compare-and-swaps the leader key; the winner leads while the store confirms it, the others watch
 * the key and campaign again once it is deleted or expires. No messages between the nodes: the
 * store is both the ballot box and the failure detector, so the leader under any network partition
 * is whoever holds the key, and a node cut off from the store stops acting before its key can
 * expire (it counts only from the send time of its last acknowledged renewal).
 *
 * campaigning -> deciding -> leading | following | campaigning; backoff after a failed call.
 * leading.waiting <-> leading.renewing: keep-alive every ttl/3; a refused or failed keep-alive, a
 * watch saying the key changed, or no acknowledged renewal for ttl - ttl/3 ends leadership at once.
 * Decisions are the pure functions of etcd-decisions.ts, reading time from the store answers (each
 * stamped with this node's clock when sent and answered); the action `run` executes their
 * effects, the invoked store calls and the delays (measured on the actor clock) are the rest.
 */
export function createEtcdMachine(deps: ElectionDeps) {
  const store = deps.options.leaderStore;
  if (!store) throw new ElectionConfigError('the etcd election needs a leaderStore');
  const self = deps.self.address;
  const clock = deps.system.clock;
  const logger = deps.system.logger;
  const ttlMs = store.ttlMs;
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new ElectionConfigError(`leaderStore.ttlMs must be a positive number of ms, got ${ttlMs}`);
  }
  const renewMs = ttlMs / 3;
  const policy: EtcdPolicy = {
    self,
    renewMs,
    // Act no longer than this after the send time of the last acknowledged renewal: one renewal
    // period short of the TTL the store counts from (later) receipt.
    actForMs: ttlMs - renewMs,
  };
  // A follower re-reads the key now and then in case a watch notification got lost.
  const recheckMs = 2 * ttlMs;

  const execute = (effect: EtcdEffect): void => {
    switch (effect.kind) {
      case 'report':
        deps.report(effect.view);
        return;
      case 'log':
        logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };
  /** A compare-and-swap, stamped with this node's clock when sent and answered. */
  const campaign = fromPromise<CampaignAnswer>(() => {
    const sentAt = clock.now();
    return store.campaign(self).then((r) => ({ ...r, sentAt, answeredAt: clock.now() }));
  });

  /** The answer a store call's done event carries (its `output`). */
  const answerOf = <A>(event: unknown) => (event as { readonly output: A }).output;
  /** Applies a decision on a store call's answer: its context assigned, its effects to `run`. */
  const onAnswer = <A>(decide: (context: EtcdContext, answer: A) => EtcdStep) =>
    enqueueActions<EtcdContext, EtcdEvent, undefined, EtcdEvent, never, never, never, EtcdDelay>(
      ({ context, event, enqueue }) =>
        enqueueDecision(
          enqueue as unknown as DecisionEnqueue<EtcdContext, EtcdEffect>,
          context,
          decide(context, answerOf<A>(event)),
        ),
    );

  const machineSetup = setup({
    types: { context: {} as EtcdContext, events: {} as EtcdEvent },
    actors: {
      watch: fromCallback<StoreChanged>(({ sendBack }) =>
        store.watch((holder, revision) => sendBack({ type: 'etcd.watch', holder, revision })),
      ),
      campaign,
      keepAlive: fromPromise<KeepAliveAnswer>(() => {
        const sentAt = clock.now();
        return store.keepAlive(self).then((ok) => ({ confirmed: ok, sentAt, answeredAt: clock.now() }));
      }),
      resign: fromPromise<void>(() => store.resign(self)),
    },
    delays: {
      retry: renewMs,
      recheck: recheckMs,
      renew: ({ context }) => renewInMs(policy, context, clock.now()),
      deadline: ({ context }) => deadlineInMs(context, clock.now()),
    },
    guards: {
      newer: ({ context, event }) => newer(context, event),
      newerNotMine: ({ context, event }) => newerNotMine(policy, context, event),
      member: ({ context }) => member(policy, context),
      leaves: ({ event }) => leaves(policy, event),
      won: ({ context }) => won(policy, context),
      heldByOther: ({ context }) => heldByOther(policy, context),
      unanswered: ({ event }) => unanswered(answerOf(event)),
      news: ({ context, event }) => news(context, answerOf(event)),
      confirmed: ({ event }) => confirmed(answerOf(event)),
    },
    actions: {
      run: (_, effect: EtcdEffect) => execute(effect),
      // named, as the guards are, so a test can swap one decision for a mutant (`provide`)
      takeCampaignAnswer: onAnswer((c, a: CampaignAnswer) => takeCampaignAnswer(policy, c, a)),
      takeRenewal: onAnswer((c, a: KeepAliveAnswer) => takeRenewal(policy, c, a)),
      // named too: an inline action typed for the machine's events does not fit a done event
      keepaliveNotConfirmed: onAnswer((c) => logLost(c, 'keepalive-not-confirmed')),
      keepaliveFailed: onAnswer((c) => logLost(c, 'keepalive-failed')),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (decide: (context: EtcdContext, event: EtcdEvent) => EtcdStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) =>
      enqueueDecision(
        enqueue as unknown as DecisionEnqueue<EtcdContext, EtcdEffect>,
        context,
        decide(context, event),
      ),
    );
  const setPeers = apply(takePeers);
  const learn = apply(learnWatch);
  const campaignLogged = apply(logCampaign);
  const lost = (reason: LossReason) => apply((c) => logLost(c, reason));

  return machineSetup.createMachine({
    id: 'etcd',
    context: initialEtcdContext(deps.options.peers),
    // One watch for the machine's whole life: it reports the current holder first, then changes.
    invoke: { src: 'watch' },
    on: {
      'etcd.watch': { guard: 'newer', actions: learn },
      'election.peers': [{ guard: 'leaves', target: '.idle', actions: setPeers }, { actions: setPeers }],
    },
    initial: 'start',
    states: {
      start: {
        always: [{ guard: 'member', target: 'campaigning', actions: campaignLogged }, { target: 'idle' }],
      },
      /** Not among the peers: take no part. */
      idle: {
        entry: apply(reportLooking),
        always: { guard: 'member', target: 'campaigning', actions: campaignLogged },
      },
      campaigning: {
        entry: apply(reportLooking),
        invoke: {
          id: ETCD_CALLS.campaign,
          src: 'campaign',
          onDone: [
            { guard: 'unanswered', target: 'backoff' },
            { target: 'deciding', actions: 'takeCampaignAnswer' },
          ],
          onError: 'backoff',
        },
      },
      /** After a store answer or a watch change: lead, follow, or try again. */
      deciding: {
        always: [
          { guard: 'won', target: 'leading' },
          { guard: 'heldByOther', target: 'following' },
          // absent, or held under our address by an earlier attempt or incarnation: (re)take it
          { target: 'campaigning', actions: campaignLogged },
        ],
        exit: apply(forgetWin),
      },
      backoff: {
        on: { 'etcd.watch': { guard: 'newer', target: 'deciding', actions: learn } },
        after: { retry: 'campaigning' },
      },
      following: {
        entry: apply(reportFollowing),
        on: { 'etcd.watch': { guard: 'newer', target: 'deciding', actions: learn } },
        initial: 'watching',
        states: {
          watching: { after: { recheck: 'rechecking' } },
          // Compare-and-swap again without changing the view: a lost watch notification costs at most this.
          rechecking: {
            invoke: {
              id: ETCD_CALLS.recheck,
              src: 'campaign',
              onDone: [
                {
                  // News: the key is gone (we just won it) or changed hands.
                  guard: 'news',
                  target: '#etcd.deciding',
                  actions: 'takeCampaignAnswer',
                },
                { target: 'watching' },
              ],
              onError: 'watching',
            },
          },
        },
      },
      leading: {
        entry: [apply((c) => reportLeading(policy, c)), apply(logWon)],
        on: {
          'etcd.watch': {
            guard: 'newerNotMine',
            target: 'campaigning',
            actions: [learn, lost('key-changed')],
          },
          'election.peers': { guard: 'leaves', target: 'resigning', actions: [setPeers, lost('left-peers')] },
        },
        initial: 'waiting',
        states: {
          // Both children arm `deadline` on entry, so every acknowledged renewal pushes it out.
          waiting: {
            after: {
              renew: 'renewing',
              deadline: { target: '#etcd.campaigning', actions: lost('no-renewal') },
            },
          },
          renewing: {
            after: {
              deadline: { target: '#etcd.campaigning', actions: lost('no-renewal') },
            },
            invoke: {
              id: ETCD_CALLS.keepAlive,
              src: 'keepAlive',
              onDone: [
                {
                  guard: 'confirmed',
                  target: 'waiting',
                  actions: 'takeRenewal',
                },
                { target: '#etcd.campaigning', actions: 'keepaliveNotConfirmed' },
              ],
              onError: { target: '#etcd.campaigning', actions: 'keepaliveFailed' },
            },
          },
        },
      },
      /** Left the peers while leading: give the key up for the others. */
      resigning: {
        entry: apply(reportLooking),
        invoke: { id: ETCD_CALLS.resign, src: 'resign', onDone: 'idle', onError: 'idle' },
      },
    },
  });
}
