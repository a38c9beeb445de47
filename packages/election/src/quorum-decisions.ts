import type { ElectionPeer, LeaderView } from './election.js';
import type { LogEffect, ReportEffect } from './election-effects.js';
import { majorityOf, peerAt } from './peers.js';
import type { QuorumMessage } from './quorum-messages.js';

/**
 * The quorum election's decisions as pure functions of (context, event, what the node reads at
 * that moment: its clock and its log's last index): each returns the next context, the effects
 * as data (send, broadcast, persist the vote, log, report the view), the control events to
 * raise, and what becomes of the lease timer. quorum-machine.ts wires them to states and delays;
 * its action `run` executes the effects.
 */

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

export type QuorumControl =
  | { readonly type: 'quorum.follow' }
  | { readonly type: 'quorum.pre-voted' }
  | { readonly type: 'quorum.won' }
  | { readonly type: 'quorum.step-down' }
  | { readonly type: 'quorum.lease-check' };

/** Where a message arrives decides what it may do (only a pre-voting candidate counts pre-votes, ...). */
export type Role = 'follower' | 'pre-voting' | 'voting' | 'leader';

export interface QuorumPolicy {
  /** This node's address. */
  readonly self: string;
  readonly electionTimeoutMinMs: number;
  readonly electionTimeoutMaxMs: number;
  /** How long a majority's acknowledgement keeps the leader acting. */
  readonly leaseMs: number;
}

/** What the node reads when an event arrives. */
export interface Readings {
  readonly now: number;
  /** The last index of the node's log (an up-to-date candidate has at least ours). */
  readonly lastIndex: number;
}

export type QuorumEffect =
  | { readonly kind: 'send'; readonly to: string; readonly message: QuorumMessage }
  | { readonly kind: 'broadcast'; readonly message: QuorumMessage }
  /** Durable before any reply that depends on it leaves (effects run in order). */
  | { readonly kind: 'persist'; readonly generation: number; readonly votedFor: string | null }
  | LogEffect
  | ReportEffect;

export interface QuorumStep {
  readonly context: QuorumContext;
  readonly effects: readonly QuorumEffect[];
  readonly raise: readonly QuorumControl[];
  /** `cancel`: drop the pending lease check; a number: (re)schedule it that many ms from now. */
  readonly leaseTimer?: 'cancel' | number;
}

const step = (
  context: QuorumContext,
  effects: QuorumEffect[] = [],
  raise: QuorumControl[] = [],
): QuorumStep => ({ context, effects, raise });

const isPeer = (c: QuorumContext, address: string) => peerAt(c.peers, address) !== undefined;

const enough = (c: QuorumContext, votes: readonly string[]) =>
  votes.filter((v) => isPeer(c, v)).length >= majorityOf(c.peers.length);

/** Loyal to a live leader: refuse to help anyone else take over. */
function sticky(policy: QuorumPolicy, c: QuorumContext, role: Role, from: string, now: number): boolean {
  return (
    from !== c.leader &&
    (role === 'leader' ? c.acting : c.heardAt !== null && now - c.heardAt < policy.electionTimeoutMinMs)
  );
}

export function viewOf(policy: QuorumPolicy, c: QuorumContext, leading: boolean): LeaderView {
  if (leading) return { role: 'leading', leader: policy.self, term: c.generation, acting: c.acting };
  return c.leader === null
    ? { role: 'looking', leader: undefined, term: c.generation, acting: false }
    : { role: 'following', leader: c.leader, term: c.generation, acting: false };
}

/** A newer generation anywhere makes us a follower of it, without a leader until one speaks. */
function adoptNewer(c: QuorumContext, generation: number): QuorumStep {
  return step(
    { ...c, generation, votedFor: null, leader: null },
    [{ kind: 'persist', generation, votedFor: null }],
    [{ type: 'quorum.follow' }],
  );
}

/** Every protocol message, wherever it arrives; `role` says what the state allows. */
export function onMessage(
  policy: QuorumPolicy,
  role: Role,
  c: QuorumContext,
  m: QuorumMessage,
  { now, lastIndex }: Readings,
): QuorumStep {
  const self = policy.self;
  if (m.from === self || !isPeer(c, m.from)) return step(c);
  switch (m.type) {
    case 'election.quorum.heartbeat': {
      if (m.generation < c.generation || (role === 'leader' && m.generation === c.generation)) {
        // stale leader (or, impossibly, a second one of our generation): tell it ours
        return step(c, [
          {
            kind: 'send',
            to: m.from,
            message: {
              type: 'election.quorum.heartbeat-ack',
              from: self,
              generation: c.generation,
              sentAt: m.sentAt,
              ok: false,
            },
          },
        ]);
      }
      const newer = m.generation > c.generation;
      return step(
        { ...c, generation: m.generation, votedFor: newer ? null : c.votedFor, leader: m.from, heardAt: now },
        [
          ...(newer ? [{ kind: 'persist', generation: m.generation, votedFor: null } as const] : []),
          {
            kind: 'send',
            to: m.from,
            message: {
              type: 'election.quorum.heartbeat-ack',
              from: self,
              generation: m.generation,
              sentAt: m.sentAt,
              ok: true,
            },
          },
        ],
        [{ type: 'quorum.follow' }],
      );
    }
    case 'election.quorum.heartbeat-ack': {
      if (m.generation > c.generation) return adoptNewer(c, m.generation);
      // an ack "sent" in our future is a lie or a bug: it must not stretch the lease
      if (role !== 'leader' || !m.ok || m.generation !== c.generation || m.sentAt > now) return step(c);
      if (m.sentAt <= (c.acks[m.from] ?? Number.NEGATIVE_INFINITY)) return step(c);
      return step({ ...c, acks: { ...c.acks, [m.from]: m.sentAt } }, [], [{ type: 'quorum.lease-check' }]);
    }
    case 'election.quorum.pre-vote': {
      const granted =
        !sticky(policy, c, role, m.from, now) &&
        (m.generation > c.generation ||
          (m.generation === c.generation && (c.votedFor === null || c.votedFor === m.from))) &&
        m.lastIndex >= lastIndex;
      return step(c, [
        {
          kind: 'send',
          to: m.from,
          message: { type: 'election.quorum.pre-vote-reply', from: self, generation: m.generation, granted },
        },
      ]);
    }
    case 'election.quorum.pre-vote-reply': {
      if (role !== 'pre-voting' || !m.granted || m.generation !== c.generation + 1) return step(c);
      if (c.votes.includes(m.from)) return step(c);
      const votes = [...c.votes, m.from];
      return step({ ...c, votes }, [], enough(c, votes) ? [{ type: 'quorum.pre-voted' }] : []);
    }
    case 'election.quorum.vote-request': {
      const reply = (generation: number, granted: boolean): QuorumEffect => ({
        kind: 'send',
        to: m.from,
        message: { type: 'election.quorum.vote', from: self, generation, granted },
      });
      if (sticky(policy, c, role, m.from, now) || m.generation < c.generation) {
        return step(c, [reply(c.generation, false)]);
      }
      const newer = m.generation > c.generation;
      const before = newer ? null : c.votedFor;
      // the generation rule: one vote per generation; a fresh vote only for an up-to-date candidate
      const granted = before === null ? m.lastIndex >= lastIndex : before === m.from;
      const votedFor = granted ? m.from : before;
      return step(
        { ...c, generation: m.generation, votedFor, leader: newer ? null : c.leader },
        [
          // durable before the reply leaves: a restart must not forget this vote
          ...(newer || votedFor !== c.votedFor
            ? [{ kind: 'persist', generation: m.generation, votedFor } as const]
            : []),
          reply(m.generation, granted),
        ],
        newer || granted ? [{ type: 'quorum.follow' }] : [],
      );
    }
    case 'election.quorum.vote': {
      if (m.generation > c.generation) return adoptNewer(c, m.generation);
      if (role !== 'voting' || !m.granted || m.generation !== c.generation) return step(c);
      if (c.votes.includes(m.from)) return step(c);
      const votes = [...c.votes, m.from];
      return step({ ...c, votes }, [], enough(c, votes) ? [{ type: 'quorum.won' }] : []);
    }
  }
}

/** Pre-voting: ask for the next generation without bumping ours (a cut-off node cannot inflate it). */
export function startPreVote(policy: QuorumPolicy, c: QuorumContext, { lastIndex }: Readings): QuorumStep {
  const votes = isPeer(c, policy.self) ? [policy.self] : [];
  return step(
    { ...c, votes },
    [
      {
        kind: 'broadcast',
        message: {
          type: 'election.quorum.pre-vote',
          from: policy.self,
          generation: c.generation + 1,
          lastIndex,
        },
      },
    ],
    enough(c, votes) ? [{ type: 'quorum.pre-voted' }] : [],
  );
}

/** Voting: a new generation, our own vote persisted before the requests leave. */
export function startVote(policy: QuorumPolicy, c: QuorumContext, { lastIndex }: Readings): QuorumStep {
  const generation = c.generation + 1;
  const votes = isPeer(c, policy.self) ? [policy.self] : [];
  return step(
    { ...c, generation, votedFor: policy.self, leader: null, votes },
    [
      { kind: 'persist', generation, votedFor: policy.self },
      {
        kind: 'log',
        event: 'election.quorum.election-started',
        fields: { generation },
        msg: `election: campaigning in generation ${generation}`,
      },
      {
        kind: 'broadcast',
        message: { type: 'election.quorum.vote-request', from: policy.self, generation, lastIndex },
      },
    ],
    enough(c, votes) ? [{ type: 'quorum.won' }] : [],
  );
}

/** Won: lead, not acting until a majority acknowledges a heartbeat. */
export function becomeLeader(policy: QuorumPolicy, c: QuorumContext, { now }: Readings): QuorumStep {
  return step({ ...c, leader: policy.self, acks: {}, acting: false, leaseEnd: null, notActingSince: now }, [
    {
      kind: 'log',
      event: 'election.quorum.won',
      fields: { generation: c.generation, votes: c.votes.length },
      msg: `election: won generation ${c.generation}`,
    },
  ]);
}

export function heartbeat(policy: QuorumPolicy, c: QuorumContext, { now }: Readings): QuorumStep {
  return step(c, [
    {
      kind: 'broadcast',
      message: {
        type: 'election.quorum.heartbeat',
        from: policy.self,
        generation: c.generation,
        sentAt: now,
      },
    },
  ]);
}

/** Acting iff a majority (us included) acknowledged a heartbeat sent within the lease. */
export function evaluateLease(policy: QuorumPolicy, c: QuorumContext, { now }: Readings): QuorumStep {
  const sentTimes = c.peers
    .map((p) => (p.address === policy.self ? now : (c.acks[p.address] ?? Number.NEGATIVE_INFINITY)))
    .sort((a, b) => b - a);
  const end = (sentTimes[majorityOf(c.peers.length) - 1] ?? Number.NEGATIVE_INFINITY) + policy.leaseMs;
  const acting = now < end;
  const notActingSince = acting ? null : (c.notActingSince ?? now);
  // stop acting the moment the lease runs out, not at the next heartbeat
  const leaseTimer = acting && end !== c.leaseEnd ? end - now : undefined;
  const leaseEnd = acting ? end : null;
  if (notActingSince !== null && now - notActingSince > policy.electionTimeoutMaxMs) {
    return {
      ...step(
        { ...c, acting: false, leaseEnd, notActingSince, leader: null },
        [
          {
            kind: 'log',
            event: 'election.quorum.stepped-down',
            fields: { generation: c.generation },
            msg: `election: no majority for ${policy.electionTimeoutMaxMs} ms, stepping down`,
          },
        ],
        [{ type: 'quorum.step-down' }],
      ),
      ...(leaseTimer === undefined ? {} : { leaseTimer }),
    };
  }
  return {
    ...step({ ...c, acting, leaseEnd, notActingSince }, [
      { kind: 'report', view: viewOf(policy, { ...c, acting }, true) },
    ]),
    ...(leaseTimer === undefined ? {} : { leaseTimer }),
  };
}

export function leaveLeadership(c: QuorumContext): QuorumStep {
  return {
    ...step({ ...c, acting: false, leaseEnd: null, notActingSince: null, acks: {} }),
    leaseTimer: 'cancel',
  };
}

export function report(policy: QuorumPolicy, c: QuorumContext, leading: boolean): QuorumStep {
  return step(c, [{ kind: 'report', view: viewOf(policy, c, leading) }]);
}
