import type { ElectionPeer, PeersChanged } from './election.js';
import { also, type ElectionStep, same, type TimerOp } from './election-decisions.js';
import { type ElectionEffect, log, report, sendTo as sendToPeer } from './election-effects.js';
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

/**
 * The invitation election's decisions as pure functions of (context, event, the node's seeded
 * random source): each returns the next context, its effects as data (send, log, report) and
 * its timers (the join timeout; the control events that move the machine).
 * invitation-machine.ts wires them to states; its action `run` does the I/O.
 */

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

export type InvitationControl =
  | { readonly type: 'invitation.join-timeout' }
  | { readonly type: 'invitation.lead' }
  | { readonly type: 'invitation.follow' };

export type InvitationEvent = InvitationMessage | PeersChanged | InvitationControl;

export type InvitationStep = ElectionStep<InvitationContext, InvitationControl>;

export interface InvitationPolicy {
  /** This node's address. */
  readonly self: string;
  readonly replyTimeoutMs: number;
  /** Heartbeat rounds a member may miss before it is dropped. */
  readonly missLimit: number;
}

/** The node's seeded random source, uniform in [0, 1): join ids and whom to invite. */
export type Random = () => number;

const JOIN_TIMER = 'invitation-join';

export function initialInvitationContext(
  policy: InvitationPolicy,
  peers: readonly ElectionPeer[],
): InvitationContext {
  return { peers, leader: policy.self, members: [policy.self], missed: {}, joining: null };
}

const randomId = (random: Random) => Math.floor(random() * 2 ** 31);
const leading = (policy: InvitationPolicy, c: InvitationContext) => c.leader === policy.self;
const rankOf = (c: InvitationContext, address: string) => peerAt(c.peers, address)?.rank ?? -1;

const patch = (s: InvitationStep, changes: Partial<InvitationContext>): InvitationStep =>
  also(s, { context: { ...s.context, ...changes } });
const effect = (s: InvitationStep, ...effects: ElectionEffect[]): InvitationStep => also(s, { effects });
const timers = (s: InvitationStep, ...ops: TimerOp<InvitationControl>[]): InvitationStep =>
  also(s, { timers: ops });

/** `message` to a peer other than ourselves. */
const sendTo = (policy: InvitationPolicy, s: InvitationStep, to: string, message: InvitationMessage) =>
  to === policy.self ? s : effect(s, ...sendToPeer(s.context.peers, to, message));

const invite = (policy: InvitationPolicy, s: InvitationStep, to: string) =>
  sendTo(policy, s, to, {
    type: 'election.invitation.invite',
    from: policy.self,
    size: s.context.members.length,
  });

/** Does the group (size, leader) win a merge against (otherSize, other)? */
const wins = (c: InvitationContext, size: number, leader: string, otherSize: number, other: string) =>
  size > otherSize || (size === otherSize && rankOf(c, leader) > rankOf(c, other));

function becomeSingleton(policy: InvitationPolicy, s: InvitationStep, reason: string): InvitationStep {
  const former = s.context.leader;
  const alone = patch(s, { leader: policy.self, members: [policy.self], missed: {}, joining: null });
  return timers(
    effect(
      alone,
      log(
        'election.invitation.alone',
        { former, reason },
        `invitation: leading a group of myself (${reason})`,
      ),
    ),
    { op: 'raise', event: { type: 'invitation.lead' } },
  );
}

function dropMember(s: InvitationStep, address: string): InvitationStep {
  const { [address]: _gone, ...missed } = s.context.missed;
  return patch(s, { members: s.context.members.filter((m) => m !== address), missed });
}

// ---- the messages ----------------------------------------------------------------------------

function onInvite(
  policy: InvitationPolicy,
  s: InvitationStep,
  m: InvitationInvite,
  random: Random,
): InvitationStep {
  const c = s.context;
  const me = policy.self;
  if (!leading(policy, c)) {
    // an ordinary member: point the inviter at our leader (or, if it is our leader that does
    // not list us any more, ask it to take us back)
    return c.leader === m.from
      ? sendTo(policy, s, m.from, {
          type: 'election.invitation.join',
          from: me,
          id: randomId(random),
          members: [me],
        })
      : sendTo(policy, s, m.from, { type: 'election.invitation.redirect', from: me, leader: c.leader });
  }
  if (c.joining !== null) return s; // already merging into another group
  // the inviter leads a group of its own now, whatever our list says
  const fresh = c.members.includes(m.from) ? dropMember(s, m.from) : s;
  if (wins(fresh.context, fresh.context.members.length, me, m.size, m.from)) {
    return invite(policy, fresh, m.from); // we lead the merge: it will find it loses and join us
  }
  const id = randomId(random);
  const joining = patch(fresh, { joining: { to: m.from, id } });
  return timers(
    sendTo(policy, joining, m.from, {
      type: 'election.invitation.join',
      from: me,
      id,
      members: joining.context.members,
    }),
    { op: 'cancel', id: JOIN_TIMER },
    { op: 'raise', event: { type: 'invitation.join-timeout' }, id: JOIN_TIMER, delay: policy.replyTimeoutMs },
  );
}

function onJoin(policy: InvitationPolicy, s: InvitationStep, m: InvitationJoin): InvitationStep {
  const c = s.context;
  const me = policy.self;
  if (!leading(policy, c) || c.joining !== null) return s; // the joiner times out and stays a leader
  const joined = m.members.filter(
    (a) => peerAt(c.peers, a) !== undefined && !c.members.includes(a) && a !== me,
  );
  const missed = { ...c.missed };
  for (const a of joined) missed[a] = 0;
  const members = [...c.members, ...joined];
  const welcomed = sendTo(policy, patch(s, { members, missed }), m.from, {
    type: 'election.invitation.welcome',
    from: me,
    id: m.id,
  });
  if (joined.length === 0) return welcomed;
  return effect(
    welcomed,
    log(
      'election.invitation.merged',
      { from: m.from, joined: joined.length, size: members.length },
      `invitation: ${m.from} merged ${joined.length} into my group (now ${members.length})`,
    ),
  );
}

function onWelcome(policy: InvitationPolicy, s: InvitationStep, m: InvitationWelcome): InvitationStep {
  const c = s.context;
  if (c.joining?.to !== m.from || c.joining.id !== m.id || !leading(policy, c)) return s;
  // only our own members learn the new leader: the larger group hears nothing
  let told = s;
  for (const a of c.members) {
    if (a !== policy.self)
      told = sendTo(policy, told, a, {
        type: 'election.invitation.new-leader',
        from: policy.self,
        leader: m.from,
      });
  }
  return timers(
    patch(told, { leader: m.from, members: [], missed: {}, joining: null }),
    { op: 'cancel', id: JOIN_TIMER },
    { op: 'raise', event: { type: 'invitation.follow' } },
  );
}

function onNewLeader(policy: InvitationPolicy, s: InvitationStep, m: InvitationNewLeader): InvitationStep {
  const c = s.context;
  if (leading(policy, c) || c.leader !== m.from || m.leader === policy.self || !peerAt(c.peers, m.leader))
    return s;
  return timers(patch(s, { leader: m.leader }), { op: 'raise', event: { type: 'invitation.follow' } });
}

function onHeartbeat(policy: InvitationPolicy, s: InvitationStep, m: InvitationHeartbeat): InvitationStep {
  const c = s.context;
  const me = policy.self;
  const listed = m.members.includes(me);
  if (!leading(policy, c) && c.leader === m.from) {
    // not listed (yet: the Join may still be on its way): no refresh, we time out if it lasts
    if (!listed) return s;
    return timers(
      sendTo(policy, s, m.from, { type: 'election.invitation.heartbeat-ack', from: me, leader: m.from }),
      { op: 'raise', event: { type: 'invitation.follow' } },
    );
  }
  // a stale list: tell it whom we follow, so it drops us
  if (listed)
    return sendTo(policy, s, m.from, {
      type: 'election.invitation.heartbeat-ack',
      from: me,
      leader: c.leader,
    });
  return s;
}

function onHeartbeatAck(
  policy: InvitationPolicy,
  s: InvitationStep,
  m: InvitationHeartbeatAck,
): InvitationStep {
  const c = s.context;
  if (!leading(policy, c) || !c.members.includes(m.from)) return s;
  return m.leader === policy.self
    ? patch(s, { missed: { ...c.missed, [m.from]: 0 } })
    : dropMember(s, m.from);
}

function onRedirect(policy: InvitationPolicy, s: InvitationStep, m: InvitationRedirect): InvitationStep {
  const c = s.context;
  if (!leading(policy, c) || c.joining !== null || m.leader === policy.self || c.members.includes(m.leader))
    return s;
  return invite(policy, s, m.leader);
}

/** A network message from one of the current peers other than us (others are ignored). */
export function onMessage(
  policy: InvitationPolicy,
  c: InvitationContext,
  e: InvitationEvent,
  random: Random,
): InvitationStep {
  const s = same<InvitationContext, InvitationControl>(c);
  if (!('from' in e) || e.from === policy.self || !peerAt(c.peers, e.from)) return s;
  switch (e.type) {
    case 'election.invitation.invite':
      return onInvite(policy, s, e, random);
    case 'election.invitation.redirect':
      return onRedirect(policy, s, e);
    case 'election.invitation.join':
      return onJoin(policy, s, e);
    case 'election.invitation.welcome':
      return onWelcome(policy, s, e);
    case 'election.invitation.new-leader':
      return onNewLeader(policy, s, e);
    case 'election.invitation.heartbeat':
      return onHeartbeat(policy, s, e);
    case 'election.invitation.heartbeat-ack':
      return onHeartbeatAck(policy, s, e);
  }
}

// ---- the timers and the peers ----------------------------------------------------------------

/** Leading: heartbeat the group, dropping members silent for the miss limit. */
export function heartbeat(policy: InvitationPolicy, c: InvitationContext): InvitationStep {
  const me = policy.self;
  const missed: Record<string, number> = {};
  const kept: string[] = [me];
  for (const a of c.members) {
    if (a === me) continue;
    const n = (c.missed[a] ?? 0) + 1;
    if (n > policy.missLimit) continue; // silent for leaderTimeoutMs: dropped
    missed[a] = n;
    kept.push(a);
  }
  let s = same<InvitationContext, InvitationControl>({ ...c, members: kept, missed });
  for (const a of kept)
    s = sendTo(policy, s, a, { type: 'election.invitation.heartbeat', from: me, members: kept });
  return s;
}

/** Leading: invite a random peer outside the group (unless merging into another). */
export function inviteSomeone(
  policy: InvitationPolicy,
  c: InvitationContext,
  random: Random,
): InvitationStep {
  const s = same<InvitationContext, InvitationControl>(c);
  if (c.joining !== null) return s;
  const outside = c.peers.filter((p) => p.address !== policy.self && !c.members.includes(p.address));
  const pick = outside[Math.floor(random() * outside.length)];
  return pick ? invite(policy, s, pick.address) : s;
}

export function leaderSilent(policy: InvitationPolicy, c: InvitationContext): InvitationStep {
  return becomeSingleton(policy, same(c), `leader ${c.leader} silent`);
}

export function joinTimedOut(c: InvitationContext): InvitationStep {
  return same({ ...c, joining: null });
}

/** New peers: alone again if our leader left them; members that left them are dropped. */
export function onPeers(policy: InvitationPolicy, c: InvitationContext, e: InvitationEvent): InvitationStep {
  if (e.type !== 'election.peers') return same(c);
  let s = same<InvitationContext, InvitationControl>({ ...c, peers: e.peers });
  if (!leading(policy, c) && !peerAt(e.peers, c.leader))
    return becomeSingleton(policy, s, `leader ${c.leader} removed`);
  for (const a of s.context.members) if (a !== policy.self && !peerAt(e.peers, a)) s = dropMember(s, a);
  return s;
}

export function reportView(policy: InvitationPolicy, c: InvitationContext): InvitationStep {
  return also(same(c), {
    effects: [leading(policy, c) ? report('leading', policy.self) : report('following', c.leader)],
  });
}
