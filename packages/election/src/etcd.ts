import { assign, fromCallback, fromPromise, setup } from 'xstate';
import {
  type ElectionAlgorithmDefinition,
  ElectionConfigError,
  type ElectionDeps,
  type ElectionPeer,
  type PeersChanged,
} from './election.js';

/** From the root-invoked watch; never from the network (unregistered types are refused there). */
interface StoreChanged {
  readonly type: 'etcd.watch';
  readonly holder: string | undefined;
  readonly revision: number;
}

type EtcdEvent = StoreChanged | PeersChanged;

interface EtcdContext {
  readonly peers: readonly ElectionPeer[];
  /** The key's holder as of `revision`, the newest store revision seen (campaign answers and watch). */
  readonly holder: string | undefined;
  readonly revision: number;
  /** Clock time the pending campaign / keep-alive was sent. */
  readonly sentAt: number;
  /** Leading: act until then (send time of the last acknowledged campaign/keep-alive + ttl - renewal). */
  readonly validUntil: number;
  /** The last campaign created (or took over) the key and nothing newer contradicts it. */
  readonly won: boolean;
}

interface CampaignResult {
  readonly holder: string | undefined;
  readonly revision: number;
}

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
  // Act no longer than this after the send time of the last acknowledged renewal: one renewal
  // period short of the TTL the store counts from (later) receipt.
  const actForMs = ttlMs - renewMs;
  // A follower re-reads the key now and then in case a watch notification got lost.
  const recheckMs = 2 * ttlMs;
  const isMember = (peers: readonly ElectionPeer[]) => peers.some((p) => p.address === self);

  const learn = (c: EtcdContext, holder: string | undefined, revision: number) =>
    revision > c.revision ? { holder, revision } : {};

  /** What a campaign answer tells: a win (acting from its send time) or just the holder. */
  const outcome = (c: EtcdContext, { holder, revision }: CampaignResult) => {
    // A watch may already have seen our fresh key deleted: then it is not a win.
    const won = holder === self && revision >= c.revision;
    return won
      ? { holder, revision, won, validUntil: c.sentAt + actForMs }
      : { ...learn(c, holder, revision), won };
  };

  return setup({
    types: { context: {} as EtcdContext, events: {} as EtcdEvent },
    actors: {
      watch: fromCallback<StoreChanged>(({ sendBack }) =>
        store.watch((holder, revision) => sendBack({ type: 'etcd.watch', holder, revision })),
      ),
      campaign: fromPromise<CampaignResult>(() => store.campaign(self)),
      keepAlive: fromPromise<boolean>(() => store.keepAlive(self)),
      resign: fromPromise<void>(() => store.resign(self)),
    },
    delays: {
      retry: renewMs,
      recheck: recheckMs,
      renew: ({ context }) => Math.max(0, context.sentAt + renewMs - clock.now()),
      deadline: ({ context }) => Math.max(0, context.validUntil - clock.now()),
    },
    guards: {
      newer: ({ context, event }) => event.type === 'etcd.watch' && event.revision > context.revision,
      newerNotMine: ({ context, event }) =>
        event.type === 'etcd.watch' && event.revision > context.revision && event.holder !== self,
      member: ({ context }) => isMember(context.peers),
      leaves: ({ event }) => event.type === 'election.peers' && !isMember(event.peers),
      won: ({ context }) => context.won && context.holder === self && clock.now() < context.validUntil,
      heldByOther: ({ context }) => context.holder !== undefined && context.holder !== self,
    },
    actions: {
      takePeers: assign(({ event }) => (event.type === 'election.peers' ? { peers: event.peers } : {})),
      learnWatch: assign(({ context, event }) =>
        event.type === 'etcd.watch' ? learn(context, event.holder, event.revision) : {},
      ),
      markSent: assign(() => ({ sentAt: clock.now() })),
      reportLooking: ({ context }) =>
        deps.report({ role: 'looking', leader: undefined, term: context.revision, acting: false }),
      reportFollowing: ({ context }) =>
        deps.report({ role: 'following', leader: context.holder, term: context.revision, acting: false }),
      reportLeading: ({ context }) =>
        deps.report({ role: 'leading', leader: self, term: context.revision, acting: true }),
      logCampaign: ({ context }) =>
        logger.info(
          {
            event: 'election.etcd.campaign',
            holder: context.holder ?? null,
            revision: context.revision,
          },
          'etcd election: campaigning for the leader key',
        ),
      logWon: ({ context }) =>
        logger.info(
          { event: 'election.etcd.won', term: context.revision },
          `etcd election: won the leader key (revision ${context.revision})`,
        ),
      logLost: (_, params: { reason: string }) =>
        logger.warn(
          { event: 'election.etcd.lost', reason: params.reason },
          `etcd election: stopped acting as leader (${params.reason})`,
        ),
    },
  }).createMachine({
    id: 'etcd',
    context: {
      peers: deps.options.peers,
      holder: undefined,
      revision: 0,
      sentAt: 0,
      validUntil: 0,
      won: false,
    },
    // One watch for the machine's whole life: it reports the current holder first, then changes.
    invoke: { src: 'watch' },
    on: {
      'etcd.watch': { guard: 'newer', actions: 'learnWatch' },
      'election.peers': [
        { guard: 'leaves', target: '.idle', actions: 'takePeers' },
        { actions: 'takePeers' },
      ],
    },
    initial: 'start',
    states: {
      start: {
        always: [{ guard: 'member', target: 'campaigning', actions: 'logCampaign' }, { target: 'idle' }],
      },
      /** Not among the peers: take no part. */
      idle: {
        entry: 'reportLooking',
        always: { guard: 'member', target: 'campaigning', actions: 'logCampaign' },
      },
      campaigning: {
        entry: ['markSent', 'reportLooking'],
        invoke: {
          src: 'campaign',
          onDone: [
            // No answer (timeout, unreachable): holder unknown.
            { guard: ({ event }) => event.output.holder === undefined, target: 'backoff' },
            {
              target: 'deciding',
              actions: assign(({ context, event }) => outcome(context, event.output)),
            },
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
          { target: 'campaigning', actions: 'logCampaign' },
        ],
        exit: assign({ won: false }),
      },
      backoff: {
        on: { 'etcd.watch': { guard: 'newer', target: 'deciding', actions: 'learnWatch' } },
        after: { retry: 'campaigning' },
      },
      following: {
        entry: 'reportFollowing',
        on: { 'etcd.watch': { guard: 'newer', target: 'deciding', actions: 'learnWatch' } },
        initial: 'watching',
        states: {
          watching: { after: { recheck: 'rechecking' } },
          // Compare-and-swap again without changing the view: a lost watch notification costs at most this.
          rechecking: {
            entry: 'markSent',
            invoke: {
              src: 'campaign',
              onDone: [
                {
                  // News: the key is gone (we just won it) or changed hands.
                  guard: ({ context, event }) =>
                    event.output.holder !== undefined && event.output.revision > context.revision,
                  target: '#etcd.deciding',
                  actions: assign(({ context, event }) => outcome(context, event.output)),
                },
                { target: 'watching' },
              ],
              onError: 'watching',
            },
          },
        },
      },
      leading: {
        entry: ['reportLeading', 'logWon'],
        on: {
          'etcd.watch': {
            guard: 'newerNotMine',
            target: 'campaigning',
            actions: ['learnWatch', { type: 'logLost', params: { reason: 'key-changed' } }],
          },
          'election.peers': {
            guard: 'leaves',
            target: 'resigning',
            actions: ['takePeers', { type: 'logLost', params: { reason: 'left-peers' } }],
          },
        },
        initial: 'waiting',
        states: {
          // Both children arm `deadline` on entry, so every acknowledged renewal pushes it out.
          waiting: {
            after: {
              renew: 'renewing',
              deadline: {
                target: '#etcd.campaigning',
                actions: { type: 'logLost', params: { reason: 'no-renewal' } },
              },
            },
          },
          renewing: {
            entry: 'markSent',
            after: {
              deadline: {
                target: '#etcd.campaigning',
                actions: { type: 'logLost', params: { reason: 'no-renewal' } },
              },
            },
            invoke: {
              src: 'keepAlive',
              onDone: [
                {
                  guard: ({ event }) => event.output,
                  target: 'waiting',
                  actions: assign(({ context }) => ({
                    validUntil: Math.max(context.validUntil, context.sentAt + actForMs),
                  })),
                },
                {
                  target: '#etcd.campaigning',
                  actions: { type: 'logLost', params: { reason: 'keepalive-not-confirmed' } },
                },
              ],
              onError: {
                target: '#etcd.campaigning',
                actions: { type: 'logLost', params: { reason: 'keepalive-failed' } },
              },
            },
          },
        },
      },
      /** Left the peers while leading: give the key up for the others. */
      resigning: {
        entry: 'reportLooking',
        invoke: { src: 'resign', onDone: 'idle', onError: 'idle' },
      },
    },
  });
}

export const etcdElection: ElectionAlgorithmDefinition = {
  name: 'etcd',
  singleLeader: true,
  createMachine: createEtcdMachine,
  // Nothing goes over the wire between the nodes: the store decides and detects failures.
  registerMessages: () => {},
};
