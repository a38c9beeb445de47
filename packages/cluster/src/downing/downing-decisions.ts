import { isLive, memberKey } from '../member.js';
import type { MembershipContext } from '../membership-protocol.js';
import { Recent } from './recent.js';
import {
  countsAbsent,
  type PartitionView,
  partitionView,
  resolve,
  resolveWithLease,
  type SbrInput,
  type SbrResolution,
} from './resolver.js';
import type { SbrMember } from './sbr-view.js';
import type { StrategyConfig } from './strategies.js';

/**
 * The split-brain resolver's decisions as pure functions of (context, event): what the downing
 * machine knows, what changed, who decides, and the effects to carry out, as data. The machine
 * (downing-machine.ts) only wires them to states and delays, and its named actions execute the
 * effects, so a run replays from its events alone.
 */

/** Membership -> downing: what this node currently knows (sent after every change). */
export interface SbrViewMessage {
  readonly type: 'sbr.view';
  readonly selfKey: string;
  readonly version: number;
  readonly members: readonly SbrMember[];
  readonly observations: Readonly<Record<string, readonly string[]>>;
}

/** Failure detector -> downing: the peers it monitors and currently reaches (sent on every change). */
export interface OwnReachabilityMessage {
  readonly type: 'sbr.own-reachability';
  readonly reachable: readonly string[];
}

export type DowningEvent = SbrViewMessage | OwnReachabilityMessage;

export function sbrViewMessage(selfKey: string, ctx: MembershipContext): SbrViewMessage {
  const m = ctx.membership!;
  return {
    type: 'sbr.view',
    selfKey,
    version: m.version,
    members: m.members
      .filter((x) => isLive(x.status))
      .map((x) => ({ key: memberKey(x), address: x.address, age: x.age, status: x.status, roles: x.roles })),
    observations: ctx.observations,
  };
}

export interface DowningContext {
  readonly view: SbrViewMessage | undefined;
  /** Peers this node's failure detector monitors and reaches, sorted. */
  readonly ownReachable: readonly string[];
  /** Unreachable + indirectly connected members: a change is a reachability change. */
  readonly reachability: string;
  /** Keys of the up members, sorted: a member becoming up is a membership change. */
  readonly memberSignature: string;
  readonly lastDecision: SbrResolution | undefined;
  readonly warnedClusterSize: number;
  /**
   * Members this node could not reach that left the view lately (downed, mostly by this side's
   * own decision), forgotten one failure-detection time after the last of them left. A member
   * counted on this side can have crossed to the other side within the detection window before
   * the decision: both sides then counted it and both "won", and the other side still runs. Until
   * such a member would have been found unreachable, counting strategies count the downed members
   * over there.
   */
  readonly absent: readonly SbrMember[];
}

export const initialDowningContext: DowningContext = {
  view: undefined,
  ownReachable: [],
  reachability: '',
  memberSignature: '',
  lastDecision: undefined,
  warnedClusterSize: 0,
  absent: [],
};

/** What the machine's named actions carry out. */
export type DowningEffect =
  | {
      readonly kind: 'log-decision';
      /** `decider`: decides for its whole side; `self`: a member of a losing side downs itself. */
      readonly by: 'decider' | 'self';
      readonly resolution: SbrResolution;
      readonly members: readonly string[];
      readonly version: number | undefined;
    }
  | { readonly kind: 'execute'; readonly down: readonly string[]; readonly unreachable: readonly string[] }
  /** `side`: the other members this decision takes down that this node still reaches (told first). */
  | { readonly kind: 'down-self'; readonly side: readonly string[] }
  | { readonly kind: 'warn-quorum-exceeded'; readonly size: number; readonly quorumSize: number };

export interface DowningStep {
  readonly context: DowningContext;
  readonly effects: readonly DowningEffect[];
}

/** Settings a decision depends on (from ClusterConfig). */
export interface DowningPolicy {
  /** undefined under lease-majority (resolved with the lease) and when inactive. */
  readonly strategy: StrategyConfig | undefined;
  readonly usesLease: boolean;
  /** static-quorum's quorum size: a larger cluster is warned about. */
  readonly quorumSize: number | undefined;
  /** The strategy counts sides: members downed lately are remembered (DowningContext.absent). */
  readonly remembersDowned: boolean;
}

export function downingPolicy(
  strategy: StrategyConfig | undefined,
  usesLease: boolean,
  quorumSize: number | undefined,
): DowningPolicy {
  return { strategy, usesLease, quorumSize, remembersDowned: countsAbsent(strategy) };
}

export function inputOf(ctx: DowningContext): SbrInput | undefined {
  const view = ctx.view;
  if (!view) return undefined;
  return {
    members: view.members,
    observations: view.observations,
    selfKey: view.selfKey,
    ownReachable: new Set(ctx.ownReachable),
    absent: ctx.absent,
  };
}

/** partitionView depends on the view and this node's reachable peers only (not on `absent`). */
const partitions = new Recent<Pick<DowningContext, 'view' | 'ownReachable'>, PartitionView | undefined>(
  4,
  (a, b) => a.view === b.view && a.ownReachable === b.ownReachable,
);

/** Who is unreachable and who indirectly connected, by this context (undefined before a view). */
function partitionOf(ctx: DowningContext): PartitionView | undefined {
  return partitions.get(ctx, () => {
    const input = inputOf(ctx);
    return input && partitionView(input);
  });
}

function reachabilityOf(ctx: DowningContext): string {
  const partition = partitionOf(ctx);
  if (!partition) return '';
  const { indirect, unreachable } = partition;
  return `${[...unreachable].sort().join(',')}|${[...indirect].sort().join(',')}`;
}

const resolutions = new Recent<
  { readonly strategy: StrategyConfig; readonly ctx: DowningContext },
  SbrResolution | undefined
>(4, (a, b) => a.strategy === b.strategy && a.ctx === b.ctx);

/** The strategy's decision on this context (undefined before a view). */
function resolutionOf(strategy: StrategyConfig, ctx: DowningContext): SbrResolution | undefined {
  return resolutions.get({ strategy, ctx }, () => {
    const input = inputOf(ctx);
    return input && resolve(strategy, input, partitionOf(ctx));
  });
}

function memberSignatureOf(view: SbrViewMessage | undefined): string {
  if (!view) return '';
  return view.members
    .filter((m) => m.status === 'up')
    .map((m) => m.key)
    .sort()
    .join(',');
}

/**
 * The last context `take` computed. The machine's guards and its action each ask for it (three
 * to four times per event, one after another in one transition); the answer is a pure function of
 * (context, event), so the last one is kept, and a membership change costs one pass over the
 * members instead of four.
 */
const takes = new Recent<{ readonly ctx: DowningContext; readonly event: DowningEvent }, DowningContext>(
  1,
  (a, b) => a.ctx === b.ctx && a.event === b.event,
);

/** The context after an event (views and own reachability both only replace what they carry). */
export function take(ctx: DowningContext, event: DowningEvent): DowningContext {
  return takes.get({ ctx, event }, () => takeAnew(ctx, event));
}

function takeAnew(ctx: DowningContext, event: DowningEvent): DowningContext {
  const next: DowningContext =
    event.type === 'sbr.view'
      ? { ...ctx, view: event }
      : { ...ctx, ownReachable: [...new Set(event.reachable)].sort() };
  return { ...next, reachability: reachabilityOf(next), memberSignature: memberSignatureOf(next.view) };
}

/** Someone is unreachable or indirectly connected: the resolver has work to do. */
export function isTroubled(ctx: DowningContext): boolean {
  return ctx.reachability !== '' && ctx.reachability !== '|';
}

/** Would this event leave the cluster troubled? */
export function troubledAfter(ctx: DowningContext, event: DowningEvent): boolean {
  return isTroubled(take(ctx, event));
}

/** Did this event change who is unreachable or indirectly connected (Akka's reachability change)? */
export function reachabilityChanges(ctx: DowningContext, event: DowningEvent): boolean {
  return take(ctx, event).reachability !== ctx.reachability;
}

/**
 * A reachability change that cannot change this member's verdict: its side already loses, and
 * the change only adds unreachable members (nobody reachable again, no one indirectly connected
 * anew). A member nobody here has found unreachable yet counts on this side, so finding more only
 * shrinks this side and grows the other: every strategy's losing verdict stands (keep-majority,
 * static-quorum, keep-oldest and down-all are monotone that way). Such a change does not restart
 * stable-after. It matters after a cut: observers that lost their ring targets walk on to the next
 * members and judge them a detection time later, so a side can keep finding members of the other
 * side for a few rounds, and waiting out each round kept a losing side up seconds after the
 * other side had decided.
 */
export function losingStill(policy: DowningPolicy, ctx: DowningContext, event: DowningEvent): boolean {
  const strategy = policy.strategy;
  const after = observe(policy, ctx, event).context;
  const [unreachableBefore = '', indirectBefore = ''] = ctx.reachability.split('|');
  const [unreachableAfter = '', indirectAfter = ''] = after.reachability.split('|');
  if (indirectBefore !== indirectAfter) return false;
  const grown = new Set(unreachableAfter.split(',').filter((k) => k !== ''));
  if (!unreachableBefore.split(',').every((k) => k === '' || grown.has(k))) return false;
  return selfDowning(strategy, ctx) !== undefined && selfDowning(strategy, after) !== undefined;
}

/**
 * Did a member become up (Akka's rule: only an up restarts stable-after)? Joins, leaves and
 * removals do not: a restarted incarnation that joins the losing side's decider while it waits
 * must not postpone that side's decision past the winners' down-removal margin.
 */
export function membershipChanges(ctx: DowningContext, event: DowningEvent): boolean {
  const before = new Set(ctx.memberSignature.split(','));
  const after = take(ctx, event).memberSignature;
  return after !== '' && after.split(',').some((k) => !before.has(k));
}

/**
 * Who is absent after this event: members of the previous view that this node could not reach
 * (unreachable or indirectly connected) and that are missing from the new one. Only those may
 * still run elsewhere: a member that left while still talking to us (a graceful leave, a member
 * of ours taking itself out) is really gone. A new incarnation at a remembered address proves the
 * old process gone; a new incarnation of this node starts with no memory.
 */
function absentAfter(ctx: DowningContext, event: DowningEvent): readonly SbrMember[] {
  if (event.type !== 'sbr.view') return ctx.absent;
  if (ctx.view && ctx.view.selfKey !== event.selfKey) return [];
  // nobody was cut off and nobody is remembered (joins, leaves): nothing can be absent
  if (ctx.absent.length === 0 && !isTroubled(ctx)) return ctx.absent;
  const keys = new Set(event.members.map((m) => m.key));
  const addresses = new Set(event.members.map((m) => m.address));
  const cutOff = new Set(ctx.reachability.split(/[|,]/).filter((k) => k !== ''));
  const gone = (ctx.view?.members ?? []).filter((m) => !keys.has(m.key) && cutOff.has(m.key));
  const known = new Set(ctx.absent.map((m) => m.key));
  const merged = [...ctx.absent, ...gone.filter((m) => !known.has(m.key))];
  const kept = merged.filter((m) => !keys.has(m.key) && !addresses.has(m.address));
  return kept.length === ctx.absent.length && kept.every((m, i) => m === ctx.absent[i]) ? ctx.absent : kept;
}

const observed = new Recent<
  { readonly policy: DowningPolicy; readonly ctx: DowningContext; readonly event: DowningEvent },
  DowningStep
>(1, (a, b) => a.policy === b.policy && a.ctx === b.ctx && a.event === b.event);

/**
 * The next context plus the static-quorum warning when the cluster grew past 2·quorum − 1. Kept
 * for the last (policy, context, event), as take is: the guards judge the very context the
 * action then assigns.
 */
export function observe(policy: DowningPolicy, ctx: DowningContext, event: DowningEvent): DowningStep {
  return observed.get({ policy, ctx, event }, () => observeAnew(policy, ctx, event));
}

function observeAnew(policy: DowningPolicy, ctx: DowningContext, event: DowningEvent): DowningStep {
  const taken = take(ctx, event);
  const next = policy.remembersDowned ? { ...taken, absent: absentAfter(ctx, event) } : taken;
  const size = next.view?.members.length ?? 0;
  const q = policy.quorumSize;
  if (q === undefined || size <= 2 * q - 1 || size === ctx.warnedClusterSize) {
    return { context: next, effects: [] };
  }
  return {
    context: { ...next, warnedClusterSize: size },
    effects: [{ kind: 'warn-quorum-exceeded', size, quorumSize: q }],
  };
}

/** Does `after` remember a member as absent that `before` did not? */
export function remembersNew(before: DowningContext, after: DowningContext): boolean {
  const known = new Set(before.absent.map((m) => m.key));
  return after.absent.some((m) => !known.has(m.key));
}

/**
 * The detection time has passed since the last member was remembered: a member counted here that
 * was already silent then would have been found unreachable by now.
 */
export function forgetAbsent(ctx: DowningContext): DowningStep {
  return { context: ctx.absent.length === 0 ? ctx : { ...ctx, absent: [] }, effects: [] };
}

/**
 * While members downed lately are remembered, a member counted on this side going unreachable
 * can turn this side into the minority: the earlier decision counted a member that had already
 * crossed over. The other side then survives and starts singletons after its down-removal
 * margin, which may end before this side's next stable-after would. So a member this event puts
 * on a losing side downs itself at once, without waiting (downing only itself is always safe).
 * undefined when nothing is remembered or this side still survives.
 */
export function recant(
  policy: DowningPolicy,
  ctx: DowningContext,
  event: DowningEvent,
): DowningStep | undefined {
  const seen = observe(policy, ctx, event);
  if (seen.context.absent.length === 0) return undefined;
  // already out: once is enough
  const self = seen.context.view?.selfKey;
  if (
    self !== undefined &&
    ctx.lastDecision?.decision !== 'down-unreachable' &&
    ctx.lastDecision?.down.includes(self)
  )
    return undefined;
  const own = selfDowning(policy.strategy, seen.context);
  if (!own) return undefined;
  // Only itself: a recant is a guess (a member counted here may have crossed over, or may only
  // have stalled on a loaded host), so it is not passed on to the side as a decision is.
  const alone = own.effects.map((e) => (e.kind === 'down-self' ? { ...e, side: [] } : e));
  return { context: own.context, effects: [...seen.effects, ...alone] };
}

/**
 * The decider of a side: its lowest-age member among those this node can count on hearing from
 * (itself, those nobody reports unreachable, and those its own detector reaches). Indirectly
 * connected members that still talk to this side may decide (often the coordinator is one): one
 * writer per side. A member that is only "indirect" because a dead node once reported it cannot.
 */
export function isDecider(ctx: DowningContext): boolean {
  const input = inputOf(ctx);
  const partition = partitionOf(ctx);
  if (!input || !partition) return false;
  const { unreachable } = partition;
  const subjects = new Set(
    Object.keys(input.observations).filter((k) => (input.observations[k]?.length ?? 0) > 0),
  );
  const here = input.members.filter(
    (m) =>
      !unreachable.has(m.key) &&
      (m.key === input.selfKey || !subjects.has(m.key) || input.ownReachable.has(m.key)),
  );
  const candidates = here.some((m) => m.status === 'up') ? here.filter((m) => m.status === 'up') : here;
  const lowest = [...candidates].sort((a, b) => a.age - b.age)[0];
  return lowest?.key === input.selfKey;
}

function logged(
  by: 'decider' | 'self',
  resolution: SbrResolution,
  ctx: DowningContext,
): DowningEffect & { kind: 'log-decision' } {
  return {
    kind: 'log-decision',
    by,
    resolution,
    members: ctx.view?.members.map((m) => m.key) ?? [],
    version: ctx.view?.version,
  };
}

/** The decider's decision for its side: log it and have the membership carry it out. */
export function decideForSide(strategy: StrategyConfig, ctx: DowningContext): DowningStep {
  return decided(ctx, resolutionOf(strategy, ctx)!);
}

/** lease-majority, once the lease attempt is over. */
export function decideWithLease(ctx: DowningContext, acquired: boolean): DowningStep {
  return decided(ctx, resolveWithLease(inputOf(ctx)!, acquired));
}

function decided(ctx: DowningContext, resolution: SbrResolution): DowningStep {
  return {
    context: { ...ctx, lastDecision: resolution },
    effects: [
      logged('decider', resolution, ctx),
      { kind: 'execute', down: resolution.down, unreachable: resolution.unreachable },
    ],
  };
}

/**
 * One decision, one side: every member of a side computes the same pure decision from the same
 * view. When the decision takes its whole side down (down-reachable, down-all), a member that is
 * not the decider downs itself on its own clock: the side goes down in one round even when the
 * decider's news is lost (the decider downs itself too and may stop before its updates leave).
 * Views reach stability a few hundred ms apart, so the first member to decide tells the rest of
 * its side (the members it still reaches) before it goes: otherwise its exit is a reachability
 * change for them, their stable-after starts over, and the side goes down one round at a time.
 * A down is final whoever took it (any live member's downed-notice takes its receiver out), and
 * the side it tells is the one its decision takes down anyway. undefined when the decision does
 * not take this member down (it waits for the decider, as before).
 */
export function selfDowning(
  strategy: StrategyConfig | undefined,
  ctx: DowningContext,
): DowningStep | undefined {
  const selfKey = ctx.view?.selfKey;
  const resolution = strategy && resolutionOf(strategy, ctx);
  if (selfKey === undefined || !resolution) return undefined;
  if (resolution.decision !== 'down-reachable' && resolution.decision !== 'down-all') return undefined;
  if (!resolution.down.includes(selfKey)) return undefined;
  const across = new Set([...resolution.unreachable, ...resolution.indirectlyConnected, selfKey]);
  return {
    context: { ...ctx, lastDecision: resolution },
    effects: [
      logged('self', resolution, ctx),
      { kind: 'down-self', side: resolution.down.filter((k) => !across.has(k)) },
    ],
  };
}

/**
 * Still unstable after stable-after + down-all-when-unstable: reachability kept changing while
 * someone was unreachable. Every member downs all (no decider needed: it is the safe outcome).
 */
export function downAllWhenUnstable(ctx: DowningContext): DowningStep {
  const input = inputOf(ctx)!;
  const { unreachable, indirect } = partitionOf(ctx)!;
  const resolution: SbrResolution = {
    decision: 'down-all',
    down: input.members.map((m) => m.key),
    unreachable: [...unreachable],
    indirectlyConnected: [...indirect],
    reason: 'still unstable after stable-after + down-all-when-unstable',
  };
  return decided(ctx, resolution);
}
