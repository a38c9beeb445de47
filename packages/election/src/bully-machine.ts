import type { Message } from '@doyen/core';
import { assign, setup } from 'xstate';
import type {
  BullyAlive,
  BullyElected,
  BullyElection,
  BullyFailover,
  BullyHeartbeat,
  BullyHeartbeatAck,
  BullyMessage,
  BullyTakeover,
} from './bully-messages.js';
import type { ElectionDeps, ElectionPeer, PeersChanged } from './election.js';
import { byRankDescending, peerAt } from './peers.js';

export interface BullyContext {
  readonly peers: readonly ElectionPeer[];
  /** Whom this node follows (itself while leading); null while looking. */
  readonly leader: string | null;
  /** The followed leader's next-in-line list, as last heard. */
  readonly failover: readonly string[];
  /** Failover: the leader being replaced and the alternatives still to try, highest first. */
  readonly failed: string | null;
  readonly alternatives: readonly string[];
  /** Full round: the highest-ranked peer that answered Alive. */
  readonly responder: string | null;
  /** Leading: heartbeat round of each peer's last ack, and the current round. */
  readonly acks: Readonly<Record<string, number>>;
  readonly round: number;
}

type BullyEvent = BullyMessage | PeersChanged;

/**
 * The modified bully election (KORDAFSHARI05) with next-in-line failover (GHOLIPOUR09):
 * nextInLine -> failingOver | electing -> awaitingElected -> following | leading.
 * - A follower whose leader went silent for leaderTimeoutMs asks the highest alternative of the
 *   leader's failover list to take over (or takes over itself when it is that alternative); only
 *   when no alternative answers does it run the full round: Election to every higher peer,
 *   Alive back, then Takeover to the highest responder or, if none answered, lead.
 * - Leaders never step down on silence (no quorum): under a partition each side ends up with its
 *   own leader. Leaders heartbeat every peer, so after a heal the higher one's heartbeats make the
 *   lower one yield, and a leader hearing a lower one re-asserts with Elected.
 */
export function createBullyMachine(deps: ElectionDeps) {
  const { self, options, system } = deps;
  const { timing } = options;
  const log = (event: string, fields: Record<string, unknown>, msg: string) =>
    system.logger.info({ event, algorithm: 'bully', ...fields }, msg);
  const send = (to: ElectionPeer, message: BullyMessage) => deps.send(to, message as unknown as Message);
  const rankOf = (c: BullyContext, address: string | null) =>
    address === null ? -1 : (peerAt(c.peers, address)?.rank ?? -1);
  const others = (c: BullyContext) => c.peers.filter((p) => p.address !== self.address);
  const higher = (c: BullyContext) => c.peers.filter((p) => p.rank > self.rank);
  /** Heartbeat rounds a peer may miss and still count as alive for the failover list. */
  const missRounds = Math.ceil(timing.leaderTimeoutMs / timing.heartbeatIntervalMs);

  const failoverList = (c: BullyContext): string[] =>
    byRankDescending(others(c))
      .filter((p) => (c.acks[p.address] ?? Number.NEGATIVE_INFINITY) >= c.round - missRounds)
      .slice(0, options.failoverListSize)
      .map((p) => p.address);
  const elected = (c: BullyContext): BullyElected => ({
    type: 'election.bully.elected',
    from: self.address,
    failover: failoverList(c),
  });

  const report = (role: 'looking' | 'following' | 'leading', leader: string | null) =>
    deps.report({ role, leader: leader ?? undefined, term: 0, acting: role === 'leading' });

  /** Sender of a network message, if it is one of the current peers (others are ignored). */
  const sender = (c: BullyContext, e: BullyEvent) =>
    e.type === 'election.peers' ? undefined : peerAt(c.peers, e.from);

  return setup({
    types: { context: {} as BullyContext, events: {} as BullyEvent },
    delays: {
      reply: timing.replyTimeoutMs,
      // The takeover target leads as soon as it reads Takeover; allow the round trip and a margin.
      elected: 3 * timing.replyTimeoutMs,
      leaderTimeout: timing.leaderTimeoutMs,
      heartbeat: timing.heartbeatIntervalMs,
    },
    guards: {
      fromLower: ({ context, event }) => {
        const p = sender(context, event);
        return p !== undefined && p.rank < self.rank;
      },
      fromHigher: ({ context, event }) => {
        const p = sender(context, event);
        return p !== undefined && p.rank > self.rank;
      },
      fromLeader: ({ context, event }) =>
        sender(context, event) !== undefined &&
        event.type !== 'election.peers' &&
        event.from === context.leader,
      /** A heartbeat from a higher leader than the one we follow (or we follow none). */
      heartbeatFromBetterLeader: ({ context, event }) => {
        const p = sender(context, event);
        return p !== undefined && p.rank > self.rank && p.rank > rankOf(context, context.leader);
      },
      /** Take over for `failed` unless we follow someone else (then the asker's view is stale). */
      failoverAccepted: ({ context, event }) =>
        sender(context, event) !== undefined &&
        event.type === 'election.bully.failover' &&
        (context.leader === null || context.leader === event.failed),
      hasResponder: ({ context }) => context.responder !== null,
      noHigherPeer: ({ context }) => higher(context).length === 0,
      noAlternative: ({ context }) => context.alternatives.length === 0,
      selfIsNext: ({ context }) => context.alternatives[0] === self.address,
      leaderRemoved: ({ context, event }) =>
        event.type === 'election.peers' &&
        context.leader !== null &&
        !event.peers.some((p) => p.address === context.leader),
    },
    actions: {
      setPeers: assign(({ event }) => (event.type === 'election.peers' ? { peers: event.peers } : {})),
      reportLooking: () => report('looking', null),
      reportFollowing: ({ context }) => report('following', context.leader),
      /** Follow the sender of Elected / a heartbeat; ack so it counts us alive. */
      follow: assign(({ context, event }) => {
        if (event.type !== 'election.bully.elected' && event.type !== 'election.bully.heartbeat') return {};
        const ack: BullyHeartbeatAck = { type: 'election.bully.heartbeat-ack', from: self.address };
        const leader = peerAt(context.peers, event.from);
        if (leader) send(leader, ack);
        return { leader: event.from, failover: event.failover.filter((a) => peerAt(context.peers, a)) };
      }),
      /** The alternatives to try, highest first: the failed leader's list, none ranked below us. */
      planFailover: assign(({ context }) => {
        const failed = context.leader;
        const alternatives = byRankDescending(
          context.failover
            .filter((a) => a !== failed)
            .map((a) => peerAt(context.peers, a))
            .filter((p): p is ElectionPeer => p !== undefined && p.rank >= self.rank),
        ).map((p) => p.address);
        log(
          'election.bully.leader-lost',
          { failed, alternatives },
          alternatives.length > 0
            ? `bully: leader ${failed ?? 'none'} lost; failing over to ${alternatives[0]}`
            : `bully: leader ${failed ?? 'none'} lost; starting an election`,
        );
        return { failed, alternatives, leader: null };
      }),
      dropAlternative: assign(({ context }) => ({ alternatives: context.alternatives.slice(1) })),
      askAlternative: ({ context }) => {
        const next = peerAt(context.peers, context.alternatives[0]);
        if (!next) return;
        const ask: BullyFailover = {
          type: 'election.bully.failover',
          from: self.address,
          failed: context.failed,
        };
        send(next, ask);
      },
      startRound: assign(({ context }) => {
        const ask: BullyElection = { type: 'election.bully.election', from: self.address };
        const targets = higher(context);
        for (const p of targets) send(p, ask);
        if (targets.length > 0) {
          log(
            'election.bully.started',
            { asked: targets.length },
            `bully: election started (${targets.length} higher)`,
          );
        }
        return { responder: null };
      }),
      noteResponder: assign(({ context, event }) => {
        const p = sender(context, event);
        if (!p || p.rank <= self.rank || p.rank <= rankOf(context, context.responder)) return {};
        return { responder: p.address };
      }),
      sendTakeover: ({ context }) => {
        const to = peerAt(context.peers, context.responder ?? undefined);
        const takeover: BullyTakeover = { type: 'election.bully.takeover', from: self.address };
        if (to) send(to, takeover);
      },
      answerAlive: ({ context, event }) => {
        const to = sender(context, event);
        const alive: BullyAlive = {
          type: 'election.bully.alive',
          from: self.address,
          rank: self.rank,
          leader: context.leader,
        };
        if (to) send(to, alive);
      },
      startLeading: assign(({ context }) => {
        // Optimistic: everyone counts as alive until it misses `missRounds` heartbeats.
        const acks: Record<string, number> = {};
        for (const p of others(context)) acks[p.address] = 0;
        return { leader: self.address, acks, round: 0, failover: [], alternatives: [], failed: null };
      }),
      announce: ({ context }) => {
        const message = elected(context);
        for (const p of others(context)) send(p, message);
        report('leading', self.address);
        log('election.bully.won', { failover: message.failover }, 'bully: elected leader');
      },
      /** Leading and told by a lower peer (Takeover, Failover, Elected, heartbeat): say who leads. */
      answerElected: ({ context, event }) => {
        const to = sender(context, event);
        if (to) send(to, elected(context));
      },
      reassert: ({ context }) => {
        const message = elected(context);
        for (const p of others(context)) send(p, message);
      },
      heartbeat: assign(({ context }) => {
        const round = context.round + 1;
        const beat: BullyHeartbeat = {
          type: 'election.bully.heartbeat',
          from: self.address,
          failover: failoverList({ ...context, round }),
        };
        for (const p of others(context)) send(p, beat);
        return { round };
      }),
      noteAck: assign(({ context, event }) => {
        const p = sender(context, event);
        return p ? { acks: { ...context.acks, [p.address]: context.round } } : {};
      }),
      ackLeader: ({ context }) => {
        const leader = peerAt(context.peers, context.leader ?? undefined);
        const ack: BullyHeartbeatAck = { type: 'election.bully.heartbeat-ack', from: self.address };
        if (leader) send(leader, ack);
      },
      takeFailover: assign(({ context, event }) =>
        event.type === 'election.bully.heartbeat' || event.type === 'election.bully.elected'
          ? { failover: event.failover.filter((a) => peerAt(context.peers, a)) }
          : {},
      ),
    },
  }).createMachine({
    id: 'bully',
    context: {
      peers: options.peers,
      leader: null,
      failover: [],
      failed: null,
      alternatives: [],
      responder: null,
      acks: {},
      round: 0,
    },
    initial: 'electing',
    on: {
      'election.peers': { actions: 'setPeers' },
      'election.bully.election': { guard: 'fromLower', actions: 'answerAlive' },
      // We are the highest responder someone heard: lead (a live higher leader would re-assert).
      'election.bully.takeover': { guard: 'fromLower', target: '.leading' },
      'election.bully.failover': { guard: 'failoverAccepted', target: '.leading' },
      // The latest announcement of a higher peer wins; lower ones are ignored unless we lead.
      'election.bully.elected': { guard: 'fromHigher', target: '.following', actions: 'follow' },
      'election.bully.heartbeat': [
        { guard: 'fromLeader', target: '.following', actions: ['takeFailover', 'ackLeader'] },
        { guard: 'heartbeatFromBetterLeader', target: '.following', actions: 'follow' },
      ],
    },
    states: {
      /** The leader went silent: pick the failover alternative to try, or the full round. */
      nextInLine: {
        always: [
          { guard: 'noAlternative', target: 'electing' },
          { guard: 'selfIsNext', target: 'leading' },
          { target: 'failingOver' },
        ],
      },
      failingOver: {
        entry: ['reportLooking', 'askAlternative'],
        after: { reply: { target: 'nextInLine', actions: 'dropAlternative' } },
      },
      electing: {
        entry: ['reportLooking', 'startRound'],
        always: { guard: 'noHigherPeer', target: 'leading' },
        on: {
          'election.bully.alive': { actions: 'noteResponder' },
          // Someone higher answered us: it, not we, should take over.
          'election.bully.takeover': { guard: 'hasResponder' },
        },
        after: {
          reply: [
            { guard: 'hasResponder', target: 'awaitingElected', actions: 'sendTakeover' },
            { target: 'leading' },
          ],
        },
      },
      awaitingElected: {
        // Someone higher answered; if its Elected never comes, start over.
        on: { 'election.bully.takeover': {} },
        after: { elected: 'electing' },
      },
      following: {
        entry: 'reportFollowing',
        on: {
          'election.peers': {
            guard: 'leaderRemoved',
            target: 'nextInLine',
            actions: ['setPeers', 'planFailover'],
          },
        },
        after: { leaderTimeout: { target: 'nextInLine', actions: 'planFailover' } },
      },
      leading: {
        entry: ['startLeading', 'announce'],
        on: {
          'election.bully.takeover': { guard: 'fromLower', actions: 'answerElected' },
          'election.bully.failover': { guard: 'fromLower', actions: 'answerElected' },
          'election.bully.elected': { guard: 'fromLower', actions: 'reassert' },
          'election.bully.heartbeat': { guard: 'fromLower', actions: 'reassert' },
          'election.bully.heartbeat-ack': { actions: 'noteAck' },
        },
        initial: 'beating',
        states: {
          beating: { after: { heartbeat: { target: 'beating', reenter: true, actions: 'heartbeat' } } },
        },
      },
    },
  });
}
