import type { DecisionStep, LogEffect } from '@doyen/core';
import type { ElectionPeer, LeaderView, PeersChanged } from './election.js';
import type { CampaignAnswer, KeepAliveAnswer, StoreChanged } from './etcd-messages.js';

/**
 * The etcd election's decisions as pure functions of (context, event): what the store's word
 * means for this node, the predicates its guards ask, and each step's next context with its
 * effects (report the view, log) as data. Time comes in with the events: every store answer
 * carries this node's clock when its call left and when it came back. etcd-machine.ts wires
 * them to states, store calls and delays; its action `run` executes the effects.
 *
 * The safety rule: act only on the store's word that we hold the key, from the send time of the
 * call that said so, for less than the key's TTL (the store counts the TTL from its later
 * receipt), and stop at once on any word that the key changed or may be gone.
 */

export interface EtcdContext {
  readonly peers: readonly ElectionPeer[];
  /** The key's holder as of `revision`, the newest store revision seen (campaign answers and watch). */
  readonly holder: string | undefined;
  readonly revision: number;
  /** Clock time the last answered campaign / keep-alive was sent. */
  readonly sentAt: number;
  /** Leading: act until then (send time of the last acknowledged campaign/keep-alive + ttl - renewal). */
  readonly validUntil: number;
  /** The last campaign created (or took over) the key in time and nothing newer contradicts it. */
  readonly won: boolean;
}

export type EtcdEvent = StoreChanged | PeersChanged;

export interface EtcdPolicy {
  /** This node's address, the owner it writes into the key. */
  readonly self: string;
  /** Keep-alive period: a third of the TTL. */
  readonly renewMs: number;
  /** How long an acknowledged call lets us act, from its send time: one renewal short of the TTL. */
  readonly actForMs: number;
}

export type EtcdEffect = { readonly kind: 'report'; readonly view: LeaderView } | LogEffect;

export type EtcdStep = DecisionStep<EtcdContext, EtcdEffect>;

/** Why a leader stopped acting. */
export type LossReason =
  | 'key-changed'
  | 'left-peers'
  | 'no-renewal'
  | 'keepalive-not-confirmed'
  | 'keepalive-failed';

export function initialEtcdContext(peers: readonly ElectionPeer[]): EtcdContext {
  return { peers, holder: undefined, revision: 0, sentAt: 0, validUntil: 0, won: false };
}

const same = (context: EtcdContext): EtcdStep => ({ context, effects: [] });

const isMember = (policy: EtcdPolicy, peers: readonly ElectionPeer[]) =>
  peers.some((p) => p.address === policy.self);

/** A newer revision teaches the holder; an older one is stale news. */
const learn = (c: EtcdContext, holder: string | undefined, revision: number): EtcdContext =>
  revision > c.revision ? { ...c, holder, revision } : c;

// ---- what the context and the event say ------------------------------------------------------

export function newer(c: EtcdContext, e: EtcdEvent): boolean {
  return e.type === 'etcd.watch' && e.revision > c.revision;
}

/** The key changed to someone else (or to nobody): a leader stops. */
export function newerNotMine(policy: EtcdPolicy, c: EtcdContext, e: EtcdEvent): boolean {
  return e.type === 'etcd.watch' && e.revision > c.revision && e.holder !== policy.self;
}

export function member(policy: EtcdPolicy, c: EtcdContext): boolean {
  return isMember(policy, c.peers);
}

export function leaves(policy: EtcdPolicy, e: EtcdEvent): boolean {
  return e.type === 'election.peers' && !isMember(policy, e.peers);
}

/** The last answer made us the holder, in time to act on it. */
export function won(policy: EtcdPolicy, c: EtcdContext): boolean {
  return c.won && c.holder === policy.self;
}

export function heldByOther(policy: EtcdPolicy, c: EtcdContext): boolean {
  return c.holder !== undefined && c.holder !== policy.self;
}

/** No answer (timeout, unreachable): the holder is unknown. */
export function unanswered(answer: CampaignAnswer): boolean {
  return answer.holder === undefined;
}

/** A recheck brings news: the key is gone (we just won it) or changed hands. */
export function news(c: EtcdContext, answer: CampaignAnswer): boolean {
  return answer.holder !== undefined && answer.revision > c.revision;
}

export function confirmed(answer: KeepAliveAnswer): boolean {
  return answer.confirmed;
}

/** Until the next keep-alive is due (from the last answered call's send time). */
export function renewInMs(policy: EtcdPolicy, c: EtcdContext, now: number): number {
  return Math.max(0, c.sentAt + policy.renewMs - now);
}

/** Until this node must stop acting. */
export function deadlineInMs(c: EtcdContext, now: number): number {
  return Math.max(0, c.validUntil - now);
}

// ---- steps -----------------------------------------------------------------------------------

export function takePeers(c: EtcdContext, e: EtcdEvent): EtcdStep {
  return e.type === 'election.peers' ? same({ ...c, peers: e.peers }) : same(c);
}

export function learnWatch(c: EtcdContext, e: EtcdEvent): EtcdStep {
  return e.type === 'etcd.watch' ? same(learn(c, e.holder, e.revision)) : same(c);
}

/**
 * What a campaign answer tells: a win, acting from its send time, or just the holder. A watch
 * may already have seen our fresh key deleted: then it is not a win; nor is an answer that
 * came back too late to act on.
 */
export function takeCampaignAnswer(policy: EtcdPolicy, c: EtcdContext, answer: CampaignAnswer): EtcdStep {
  const { holder, revision, sentAt, answeredAt } = answer;
  if (holder === policy.self && revision >= c.revision) {
    const validUntil = sentAt + policy.actForMs;
    return same({ ...c, holder, revision, sentAt, validUntil, won: answeredAt < validUntil });
  }
  return same({ ...learn(c, holder, revision), sentAt, won: false });
}

/** The store confirmed the key: act on, counted from this keep-alive's send time. */
export function takeRenewal(policy: EtcdPolicy, c: EtcdContext, answer: KeepAliveAnswer): EtcdStep {
  return same({
    ...c,
    sentAt: answer.sentAt,
    validUntil: Math.max(c.validUntil, answer.sentAt + policy.actForMs),
  });
}

/** Leaving `deciding`: a win counts only for the decision it was taken for. */
export function forgetWin(c: EtcdContext): EtcdStep {
  return same({ ...c, won: false });
}

export function reportLooking(c: EtcdContext): EtcdStep {
  return {
    context: c,
    effects: [
      { kind: 'report', view: { role: 'looking', leader: undefined, term: c.revision, acting: false } },
    ],
  };
}

export function reportFollowing(c: EtcdContext): EtcdStep {
  return {
    context: c,
    effects: [
      { kind: 'report', view: { role: 'following', leader: c.holder, term: c.revision, acting: false } },
    ],
  };
}

export function reportLeading(policy: EtcdPolicy, c: EtcdContext): EtcdStep {
  return {
    context: c,
    effects: [
      { kind: 'report', view: { role: 'leading', leader: policy.self, term: c.revision, acting: true } },
    ],
  };
}

export function logCampaign(c: EtcdContext): EtcdStep {
  return {
    context: c,
    effects: [
      {
        kind: 'log',
        level: 'info',
        event: 'election.etcd.campaign',
        fields: { holder: c.holder ?? null, revision: c.revision },
        msg: 'etcd election: campaigning for the leader key',
      },
    ],
  };
}

export function logWon(c: EtcdContext): EtcdStep {
  return {
    context: c,
    effects: [
      {
        kind: 'log',
        level: 'info',
        event: 'election.etcd.won',
        fields: { term: c.revision },
        msg: `etcd election: won the leader key (revision ${c.revision})`,
      },
    ],
  };
}

export function logLost(c: EtcdContext, reason: LossReason): EtcdStep {
  return {
    context: c,
    effects: [
      {
        kind: 'log',
        level: 'warn',
        event: 'election.etcd.lost',
        fields: { reason },
        msg: `etcd election: stopped acting as leader (${reason})`,
      },
    ],
  };
}
