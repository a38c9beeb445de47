import type { Message } from '@doyen/core';
import { enqueueActions, setup } from 'xstate';
import type { ElectionDeps, ElectionPeer, PeersChanged } from './election.js';
import type {
  InvitationHeartbeat,
  InvitationHeartbeatAck,
  InvitationInvite,
  InvitationJoin,
  InvitationMessage,
  InvitationNewLeader,
  InvitationRedirect,
  InvitationWelcome,
} from './invitation-messages.js';
import { peerAt } from './peers.js';
import {
  effect,
  flushStep,
  newStep,
  runElectionEffect,
  type StepEnqueue,
  type Step as StepOf,
} from './step.js';

export interface InvitationContext {
  readonly peers: readonly ElectionPeer[];
  /** The group leader this node follows; itself while it leads a group. */
  readonly leader: string;
  /** Leading: the group, this node included. */
  readonly members: readonly string[];
  /** Leading: heartbeat rounds since each member last acked. */
  readonly missed: Readonly<Record<string, number>>;
  /** Leading: a join sent to a larger group's leader, awaiting its Welcome. */
  readonly joining: { readonly to: string; readonly id: number } | null;
}

type InternalEvent =
  | { readonly type: 'invitation.join-timeout' }
  | { readonly type: 'invitation.lead' }
  | { readonly type: 'invitation.follow' };

type InvitationEvent = InvitationMessage | PeersChanged | InternalEvent;
type InvitationDelay = 'heartbeat' | 'leaderTimeout' | 'invite';

/** One event's work: a draft of the next context and the effects, applied in order. */
type Step = StepOf<InvitationContext, InternalEvent>;

const JOIN_TIMER = 'invitation-join';

/**
 * The invitation election (GARCIA-MOLINA82): leading | following. Every node starts as the leader
 * of a group of itself; groups merge until each side of the network is one group.
 * - Group leaders invite a random peer outside their group every inviteIntervalMs (jittered). An
 *   invited leader compares (size, rank) with the inviter's: the larger group's leader (tie:
 *   higher rank) leads the merge. If the invited one wins it invites back; if it loses it sends
 *   Join with its members, and on Welcome tells only its own members the new leader. An invited
 *   member answers Redirect with its leader, and the inviter invites that leader directly.
 * - Leaders heartbeat their members with the member list and drop members that stop acking (or
 *   ack naming another leader); a member whose leader went silent for leaderTimeoutMs (or no
 *   longer lists it) leads a group of itself again and goes back to inviting.
 * - No quorum: under a partition each side merges into its own group with its own leader; after
 *   the heal the larger group absorbs the smaller.
 */
export function createInvitationMachine(deps: ElectionDeps) {
  const { self, options, system } = deps;
  const { timing } = options;
  const me = self.address;
  const randomId = () => Math.floor(system.random() * 2 ** 31);
  const rankOf = (c: InvitationContext, address: string) => peerAt(c.peers, address)?.rank ?? -1;
  /** Heartbeat rounds a member may miss before it is dropped. */
  const missLimit = Math.ceil(timing.leaderTimeoutMs / timing.heartbeatIntervalMs);

  const report = (c: InvitationContext) =>
    deps.report(
      c.leader === me
        ? { role: 'leading', leader: me, term: 0, acting: true }
        : { role: 'following', leader: c.leader, term: 0, acting: false },
    );

  const sendTo = (s: Step, address: string, message: InvitationMessage) => {
    const peer = peerAt(s.ctx.peers, address);
    if (peer && address !== me) effect(s, { kind: 'send', peer, message: message as unknown as Message });
  };
  const leading = (c: InvitationContext) => c.leader === me;
  const invite = (s: Step, to: string) =>
    sendTo(s, to, { type: 'election.invitation.invite', from: me, size: s.ctx.members.length });

  /** Does the group (size, leader) win a merge against (otherSize, other)? */
  const wins = (c: InvitationContext, size: number, leader: string, otherSize: number, other: string) =>
    size > otherSize || (size === otherSize && rankOf(c, leader) > rankOf(c, other));

  const becomeSingleton = (s: Step, reason: string) => {
    const former = s.ctx.leader;
    s.ctx.leader = me;
    s.ctx.members = [me];
    s.ctx.missed = {};
    s.ctx.joining = null;
    effect(s, {
      kind: 'log',
      event: 'election.invitation.alone',
      fields: { former, reason },
      msg: `invitation: leading a group of myself (${reason})`,
    });
    s.ops.push({ op: 'raise', event: { type: 'invitation.lead' } });
  };

  const dropMember = (s: Step, address: string) => {
    s.ctx.members = s.ctx.members.filter((m) => m !== address);
    const { [address]: _gone, ...missed } = s.ctx.missed;
    s.ctx.missed = missed;
  };

  const onInvite = (s: Step, m: InvitationInvite) => {
    const c = s.ctx;
    if (!leading(c)) {
      // an ordinary member: point the inviter at our leader (or, if it is our leader that does
      // not list us any more, ask it to take us back)
      if (c.leader === m.from) {
        sendTo(s, m.from, { type: 'election.invitation.join', from: me, id: randomId(), members: [me] });
      } else {
        sendTo(s, m.from, { type: 'election.invitation.redirect', from: me, leader: c.leader });
      }
      return;
    }
    if (c.joining !== null) return; // already merging into another group
    // the inviter leads a group of its own now, whatever our list says
    if (c.members.includes(m.from)) dropMember(s, m.from);
    if (wins(s.ctx, s.ctx.members.length, me, m.size, m.from)) {
      invite(s, m.from); // we lead the merge: it will find it loses and join us
      return;
    }
    const id = randomId();
    s.ctx.joining = { to: m.from, id };
    sendTo(s, m.from, { type: 'election.invitation.join', from: me, id, members: s.ctx.members });
    s.ops.push({ op: 'cancel', id: JOIN_TIMER });
    s.ops.push({
      op: 'raise',
      event: { type: 'invitation.join-timeout' },
      id: JOIN_TIMER,
      delay: timing.replyTimeoutMs,
    });
  };

  const onJoin = (s: Step, m: InvitationJoin) => {
    const c = s.ctx;
    if (!leading(c) || c.joining !== null) return; // the joiner times out and stays a leader
    const joined = m.members.filter(
      (a) => peerAt(c.peers, a) !== undefined && !c.members.includes(a) && a !== me,
    );
    const missed = { ...c.missed };
    for (const a of joined) missed[a] = 0;
    s.ctx.members = [...c.members, ...joined];
    s.ctx.missed = missed;
    sendTo(s, m.from, { type: 'election.invitation.welcome', from: me, id: m.id });
    if (joined.length > 0) {
      effect(s, {
        kind: 'log',
        event: 'election.invitation.merged',
        fields: { from: m.from, joined: joined.length, size: s.ctx.members.length },
        msg: `invitation: ${m.from} merged ${joined.length} into my group (now ${s.ctx.members.length})`,
      });
    }
  };

  const onWelcome = (s: Step, m: InvitationWelcome) => {
    const c = s.ctx;
    if (c.joining?.to !== m.from || c.joining.id !== m.id || !leading(c)) return;
    // only our own members learn the new leader: the larger group hears nothing
    for (const a of c.members) {
      if (a !== me) sendTo(s, a, { type: 'election.invitation.new-leader', from: me, leader: m.from });
    }
    s.ctx.leader = m.from;
    s.ctx.members = [];
    s.ctx.missed = {};
    s.ctx.joining = null;
    s.ops.push({ op: 'cancel', id: JOIN_TIMER });
    s.ops.push({ op: 'raise', event: { type: 'invitation.follow' } });
  };

  const onNewLeader = (s: Step, m: InvitationNewLeader) => {
    const c = s.ctx;
    if (leading(c) || c.leader !== m.from || m.leader === me || !peerAt(c.peers, m.leader)) return;
    s.ctx.leader = m.leader;
    s.ops.push({ op: 'raise', event: { type: 'invitation.follow' } });
  };

  const onHeartbeat = (s: Step, m: InvitationHeartbeat) => {
    const c = s.ctx;
    const listed = m.members.includes(me);
    if (!leading(c) && c.leader === m.from) {
      // not listed (yet: the Join may still be on its way): no refresh, we time out if it lasts
      if (!listed) return;
      sendTo(s, m.from, { type: 'election.invitation.heartbeat-ack', from: me, leader: m.from });
      s.ops.push({ op: 'raise', event: { type: 'invitation.follow' } });
    } else if (listed) {
      // a stale list: tell it whom we follow, so it drops us
      sendTo(s, m.from, { type: 'election.invitation.heartbeat-ack', from: me, leader: c.leader });
    }
  };

  const onHeartbeatAck = (s: Step, m: InvitationHeartbeatAck) => {
    const c = s.ctx;
    if (!leading(c) || !c.members.includes(m.from)) return;
    if (m.leader === me) s.ctx.missed = { ...c.missed, [m.from]: 0 };
    else dropMember(s, m.from);
  };

  const onRedirect = (s: Step, m: InvitationRedirect) => {
    const c = s.ctx;
    if (!leading(c) || c.joining !== null || m.leader === me || c.members.includes(m.leader)) return;
    invite(s, m.leader);
  };

  /** Runs `fn` on a draft of the context and applies its effects in order. */
  const run = (fn: (s: Step, event: InvitationEvent) => void) =>
    enqueueActions<
      InvitationContext,
      InvitationEvent,
      undefined,
      InvitationEvent,
      never,
      never,
      never,
      InvitationDelay
    >(({ context, event, enqueue }) => {
      const s: Step = newStep(context);
      fn(s, event);
      flushStep(s, enqueue as unknown as StepEnqueue<InvitationContext, InternalEvent>);
    });

  /** A network message from one of the current peers other than us (others are ignored). */
  const message = <T extends InvitationMessage['type']>(
    type: T,
    handle: (s: Step, m: Extract<InvitationMessage, { type: T }>) => void,
  ) =>
    run((s, e) => {
      if (e.type !== type || !('from' in e) || e.from === me || !peerAt(s.ctx.peers, e.from)) return;
      handle(s, e as Extract<InvitationMessage, { type: T }>);
    });

  return setup({
    types: { context: {} as InvitationContext, events: {} as InvitationEvent },
    delays: {
      heartbeat: timing.heartbeatIntervalMs,
      leaderTimeout: timing.leaderTimeoutMs,
      // a little seeded jitter, so freshly alone leaders do not all invite at once
      invite: () => timing.inviteIntervalMs * (0.75 + 0.5 * system.random()),
    },
    actions: {
      run: runElectionEffect(deps, { algorithm: 'invitation', node: me }),
      report: ({ context }) => report(context),
      heartbeat: run((s) => {
        const missed: Record<string, number> = {};
        const kept: string[] = [me];
        for (const a of s.ctx.members) {
          if (a === me) continue;
          const n = (s.ctx.missed[a] ?? 0) + 1;
          if (n > missLimit) continue; // silent for leaderTimeoutMs: dropped
          missed[a] = n;
          kept.push(a);
        }
        s.ctx.members = kept;
        s.ctx.missed = missed;
        for (const a of kept)
          sendTo(s, a, { type: 'election.invitation.heartbeat', from: me, members: kept });
      }),
      invite: run((s) => {
        if (s.ctx.joining !== null) return;
        const outside = s.ctx.peers.filter((p) => p.address !== me && !s.ctx.members.includes(p.address));
        const pick = outside[Math.floor(system.random() * outside.length)];
        if (pick) invite(s, pick.address);
      }),
      leaderSilent: run((s) => becomeSingleton(s, `leader ${s.ctx.leader} silent`)),
    },
  }).createMachine({
    id: 'invitation',
    context: { peers: options.peers, leader: me, members: [me], missed: {}, joining: null },
    initial: 'leading',
    on: {
      'election.invitation.invite': { actions: message('election.invitation.invite', onInvite) },
      'election.invitation.redirect': { actions: message('election.invitation.redirect', onRedirect) },
      'election.invitation.join': { actions: message('election.invitation.join', onJoin) },
      'election.invitation.welcome': { actions: message('election.invitation.welcome', onWelcome) },
      'election.invitation.new-leader': { actions: message('election.invitation.new-leader', onNewLeader) },
      'election.invitation.heartbeat': { actions: message('election.invitation.heartbeat', onHeartbeat) },
      'election.invitation.heartbeat-ack': {
        actions: message('election.invitation.heartbeat-ack', onHeartbeatAck),
      },
      'invitation.join-timeout': { actions: run((s) => void (s.ctx.joining = null)) },
      'election.peers': {
        actions: run((s, e) => {
          if (e.type !== 'election.peers') return;
          s.ctx.peers = e.peers;
          if (!leading(s.ctx) && !peerAt(e.peers, s.ctx.leader)) {
            becomeSingleton(s, `leader ${s.ctx.leader} removed`);
            return;
          }
          for (const a of s.ctx.members) if (a !== me && !peerAt(e.peers, a)) dropMember(s, a);
        }),
      },
      // descendant targets are re-entered (restarting their timers) while the root is not
      'invitation.lead': '.leading',
      'invitation.follow': '.following',
    },
    states: {
      leading: {
        entry: 'report',
        type: 'parallel',
        states: {
          beating: {
            initial: 'waiting',
            states: {
              waiting: { after: { heartbeat: { target: 'waiting', reenter: true, actions: 'heartbeat' } } },
            },
          },
          inviting: {
            initial: 'waiting',
            states: {
              waiting: { after: { invite: { target: 'waiting', reenter: true, actions: 'invite' } } },
            },
          },
        },
      },
      following: {
        entry: 'report',
        after: { leaderTimeout: { actions: 'leaderSilent' } },
      },
    },
  });
}
