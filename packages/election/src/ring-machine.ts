import type { Message } from '@doyen/core';
import { enqueueActions, setup } from 'xstate';
import type { ElectionDeps, ElectionPeer, PeersChanged } from './election.js';
import { highestRanked, peerAt, successorsOf } from './peers.js';
import {
  type RingAck,
  type RingCirculation,
  type RingHeartbeat,
  type RingMessage,
  type RingVariant,
  ringTypes,
} from './ring-messages.js';
import {
  effect,
  flushStep,
  newStep,
  runElectionEffect,
  type StepEnqueue,
  type Step as StepOf,
} from './step.js';

/** A circulation as the machine keeps it, whatever the variant puts on the wire. */
export interface Circulation {
  readonly kind: 'election' | 'elected';
  readonly initiator: string;
  readonly id: number;
  /** `ring`: who handled the election (or chose the leader); empty for `ring-max`. */
  readonly live: readonly string[];
  /** `ring-max` election: the highest-ranked address seen. */
  readonly max: string;
  /** elected: the leader. */
  readonly leader: string;
}

interface PendingHop {
  readonly body: Circulation;
  readonly to: string;
  /** Successors still to try, in ring order, if `to` does not ack. */
  readonly rest: readonly string[];
}

export interface RingContext {
  readonly peers: readonly ElectionPeer[];
  /** Whom this node follows (itself while leading); null while looking. */
  readonly leader: string | null;
  /** The election this node started, while it runs. */
  readonly own: number | null;
  /** The highest-ranked election taken part in since the last result: lower ones are dropped. */
  readonly joined: { readonly initiator: string; readonly id: number } | null;
  /** Circulations already handled (`kind:initiator:id`, newest last), so duplicates die. */
  readonly seen: readonly string[];
  /** Hops awaiting their ack, by token. */
  readonly pending: Readonly<Record<string, PendingHop>>;
  /** `ring`: the live set the current leader was chosen from. */
  readonly live: readonly string[];
}

type InternalEvent =
  | { readonly type: 'ring.hop-timeout'; readonly token: number }
  | { readonly type: 'ring.round-timeout' }
  | { readonly type: 'ring.forget-joined' }
  | { readonly type: 'ring.look' }
  | { readonly type: 'ring.follow' }
  | { readonly type: 'ring.lead' };

type RingEvent = RingMessage | PeersChanged | InternalEvent;

/** One event's work: a draft of the next context and the effects, applied in order. */
type Step = StepOf<RingContext, InternalEvent>;

type RingDelay = 'heartbeat' | 'leaderTimeout';

const SEEN_LIMIT = 64;
const ROUND_TIMER = 'ring-round';
const JOINED_TIMER = 'ring-joined';
const hopTimer = (token: number) => `ring-hop-${token}`;

/**
 * The ring election (CHANG79), one machine for both variants: looking | following | leading.
 * - On leader silence (or at start) a node sends Election to its successor in rank order; every
 *   receiver acks, adds itself (`ring`: to the live set; `ring-max`: to the running max) and
 *   passes it on, skipping successors that do not ack within replyTimeoutMs. Back at the
 *   initiator (or, if the initiator died, at the node that found it silent) the highest live rank
 *   becomes leader and a second circulation, Elected, tells everyone.
 * - Concurrent elections: a node that took part in an election of a higher-ranked initiator
 *   drops (after acking) those of lower ones, so only the highest initiator's round completes.
 *   An initiator that sees no result within the round timeout starts again. An alive node that
 *   finds a lower-ranked leader elected (the round skipped it) starts its own election, and a
 *   looking node that hears a higher-ranked leader's heartbeat follows it (what a round would pick).
 * - Leaders heartbeat every peer; a leader hearing a higher-ranked leader (after a heal) starts
 *   an election, which unites the ring under the highest live rank. Under a partition each side
 *   skips the other's nodes and elects its own leader.
 */
export function createRingMachine(deps: ElectionDeps, variant: RingVariant) {
  const { self, options, system } = deps;
  const { timing } = options;
  const types = ringTypes(variant);
  const collectsSet = variant === 'ring';
  const randomId = () => Math.floor(system.random() * 2 ** 31);
  const rankOf = (c: RingContext, address: string | null) =>
    address === null ? -1 : (peerAt(c.peers, address)?.rank ?? -1);
  /** A full circle may skip every node once; allow that plus a leader timeout. */
  const roundMs = (c: RingContext) =>
    timing.leaderTimeoutMs + 2 * (c.peers.length + 1) * timing.replyTimeoutMs;

  const report = (c: RingContext) => {
    const role = c.leader === null ? 'looking' : c.leader === self.address ? 'leading' : 'following';
    deps.report({ role, leader: c.leader ?? undefined, term: 0, acting: role === 'leading' });
  };

  const toWire = (b: Circulation, token: number): RingCirculation => {
    const hop = { from: self.address, initiator: b.initiator, id: b.id, token };
    if (b.kind === 'election') {
      return collectsSet
        ? { type: 'election.ring.election', ...hop, live: b.live }
        : { type: 'election.ring-max.election', ...hop, max: b.max };
    }
    return collectsSet
      ? { type: 'election.ring.elected', ...hop, leader: b.leader, live: b.live }
      : { type: 'election.ring-max.elected', ...hop, leader: b.leader };
  };
  const fromWire = (m: RingCirculation): Circulation => {
    const kind = m.type === types.election ? 'election' : 'elected';
    return {
      kind,
      initiator: m.initiator,
      id: m.id,
      live: 'live' in m ? m.live : [],
      max: 'max' in m ? m.max : '',
      leader: 'leader' in m ? m.leader : '',
    };
  };
  const keyOf = (b: Circulation) => `${b.kind}:${b.initiator}:${b.id}`;

  const sendTo = (s: Step, address: string, message: Message) => {
    const peer = peerAt(s.ctx.peers, address);
    if (peer) effect(s, { kind: 'send', peer, message });
  };
  const remember = (s: Step, key: string) => {
    s.ctx.seen = [...s.ctx.seen.filter((k) => k !== key), key].slice(-SEEN_LIMIT);
  };
  const armRound = (s: Step) => {
    s.ops.push({ op: 'cancel', id: ROUND_TIMER });
    s.ops.push({
      op: 'raise',
      event: { type: 'ring.round-timeout' },
      id: ROUND_TIMER,
      delay: roundMs(s.ctx),
    });
  };
  /**
   * Takes part in an election. The mark outlives the result (elections started before it are
   * still going round and must die) but not much longer: a later, legitimate election of a lower
   * initiator must get through.
   */
  const join = (s: Step, initiator: string, id: number) => {
    s.ctx.joined = { initiator, id };
    s.ops.push({ op: 'cancel', id: JOINED_TIMER });
    s.ops.push({
      op: 'raise',
      event: { type: 'ring.forget-joined' },
      id: JOINED_TIMER,
      delay: roundMs(s.ctx),
    });
  };

  /** Successors in ring order, up to and including the initiator (who closes the circle). */
  const successors = (c: RingContext, initiator: string): string[] => {
    const ring = successorsOf(c.peers, self.address)
      .filter((p) => p.address !== self.address)
      .map((p) => p.address);
    const at = ring.indexOf(initiator);
    return at < 0 ? ring : ring.slice(0, at + 1);
  };

  /** Sends one hop to the first of `candidates`, to be skipped if it does not ack in time. */
  const hop = (s: Step, body: Circulation, candidates: readonly string[]): boolean => {
    const [to, ...rest] = candidates;
    if (to === undefined) return false;
    const token = randomId();
    s.ctx.pending = { ...s.ctx.pending, [token]: { body, to, rest } };
    sendTo(s, to, toWire(body, token) as unknown as Message);
    s.ops.push({
      op: 'raise',
      event: { type: 'ring.hop-timeout', token },
      id: hopTimer(token),
      delay: timing.replyTimeoutMs,
    });
    return true;
  };

  const forward = (s: Step, body: Circulation) => {
    if (hop(s, body, successors(s.ctx, body.initiator))) return;
    // nobody else to pass it to: we are alone on our side of the ring
    if (body.kind === 'election') complete(s, body);
  };

  const adopt = (s: Step, leader: string, live: readonly string[]) => {
    s.ctx.leader = leader;
    s.ctx.own = null;
    s.ctx.live = live;
    s.ops.push({ op: 'cancel', id: ROUND_TIMER });
    s.ops.push({ op: 'raise', event: { type: leader === self.address ? 'ring.lead' : 'ring.follow' } });
  };

  /** The election went round: pick the highest live rank and circulate the result. */
  const complete = (s: Step, body: Circulation) => {
    const leader = collectsSet
      ? (highestRanked(s.ctx.peers.filter((p) => body.live.includes(p.address)))?.address ?? self.address)
      : peerAt(s.ctx.peers, body.max)
        ? body.max
        : self.address;
    const elected: Circulation = {
      kind: 'elected',
      initiator: self.address,
      id: randomId(),
      live: collectsSet ? body.live : [],
      max: '',
      leader,
    };
    const circled = collectsSet ? ` of ${body.live.length} live` : '';
    effect(s, {
      kind: 'log',
      event: 'election.ring.elected',
      fields: { initiator: body.initiator, leader, live: collectsSet ? body.live.length : null },
      msg: `${variant}: election of ${body.initiator} went round, ${leader} leads${circled}`,
    });
    remember(s, keyOf(elected));
    adopt(s, leader, elected.live);
    forward(s, elected);
  };

  const startElection = (s: Step, reason: string) => {
    const id = randomId();
    s.ctx.own = id;
    join(s, self.address, id);
    s.ctx.leader = null;
    const body: Circulation = {
      kind: 'election',
      initiator: self.address,
      id,
      live: collectsSet ? [self.address] : [],
      max: self.address,
      leader: '',
    };
    remember(s, keyOf(body));
    effect(s, {
      kind: 'log',
      event: 'election.ring.started',
      fields: { reason, id },
      msg: `${variant}: starting an election (${reason})`,
    });
    s.ops.push({ op: 'raise', event: { type: 'ring.look' } });
    armRound(s);
    forward(s, body);
  };

  const onElection = (s: Step, body: Circulation) => {
    if (body.initiator === self.address) {
      // back home: ours completes unless a higher election superseded it
      const c = s.ctx;
      if (c.own === body.id && c.joined?.initiator === self.address && c.joined.id === body.id)
        complete(s, body);
      return;
    }
    if (s.ctx.seen.includes(keyOf(body))) return;
    const j = s.ctx.joined;
    if (
      j !== null &&
      j.initiator !== body.initiator &&
      rankOf(s.ctx, j.initiator) > rankOf(s.ctx, body.initiator)
    )
      return;
    // only initiators wait for the result: a forwarder with a live leader has nothing to retry
    join(s, body.initiator, body.id);
    remember(s, keyOf(body));
    forward(s, {
      ...body,
      live: collectsSet ? [...body.live.filter((a) => a !== self.address), self.address] : [],
      max: rankOf(s.ctx, body.max) > self.rank ? body.max : self.address,
    });
  };

  const onElected = (s: Step, body: Circulation) => {
    if (body.initiator === self.address || s.ctx.seen.includes(keyOf(body))) return;
    if (!peerAt(s.ctx.peers, body.leader)) return;
    remember(s, keyOf(body));
    if (rankOf(s.ctx, body.leader) < self.rank) {
      // the round skipped us (we were slow or not yet up): we are live and rank higher, so the
      // result is wrong; a round of our own corrects everyone
      startElection(s, `skipped by the election of ${body.leader}`);
      return;
    }
    adopt(s, body.leader, body.live);
    forward(s, body);
  };

  const onHopTimeout = (s: Step, token: number) => {
    const p = s.ctx.pending[token];
    if (!p) return;
    const { [token]: _gone, ...pending } = s.ctx.pending;
    s.ctx.pending = pending;
    const body = collectsSet ? { ...p.body, live: p.body.live.filter((a) => a !== p.to) } : p.body;
    if (body.kind === 'election' && p.to === body.initiator) {
      // the initiator died with its election almost round: finish it for it
      complete(s, body);
    } else if (!hop(s, body, p.rest) && body.kind === 'election') {
      complete(s, body);
    }
  };

  /** Runs `fn` on a draft of the context and applies its effects in order. */
  const run = (fn: (s: Step, event: RingEvent) => void) =>
    enqueueActions<RingContext, RingEvent, undefined, RingEvent, never, never, never, RingDelay>(
      ({ context, event, enqueue }) => {
        const s: Step = newStep(context);
        fn(s, event);
        flushStep(s, enqueue as unknown as StepEnqueue<RingContext, InternalEvent>);
      },
    );

  /** A network message from one of the current peers (others are ignored). */
  const fromPeer = (c: RingContext, e: RingEvent): e is RingMessage =>
    'from' in e && typeof e.from === 'string' && peerAt(c.peers, e.from) !== undefined;

  const onCirculation = run((s, e) => {
    if (!fromPeer(s.ctx, e) || (e.type !== types.election && e.type !== types.elected)) return;
    const m = e as RingCirculation;
    const ack: RingAck = { type: types.ack, from: self.address, token: m.token };
    sendTo(s, m.from, ack as unknown as Message);
    const body = fromWire(m);
    if (body.kind === 'election') onElection(s, body);
    else onElected(s, body);
  });

  return setup({
    types: { context: {} as RingContext, events: {} as RingEvent },
    delays: {
      heartbeat: timing.heartbeatIntervalMs,
      leaderTimeout: timing.leaderTimeoutMs,
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: variant }),
      report: ({ context }) => report(context),
      heartbeat: ({ context }) => {
        const beat: RingHeartbeat = { type: types.heartbeat, from: self.address };
        for (const p of context.peers)
          if (p.address !== self.address) deps.send(p, beat as unknown as Message);
      },
      start: run((s) => startElection(s, 'start')),
      leaderSilent: run((s) => startElection(s, `leader ${s.ctx.leader} silent`)),
    },
  }).createMachine({
    id: variant,
    context: {
      peers: options.peers,
      leader: null,
      own: null,
      joined: null,
      seen: [],
      pending: {},
      live: [],
    },
    entry: 'start',
    initial: 'looking',
    on: {
      [types.election]: { actions: onCirculation },
      [types.elected]: { actions: onCirculation },
      [types.ack]: {
        actions: run((s, e) => {
          if (!fromPeer(s.ctx, e) || e.type !== types.ack) return;
          const { token, from } = e as RingAck;
          if (s.ctx.pending[token]?.to !== from) return;
          const { [token]: _acked, ...pending } = s.ctx.pending;
          s.ctx.pending = pending;
          s.ops.push({ op: 'cancel', id: hopTimer(token) });
        }),
      },
      [types.heartbeat]: {
        actions: run((s, e) => {
          if (!fromPeer(s.ctx, e)) return;
          const c = s.ctx;
          if (c.leader !== null && c.leader === e.from && c.leader !== self.address) {
            s.ops.push({ op: 'raise', event: { type: 'ring.follow' } });
          } else if (c.leader === self.address && rankOf(c, e.from) > self.rank) {
            // two leaders (a healed partition): re-run the ring, the highest live rank wins
            startElection(s, `leader ${e.from} outranks us`);
          } else if (c.leader === null && rankOf(c, e.from) > self.rank) {
            // looking (say, just restarted) and a higher leader is alive: the ring would pick it
            // anyway (or someone higher still, whose election will reach us)
            adopt(s, e.from, []);
          }
        }),
      },
      'ring.hop-timeout': {
        actions: run((s, e) => {
          if (e.type === 'ring.hop-timeout') onHopTimeout(s, e.token);
        }),
      },
      'ring.round-timeout': { actions: run((s) => startElection(s, 'no result')) },
      'ring.forget-joined': { actions: run((s) => void (s.ctx.joined = null)) },
      'election.peers': {
        actions: run((s, e) => {
          if (e.type !== 'election.peers') return;
          s.ctx.peers = e.peers;
          const leader = s.ctx.leader;
          if (leader !== null && !peerAt(e.peers, leader)) startElection(s, `leader ${leader} removed`);
        }),
      },
      'ring.look': '.looking',
      // a descendant target is re-entered (restarting its timers) while the root is not
      'ring.follow': '.following',
      'ring.lead': '.leading',
    },
    states: {
      looking: { entry: 'report' },
      following: {
        entry: 'report',
        after: { leaderTimeout: { actions: 'leaderSilent' } },
      },
      leading: {
        entry: ['report', 'heartbeat'],
        initial: 'beating',
        states: {
          beating: { after: { heartbeat: { target: 'beating', reenter: true, actions: 'heartbeat' } } },
        },
      },
    },
  });
}
