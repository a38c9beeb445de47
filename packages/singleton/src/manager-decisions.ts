import { type Membership, memberKey } from '@doyen/cluster';
import type { ActorRef, DecisionStep, LogEffect } from '@doyen/core';
import type { HandedOver, HandOverToMe, Identify } from './messages.js';
import { fateOf } from './oldest.js';

/**
 * The singleton manager's decisions as pure functions of (context, event): what it knows, the
 * predicates its guards ask, and each step's next context with its effects as data. The machine
 * (manager-machine.ts) wires them to states and delays; its one action `run` executes the
 * effects (start or stop the instance, send, log), so a run replays from its events alone.
 */

export type ManagerEvent =
  /**
   * `mandate`: a leased placement lets this node run the instance now (absent: true);
   * `blockedBy`: the member holding the lease this node bids for in vain.
   */
  | {
      readonly type: 'singleton.membership';
      readonly membership: Membership;
      readonly mandate?: boolean;
      readonly blockedBy?: string;
    }
  | { readonly type: 'singleton.drain-progress'; readonly proxy: string }
  /** The instance's mailbox size, measured by the `check-backlog` effect and sent back. */
  | { readonly type: 'singleton.backlog'; readonly size: number }
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
  /** The instance's inbox while it runs here. */
  readonly inbox: ActorRef | undefined;
  readonly handOverTo: ActorRef | undefined;
  readonly pendingDrains: readonly string[];
  /** A leased placement's word: this node may run the instance now. */
  readonly mandate: boolean;
  /** The member holding the lease we bid for, and the one we last asked to hand over because of that. */
  readonly blockedBy: string | undefined;
  readonly askedBlocker: string | undefined;
}

export const initialManagerContext: ManagerContext = {
  membership: undefined,
  oldestKey: undefined,
  formerOldest: undefined,
  retries: 0,
  snapshot: null,
  inbox: undefined,
  handOverTo: undefined,
  pendingDrains: [],
  mandate: true,
  blockedBy: undefined,
  askedBlocker: undefined,
};

/** What a decision depends on besides the context: who we are and where singletons run. */
export interface ManagerPolicy {
  readonly name: string;
  readonly selfKey: string;
  /** The instance's inbox (a fixed path on this node): proxies forward there while it runs. */
  readonly inbox: ActorRef;
  /** Key of the member the placement puts the singleton on. */
  readonly hostKeyOf: (membership: Membership) => string | undefined;
  /** An elected host (exclusive placement) stops at once when it loses its mandate. */
  readonly exclusive: boolean;
  /** A leased host stops at once when its lease ends, and hands over while it holds it. */
  readonly leased: boolean;
  readonly maxHandOverRetries: number;
}

/** What the machine's action `run` carries out. */
export type ManagerEffect =
  | LogEffect
  /** HandOverToMe to the manager at `formerKey`, replies to ours. */
  | { readonly kind: 'ask-hand-over'; readonly formerKey: string }
  /** Start the instance (from a handed-over snapshot when given). */
  | { readonly kind: 'start-instance'; readonly snapshot: unknown }
  /** Stop the instance; with `confirmTo`, send it HandedOver carrying the instance's last snapshot. */
  | { readonly kind: 'stop-instance'; readonly reason: string; readonly confirmTo: ActorRef | undefined }
  /** HandedOver with no snapshot: nothing runs here. */
  | { readonly kind: 'answer-not-running'; readonly to: ActorRef }
  | { readonly kind: 'identity'; readonly to: ActorRef; readonly inbox: ActorRef }
  /** HandOverStarted to the proxy of every member in `proxies`: drain towards `inbox`. */
  | { readonly kind: 'hand-over-started'; readonly proxies: readonly string[]; readonly inbox: ActorRef }
  /** Measure the instance's mailbox and send it back as `singleton.backlog`. */
  | { readonly kind: 'check-backlog' };

export type ManagerStep = DecisionStep<ManagerContext, ManagerEffect>;

const log = (
  policy: ManagerPolicy,
  event: string,
  fields: Record<string, unknown>,
  msg: string,
  level: 'info' | 'warn' = 'info',
): ManagerEffect => ({ kind: 'log', level, event, fields: { singleton: policy.name, ...fields }, msg });

// ---- what the context says -------------------------------------------------------------------

function selfStatus(policy: ManagerPolicy, ctx: ManagerContext) {
  return ctx.membership?.members.find((m) => memberKey(m) === policy.selfKey)?.status;
}

/** This node is no longer a member (down, removed, or absent from the view). */
export function selfGone(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  const s = selfStatus(policy, ctx);
  return s === undefined || s === 'down' || s === 'removed';
}

/** Exiting: the coordinator is about to remove us; an instance must not outlive our membership. */
export function selfExitingOrGone(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  return selfGone(policy, ctx) || selfStatus(policy, ctx) === 'exiting';
}

export function isOldest(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  return ctx.oldestKey === policy.selfKey;
}

function formerFate(ctx: ManagerContext) {
  return ctx.formerOldest === undefined ? undefined : fateOf(ctx.formerOldest, ctx.membership!);
}

/** Exclusive placement: the former host is gone or cut off, so it cannot hand over (and stopped acting). */
function formerOutOfReach(ctx: ManagerContext): boolean {
  return (
    ctx.formerOldest === undefined ||
    formerFate(ctx) !== 'alive' ||
    ctx.membership!.unreachable.includes(ctx.formerOldest)
  );
}

/** Oldest with nobody to wait for: the first oldest, or an elected host whose former one is out of reach. */
export function startsAtOnce(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  if (!isOldest(policy, ctx)) return false;
  return ctx.formerOldest === undefined || (policy.exclusive && formerOutOfReach(ctx));
}

/** Oldest, and the former oldest is still a member: ask it to hand over. */
export function formerCanHandOver(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  return isOldest(policy, ctx) && formerFate(ctx) === 'alive';
}

/** While asking: the former oldest left the membership without confirming (downed or removed). */
export function formerGoneWithoutHandOver(ctx: ManagerContext): boolean {
  return ctx.formerOldest !== undefined && formerFate(ctx) !== 'alive';
}

/** While asking: nobody to wait for any more. */
export function nobodyToAsk(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  return ctx.formerOldest === undefined || (policy.exclusive && formerOutOfReach(ctx));
}

/**
 * A host that lost its mandate stops at once: another may start soon. An elected host loses it
 * with the election; a leased host with its lease (while it holds that, it hands over gracefully).
 */
export function lostMandate(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  if (policy.leased) return !ctx.mandate;
  return policy.exclusive && !isOldest(policy, ctx);
}

/**
 * A leased host waiting for its lease, which another live member we reach still holds (it ran the
 * instance while we were cut off): ask that one to hand over, once.
 */
export function blockedByFormerHost(policy: ManagerPolicy, ctx: ManagerContext): boolean {
  const blocker = ctx.blockedBy;
  return (
    policy.leased &&
    blocker !== undefined &&
    blocker !== policy.selfKey &&
    blocker !== ctx.askedBlocker &&
    ctx.membership !== undefined &&
    fateOf(blocker, ctx.membership) === 'alive' &&
    !ctx.membership.unreachable.includes(blocker)
  );
}

/** Ask the lease's holder to hand over, as a new oldest asks the former one. */
export function askBlocker(ctx: ManagerContext): ManagerStep {
  return same({ ...ctx, formerOldest: ctx.blockedBy, askedBlocker: ctx.blockedBy });
}

/** The placement lets this node run the instance now (a leased host: it holds the lease). */
export function hasMandate(ctx: ManagerContext): boolean {
  return ctx.mandate;
}

/** Only the node we take for the new oldest may ask for the instance. */
export function askedByNewOldest(ctx: ManagerContext, event: ManagerEvent): boolean {
  return (
    event.type === 'singleton.hand-over-to-me' &&
    ctx.oldestKey !== undefined &&
    ctx.oldestKey === memberKey(event.replyTo.address.node)
  );
}

/** Only the former oldest we asked may say it stopped its instance. */
export function handedOverByFormer(ctx: ManagerContext, event: ManagerEvent): boolean {
  return event.type === 'singleton.handed-over' && event.from === ctx.formerOldest;
}

export function drained(ctx: ManagerContext): boolean {
  return ctx.pendingDrains.length === 0;
}

export function backlogEmpty(event: ManagerEvent): boolean {
  return event.type === 'singleton.backlog' && event.size === 0;
}

// ---- steps -----------------------------------------------------------------------------------

const same = (context: ManagerContext): ManagerStep => ({ context, effects: [] });

/** A new membership: the oldest it names, and the former one when that changed to us. */
export function takeMembership(policy: ManagerPolicy, ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.membership') return same(ctx);
  const oldestKey = policy.hostKeyOf(event.membership);
  const changedToUs = oldestKey === policy.selfKey && ctx.oldestKey !== policy.selfKey;
  return same({
    ...ctx,
    membership: event.membership,
    oldestKey,
    formerOldest: changedToUs ? ctx.oldestKey : ctx.formerOldest,
    mandate: event.mandate ?? true,
    blockedBy: event.blockedBy,
  });
}

/** The host waits for its mandate (a leased placement: the lease, and the pause bound after an unclean one). */
export function awaitMandate(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  if (ctx.mandate) return same(ctx);
  return {
    context: ctx,
    effects: [
      log(policy, 'singleton.awaiting-lease', {}, `singleton ${policy.name} waits for the host lease`),
    ],
  };
}

/** Not running here: whoever asks for a hand-over hears that nothing runs. */
export function answerNotRunning(ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.hand-over-to-me') return same(ctx);
  return { context: ctx, effects: [{ kind: 'answer-not-running', to: event.replyTo }] };
}

/** Becoming the oldest: ask the former oldest to hand over (first time). */
export function askFirst(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  return {
    context: { ...ctx, retries: 0 },
    effects: [
      log(
        policy,
        'singleton.hand-over-requested',
        { from: ctx.formerOldest },
        'asking the former oldest to hand over',
      ),
      { kind: 'ask-hand-over', formerKey: ctx.formerOldest! },
    ],
  };
}

/** No answer within the retry interval: ask again (warned once, when the retries run out). */
export function askAgain(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  const retries = ctx.retries + 1;
  const stuck: ManagerEffect[] =
    retries === policy.maxHandOverRetries
      ? [
          log(
            policy,
            'singleton.hand-over-stuck',
            { former: ctx.formerOldest },
            `no hand-over from ${ctx.formerOldest} after ${retries} attempts; waiting until it is removed`,
            'warn',
          ),
        ]
      : [];
  return {
    context: { ...ctx, retries },
    effects: [...stuck, { kind: 'ask-hand-over', formerKey: ctx.formerOldest! }],
  };
}

/** The former oldest confirmed: keep its snapshot for the start. */
export function takeHandOver(ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.handed-over') return same(ctx);
  // a host that handed over is not asked again for the lease it still holds until it releases;
  // a later "not running" answer never erases the snapshot it handed over
  return same({ ...ctx, snapshot: event.snapshot ?? ctx.snapshot, askedBlocker: event.from });
}

/** The former oldest went without a hand-over: wait the down-removal margin before starting. */
export function awaitMargin(policy: ManagerPolicy, ctx: ManagerContext, marginMs: number): ManagerStep {
  return {
    context: ctx,
    effects: [
      log(
        policy,
        'singleton.taking-over',
        { former: ctx.formerOldest, marginMs },
        'former oldest downed: waiting the down-removal margin',
      ),
    ],
  };
}

/** Oldest: start the instance here. */
export function start(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  return {
    context: {
      ...ctx,
      inbox: policy.inbox,
      snapshot: null,
      formerOldest: undefined,
      askedBlocker: undefined,
    },
    effects: [
      { kind: 'start-instance', snapshot: ctx.snapshot },
      log(policy, 'singleton.started', {}, `singleton ${policy.name} started`),
    ],
  };
}

/** A host without its mandate: stop at once (a hand-over in progress hears that it ended). */
export function stopForMandate(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  const reason = policy.leased ? 'lost the host lease' : 'lost the coordinator mandate';
  return {
    context: { ...ctx, inbox: undefined, handOverTo: undefined, pendingDrains: [] },
    effects: [{ kind: 'stop-instance', reason, confirmTo: ctx.handOverTo }],
  };
}

/** A proxy asks where the instance is. */
export function identify(ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.identify' || !ctx.inbox) return same(ctx);
  return { context: ctx, effects: [{ kind: 'identity', to: event.replyTo, inbox: ctx.inbox }] };
}

/** The new oldest asked: remember where the confirmation goes. */
export function acceptHandOverRequest(ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.hand-over-to-me') return same(ctx);
  return same({ ...ctx, handOverTo: event.replyTo });
}

/** Handing over: every live member's proxy must drain towards our inbox first. */
export function startDraining(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  const proxies = (ctx.membership?.members ?? []).map(memberKey);
  return {
    context: { ...ctx, pendingDrains: proxies },
    effects: [
      log(policy, 'singleton.handing-over', { to: ctx.handOverTo?.id }, 'handing over: draining proxies'),
      { kind: 'hand-over-started', proxies, inbox: ctx.inbox! },
    ],
  };
}

export function drainProgress(ctx: ManagerContext, event: ManagerEvent): ManagerStep {
  if (event.type !== 'singleton.drain-progress') return same(ctx);
  return same({ ...ctx, pendingDrains: ctx.pendingDrains.filter((k) => k !== event.proxy) });
}

/** Forwarded messages sit in the instance's mailbox: measure how many are left. */
export function checkBacklog(ctx: ManagerContext): ManagerStep {
  return { context: ctx, effects: [{ kind: 'check-backlog' }] };
}

/** Drained and worked through (or out of time): stop, and confirm to the new oldest. */
export function finishHandOver(policy: ManagerPolicy, ctx: ManagerContext): ManagerStep {
  return {
    context: { ...ctx, inbox: undefined, handOverTo: undefined, pendingDrains: [] },
    effects: [
      { kind: 'stop-instance', reason: 'handed over', confirmTo: ctx.handOverTo },
      log(
        policy,
        'singleton.handed-over',
        { to: ctx.handOverTo?.id },
        `singleton ${policy.name} handed over`,
      ),
    ],
  };
}

/** This node is out: stop a running instance; a hand-over cut short by our exit still completes. */
export function end(ctx: ManagerContext): ManagerStep {
  const effects: ManagerEffect[] = ctx.inbox
    ? [{ kind: 'stop-instance', reason: 'node left the cluster', confirmTo: ctx.handOverTo }]
    : ctx.handOverTo
      ? [{ kind: 'answer-not-running', to: ctx.handOverTo }]
      : [];
  return { context: { ...ctx, inbox: undefined, handOverTo: undefined }, effects };
}
