import type { Message } from '@doyen/core';
import { assign, enqueueActions, setup } from 'xstate';
import type { ElectionDeps, ElectionPeer, LeaderView, PeersChanged } from './election.js';
import { majorityOf, peerAt } from './peers.js';
import type { QuorumMessage } from './quorum-messages.js';
import { MemoryVoteStore } from './vote-store.js';

/** The leader acts only while a majority acknowledged a heartbeat it sent within this share of the minimum election timeout. */
export const LEASE_SHARE = 0.8;

export interface QuorumContext {
  readonly peers: readonly ElectionPeer[];
  /** The generation clock: bumped by every election, persisted with the vote. */
  readonly generation: number;
  /** Whom we voted for in `generation` (null: nobody yet). */
  readonly votedFor: string | null;
  /** The leader of `generation` we follow (ourselves when leading), null while looking. */
  readonly leader: string | null;
  /** When a leader last reached us (our clock; start counts): loyal for the minimum election timeout. */
  readonly heardAt: number | null;
  /** Pre-votes or votes granted in the current round, ourselves included. */
  readonly votes: readonly string[];
  /** Leading: per peer, the latest send time of one of our heartbeats it acknowledged. */
  readonly acks: Readonly<Record<string, number>>;
  readonly acting: boolean;
  /** Leading: when the lease scheduled to end (a check is due then). */
  readonly leaseEnd: number | null;
  /** Leading: since when we have lacked a majority (null while acting). */
  readonly notActingSince: number | null;
}

type Control =
  | { readonly type: 'quorum.follow' }
  | { readonly type: 'quorum.pre-voted' }
  | { readonly type: 'quorum.won' }
  | { readonly type: 'quorum.step-down' }
  | { readonly type: 'quorum.lease-check' };

export type QuorumEvent = QuorumMessage | PeersChanged | Control;

/** Where a message arrives decides what it may do (only a pre-voting candidate counts pre-votes, ...). */
type Role = 'follower' | 'pre-voting' | 'voting' | 'leader';

const LEASE_TIMER = 'quorum.lease';

/**
 * The seed's "Leader and Followers" with a generation clock, as a Raft-style election:
 * following → (randomised election timeout) → candidate.preVoting → candidate.voting → leading.
 * - A vote is persisted (generation + votedFor) before the reply leaves, so a restarted node
 *   never votes twice in one generation; only a candidate at least as up to date (lastIndex) wins.
 * - A follower that heard from its leader within the minimum election timeout refuses other
 *   candidates (stickiness); the leader acts only while a majority acknowledged a heartbeat it
 *   sent within 0.8 × that timeout. So a new leader can only win after the old one stopped acting.
 * - Pre-votes keep a cut-off minority from inflating the generation and unseating the
 *   majority's leader on heal.
 */
export function createQuorumMachine(deps: ElectionDeps) {
  const { system, self, options } = deps;
  const { timing } = options;
  const store = options.voteStore ?? new MemoryVoteStore();
  const lease = timing.electionTimeoutMinMs * LEASE_SHARE;
  const now = () => system.clock.now();
  const log = (event: string, fields: Record<string, unknown>, msg: string) =>
    system.logger.info({ event, ...fields }, msg);
  // Loaded once per incarnation: a corrupt store fails `Election.start`, not some later turn.
  const stored = store.load();

  const isPeer = (c: QuorumContext, address: string) => peerAt(c.peers, address) !== undefined;
  const others = (c: QuorumContext) => c.peers.filter((p) => p.address !== self.address);
  const send = (c: QuorumContext, to: string, message: QuorumMessage) => {
    const peer = peerAt(c.peers, to);
    if (peer) deps.send(peer, message as Message);
  };
  const broadcast = (c: QuorumContext, message: QuorumMessage) => {
    for (const p of others(c)) deps.send(p, message as Message);
  };
  const persist = (generation: number, votedFor: string | null) =>
    store.save({ generation, votedFor: votedFor ?? undefined });
  const enough = (c: QuorumContext, votes: readonly string[]) =>
    votes.filter((v) => isPeer(c, v)).length >= majorityOf(c.peers.length);
  /** Loyal to a live leader: refuse to help anyone else take over. */
  const sticky = (c: QuorumContext, role: Role, from: string) =>
    from !== c.leader &&
    (role === 'leader' ? c.acting : c.heardAt !== null && now() - c.heardAt < timing.electionTimeoutMinMs);
  const viewOf = (c: QuorumContext, leading: boolean): LeaderView =>
    leading
      ? { role: 'leading', leader: self.address, term: c.generation, acting: c.acting }
      : c.leader === null
        ? { role: 'looking', leader: undefined, term: c.generation, acting: false }
        : { role: 'following', leader: c.leader, term: c.generation, acting: false };

  return setup({
    types: { context: {} as QuorumContext, events: {} as QuorumEvent },
    delays: {
      electionTimeout: () =>
        timing.electionTimeoutMinMs +
        system.random() * (timing.electionTimeoutMaxMs - timing.electionTimeoutMinMs),
      heartbeatInterval: timing.heartbeatIntervalMs,
    },
    actions: {
      reportFollower: ({ context }) => deps.report(viewOf(context, false)),
      reportLeader: ({ context }) => deps.report(viewOf(context, true)),
      takePeers: assign({ peers: ({ event }) => (event as PeersChanged).peers }),
      /** Every protocol message, wherever it arrives; `role` says what the state allows. */
      handle: enqueueActions(({ context: c, event, enqueue }, { role }: { role: Role }) => {
        const m = event as QuorumMessage;
        if (m.from === self.address || !isPeer(c, m.from)) return;
        // A newer generation anywhere makes us a follower of it, without a leader until one speaks.
        const adoptNewer = (generation: number) => {
          enqueue.assign({ generation, votedFor: null, leader: null });
          enqueue(() => persist(generation, null));
          enqueue.raise({ type: 'quorum.follow' });
        };
        switch (m.type) {
          case 'election.quorum.heartbeat': {
            if (m.generation < c.generation || (role === 'leader' && m.generation === c.generation)) {
              // stale leader (or, impossibly, a second one of our generation): tell it ours
              const ack = { generation: c.generation, sentAt: m.sentAt, ok: false };
              enqueue(() =>
                send(c, m.from, { type: 'election.quorum.heartbeat-ack', from: self.address, ...ack }),
              );
              return;
            }
            const newer = m.generation > c.generation;
            enqueue.assign({
              generation: m.generation,
              votedFor: newer ? null : c.votedFor,
              leader: m.from,
              heardAt: now(),
            });
            enqueue(() => {
              if (newer) persist(m.generation, null);
              send(c, m.from, {
                type: 'election.quorum.heartbeat-ack',
                from: self.address,
                generation: m.generation,
                sentAt: m.sentAt,
                ok: true,
              });
            });
            enqueue.raise({ type: 'quorum.follow' });
            return;
          }
          case 'election.quorum.heartbeat-ack': {
            if (m.generation > c.generation) return adoptNewer(m.generation);
            // an ack "sent" in our future is a lie or a bug: it must not stretch the lease
            if (role !== 'leader' || !m.ok || m.generation !== c.generation || m.sentAt > now()) return;
            if (m.sentAt <= (c.acks[m.from] ?? Number.NEGATIVE_INFINITY)) return;
            enqueue.assign({ acks: { ...c.acks, [m.from]: m.sentAt } });
            enqueue.raise({ type: 'quorum.lease-check' });
            return;
          }
          case 'election.quorum.pre-vote': {
            const granted =
              !sticky(c, role, m.from) &&
              (m.generation > c.generation ||
                (m.generation === c.generation && (c.votedFor === null || c.votedFor === m.from))) &&
              m.lastIndex >= options.lastIndex();
            const reply = { generation: m.generation, granted };
            enqueue(() =>
              send(c, m.from, { type: 'election.quorum.pre-vote-reply', from: self.address, ...reply }),
            );
            return;
          }
          case 'election.quorum.pre-vote-reply': {
            if (role !== 'pre-voting' || !m.granted || m.generation !== c.generation + 1) return;
            if (c.votes.includes(m.from)) return;
            const votes = [...c.votes, m.from];
            enqueue.assign({ votes });
            if (enough(c, votes)) enqueue.raise({ type: 'quorum.pre-voted' });
            return;
          }
          case 'election.quorum.vote-request': {
            const reject = { type: 'election.quorum.vote', from: self.address, granted: false } as const;
            if (sticky(c, role, m.from) || m.generation < c.generation) {
              enqueue(() => send(c, m.from, { ...reject, generation: c.generation }));
              return;
            }
            const newer = m.generation > c.generation;
            const before = newer ? null : c.votedFor;
            // the generation rule: one vote per generation; a fresh vote only for an up-to-date candidate
            const granted = before === null ? m.lastIndex >= options.lastIndex() : before === m.from;
            const votedFor = granted ? m.from : before;
            enqueue.assign({ generation: m.generation, votedFor, leader: newer ? null : c.leader });
            enqueue(() => {
              // durable before the reply leaves: a restart must not forget this vote
              if (newer || votedFor !== c.votedFor) persist(m.generation, votedFor);
              send(c, m.from, { ...reject, generation: m.generation, granted });
            });
            if (newer || granted) enqueue.raise({ type: 'quorum.follow' });
            return;
          }
          case 'election.quorum.vote': {
            if (m.generation > c.generation) return adoptNewer(m.generation);
            if (role !== 'voting' || !m.granted || m.generation !== c.generation) return;
            if (c.votes.includes(m.from)) return;
            const votes = [...c.votes, m.from];
            enqueue.assign({ votes });
            if (enough(c, votes)) enqueue.raise({ type: 'quorum.won' });
            return;
          }
        }
      }),

      startPreVote: enqueueActions(({ context: c, enqueue }) => {
        const votes = isPeer(c, self.address) ? [self.address] : [];
        enqueue.assign({ votes });
        enqueue(() =>
          broadcast(c, {
            type: 'election.quorum.pre-vote',
            from: self.address,
            generation: c.generation + 1,
            lastIndex: options.lastIndex(),
          }),
        );
        if (enough(c, votes)) enqueue.raise({ type: 'quorum.pre-voted' });
      }),
      startVote: enqueueActions(({ context: c, enqueue }) => {
        const generation = c.generation + 1;
        const votes = isPeer(c, self.address) ? [self.address] : [];
        enqueue.assign({ generation, votedFor: self.address, leader: null, votes });
        enqueue(() => {
          persist(generation, self.address);
          log(
            'election.quorum.election-started',
            { generation },
            `election: campaigning in generation ${generation}`,
          );
          broadcast(c, {
            type: 'election.quorum.vote-request',
            from: self.address,
            generation,
            lastIndex: options.lastIndex(),
          });
        });
        if (enough(c, votes)) enqueue.raise({ type: 'quorum.won' });
      }),
      becomeLeader: enqueueActions(({ context: c, enqueue }) => {
        enqueue.assign({
          leader: self.address,
          acks: {},
          acting: false,
          leaseEnd: null,
          notActingSince: now(),
        });
        enqueue(() =>
          log(
            'election.quorum.won',
            { generation: c.generation, votes: c.votes.length },
            `election: won generation ${c.generation}`,
          ),
        );
      }),
      sendHeartbeats: ({ context: c }) =>
        broadcast(c, {
          type: 'election.quorum.heartbeat',
          from: self.address,
          generation: c.generation,
          sentAt: now(),
        }),
      /** Acting iff a majority (us included) acknowledged a heartbeat sent within the lease. */
      evaluateLease: enqueueActions(({ context: c, enqueue }) => {
        const t = now();
        const sentTimes = c.peers
          .map((p) => (p.address === self.address ? t : (c.acks[p.address] ?? Number.NEGATIVE_INFINITY)))
          .sort((a, b) => b - a);
        const end = (sentTimes[majorityOf(c.peers.length) - 1] ?? Number.NEGATIVE_INFINITY) + lease;
        const acting = t < end;
        const notActingSince = acting ? null : (c.notActingSince ?? t);
        if (acting && end !== c.leaseEnd) {
          // stop acting the moment the lease runs out, not at the next heartbeat
          enqueue.cancel(LEASE_TIMER);
          enqueue.raise({ type: 'quorum.lease-check' }, { id: LEASE_TIMER, delay: end - t });
        }
        const leaseEnd = acting ? end : null;
        if (notActingSince !== null && t - notActingSince > timing.electionTimeoutMaxMs) {
          enqueue.assign({ acting: false, leaseEnd, notActingSince, leader: null });
          enqueue(() =>
            log(
              'election.quorum.stepped-down',
              { generation: c.generation },
              `election: no majority for ${timing.electionTimeoutMaxMs} ms, stepping down`,
            ),
          );
          enqueue.raise({ type: 'quorum.step-down' });
          return;
        }
        enqueue.assign({ acting, leaseEnd, notActingSince });
        enqueue(() => deps.report(viewOf({ ...c, acting }, true)));
      }),
      leaveLeadership: enqueueActions(({ enqueue }) => {
        enqueue.cancel(LEASE_TIMER);
        enqueue.assign({ acting: false, leaseEnd: null, notActingSince: null, acks: {} });
      }),
    },
  }).createMachine({
    id: 'quorum',
    context: {
      peers: options.peers,
      generation: stored.generation,
      votedFor: stored.votedFor ?? null,
      leader: null,
      // A restarted incarnation may have acked a leader just before it crashed, and that leader
      // may still count the ack: stay loyal to it (unknown) for the minimum election timeout.
      heardAt: now(),
      votes: [],
      acks: {},
      acting: false,
      leaseEnd: null,
      notActingSince: null,
    },
    initial: 'following',
    on: { 'election.peers': { actions: 'takePeers' } },
    states: {
      following: {
        entry: 'reportFollower',
        after: { electionTimeout: 'candidate' },
        on: {
          'election.quorum.*': { actions: { type: 'handle', params: { role: 'follower' } } },
          'quorum.follow': { target: 'following', reenter: true },
        },
      },
      candidate: {
        entry: [assign({ leader: null }), 'reportFollower'],
        on: { 'quorum.follow': 'following' },
        initial: 'preVoting',
        states: {
          preVoting: {
            entry: 'startPreVote',
            after: { electionTimeout: { target: 'preVoting', reenter: true } },
            on: {
              'election.quorum.*': { actions: { type: 'handle', params: { role: 'pre-voting' } } },
              'quorum.pre-voted': 'voting',
            },
          },
          voting: {
            entry: 'startVote',
            after: { electionTimeout: 'preVoting' },
            on: {
              'election.quorum.*': { actions: { type: 'handle', params: { role: 'voting' } } },
              'quorum.won': '#quorum.leading',
            },
          },
        },
      },
      leading: {
        entry: ['becomeLeader', 'reportLeader'],
        exit: 'leaveLeadership',
        on: {
          'election.quorum.*': { actions: { type: 'handle', params: { role: 'leader' } } },
          // a newcomer's ack is needed for the new majority at once: do not wait for the next beat
          'election.peers': { actions: ['takePeers', 'sendHeartbeats', 'evaluateLease'] },
          'quorum.lease-check': { actions: 'evaluateLease' },
          'quorum.follow': 'following',
          'quorum.step-down': 'following',
        },
        initial: 'beating',
        states: {
          beating: {
            entry: ['sendHeartbeats', 'evaluateLease'],
            after: { heartbeatInterval: { target: 'beating', reenter: true } },
          },
        },
      },
    },
  });
}
