import type { DowningEvent, SbrViewMessage } from './downing-messages.js';
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
 * (downing-machine.ts) only wires them to states and delays, and its named action executes the
 * effects, so a run replays from its events alone.
 *
 * Each event is taken once, by `decide` (or `observe` in states that do not route on it): it
 * computes the next context, with what follows from it (who is unreachable, the strategy's
 * verdict), and what the event changed (`news`), which is all the machine's guards read.
 */

export interface DowningContext {
  readonly view: SbrViewMessage | undefined;
  /** Peers this node's failure detector monitors and reaches. */
  readonly ownReachable: ReadonlySet<string>;
  /** Who is unreachable and who indirectly connected, by the view and ownReachable (undefined before a view). */
  readonly partition: PartitionView | undefined;
  /** Keys of the up members: a member becoming up is a membership change. */
  readonly up: ReadonlySet<string>;
  /**
   * The strategy's resolution of what this node knows now (undefined before a view, under
   * lease-majority, and when the resolver is inactive).
   */
  readonly resolution: SbrResolution | undefined;
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
  /** What the event `decide` just took changed, for the guards that route it; undefined at rest. */
  readonly news: DowningNews | undefined;
}

/** What one event changed, in the terms the machine's transitions ask (Akka's). */
export interface DowningNews {
  /** A member counted here crossed over: this member downed itself at once (see recant). */
  readonly recanted: boolean;
  /** A member became up (Akka's rule: only an up restarts stable-after; see memberUp). */
  readonly memberUp: boolean;
  /** Who is unreachable or indirectly connected changed (Akka's reachability change). */
  readonly reachabilityChanged: boolean;
  /** A reachability change that cannot change this member's losing verdict (see losingStill). */
  readonly losingStill: boolean;
}

const NOBODY: ReadonlySet<string> = new Set();

export const initialDowningContext: DowningContext = {
  view: undefined,
  ownReachable: NOBODY,
  partition: undefined,
  up: NOBODY,
  resolution: undefined,
  lastDecision: undefined,
  warnedClusterSize: 0,
  absent: [],
  news: undefined,
};

/** What the machine's named action carries out. */
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

/** Settings a decision depends on (from the cluster's configuration). */
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
    ownReachable: ctx.ownReachable,
    absent: ctx.absent,
  };
}

/**
 * The context after an event, as far as the event alone says: views and own reachability both
 * only replace what they carry, and who is unreachable and who is up follow from them. The
 * strategy's resolution and the members remembered as absent are observe's.
 */
export function take(ctx: DowningContext, event: DowningEvent): DowningContext {
  const next: DowningContext =
    event.type === 'sbr.view'
      ? { ...ctx, view: event, up: upOf(event) }
      : { ...ctx, ownReachable: new Set(event.reachable) };
  const input = inputOf(next);
  return { ...next, partition: input && partitionView(input), resolution: undefined };
}

function upOf(view: SbrViewMessage): ReadonlySet<string> {
  return new Set(view.members.filter((m) => m.status === 'up').map((m) => m.key));
}

/** The strategy's resolution of this context, kept in it (see DowningContext.resolution). */
function resolved(policy: DowningPolicy, ctx: DowningContext): DowningContext {
  const input = inputOf(ctx);
  const resolution = policy.strategy && input ? resolve(policy.strategy, input, ctx.partition) : undefined;
  return { ...ctx, resolution };
}

/** Someone is unreachable or indirectly connected: the resolver has work to do. */
export function isTroubled(ctx: DowningContext): boolean {
  const p = ctx.partition;
  return p !== undefined && (p.unreachable.size > 0 || p.indirect.size > 0);
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((k) => b.has(k));
}

/** Did who is unreachable or indirectly connected change (before a view, nobody is either)? */
function reachabilityChanged(before: DowningContext, after: DowningContext): boolean {
  const [b, a] = [before.partition, after.partition];
  if (b === undefined || a === undefined) return b !== a;
  return !sameSet(b.unreachable, a.unreachable) || !sameSet(b.indirect, a.indirect);
}

/**
 * Did a member become up (Akka's rule: only an up restarts stable-after)? Joins, leaves and
 * removals do not: a restarted incarnation that joins the losing side's decider while it waits
 * must not postpone that side's decision past the winners' down-removal margin.
 */
function memberUp(before: DowningContext, after: DowningContext): boolean {
  return after.up !== before.up && [...after.up].some((k) => !before.up.has(k));
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
function losingStill(before: DowningContext, after: DowningContext): boolean {
  const indirectBefore = before.partition?.indirect ?? NOBODY;
  const indirectAfter = after.partition?.indirect ?? NOBODY;
  if (!sameSet(indirectBefore, indirectAfter)) return false;
  const unreachableAfter = after.partition?.unreachable ?? NOBODY;
  if (![...(before.partition?.unreachable ?? NOBODY)].every((k) => unreachableAfter.has(k))) return false;
  return downsOwnSide(before) && downsOwnSide(after);
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
  const cutOff = (k: string) =>
    (ctx.partition?.unreachable.has(k) ?? false) || (ctx.partition?.indirect.has(k) ?? false);
  const gone = (ctx.view?.members ?? []).filter((m) => !keys.has(m.key) && cutOff(m.key));
  const known = new Set(ctx.absent.map((m) => m.key));
  const merged = [...ctx.absent, ...gone.filter((m) => !known.has(m.key))];
  const kept = merged.filter((m) => !keys.has(m.key) && !addresses.has(m.address));
  return kept.length === ctx.absent.length && kept.every((m, i) => m === ctx.absent[i]) ? ctx.absent : kept;
}

/**
 * The next context (with the members remembered as absent and the strategy's resolution) plus
 * the static-quorum warning when the cluster grew past 2·quorum − 1. What the states that do not
 * route on an event do with it.
 */
export function observe(policy: DowningPolicy, ctx: DowningContext, event: DowningEvent): DowningStep {
  const taken = take(ctx, event);
  const next = resolved(
    policy,
    policy.remembersDowned ? { ...taken, absent: absentAfter(ctx, event) } : taken,
  );
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

/**
 * One event, once: observe's context and effects, this member downing itself at once when the
 * event puts it on a losing side while members are remembered as absent (recant), and what the
 * event changed (`news`) for the guards that route it.
 */
export function decide(policy: DowningPolicy, ctx: DowningContext, event: DowningEvent): DowningStep {
  const seen = observe(policy, ctx, event);
  const recanted = recant(ctx, seen);
  const step = recanted ?? seen;
  const news: DowningNews = {
    recanted: recanted !== undefined,
    memberUp: memberUp(ctx, seen.context),
    reachabilityChanged: reachabilityChanged(ctx, seen.context),
    losingStill: losingStill(ctx, seen.context),
  };
  return { context: { ...step.context, news }, effects: step.effects };
}

/** The event `decide` took has been routed. */
export function settle(ctx: DowningContext): DowningStep {
  return { context: ctx.news === undefined ? ctx : { ...ctx, news: undefined }, effects: [] };
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
export function forgetAbsent(policy: DowningPolicy, ctx: DowningContext): DowningStep {
  return { context: ctx.absent.length === 0 ? ctx : resolved(policy, { ...ctx, absent: [] }), effects: [] };
}

/**
 * While members downed lately are remembered, a member counted on this side going unreachable
 * can turn this side into the minority: the earlier decision counted a member that had already
 * crossed over. The other side then survives and starts singletons after its down-removal
 * margin, which may end before this side's next stable-after would. So a member this event puts
 * on a losing side downs itself at once, without waiting (downing only itself is always safe).
 * undefined when nothing is remembered or this side still survives. `seen`: observe's step.
 */
function recant(ctx: DowningContext, seen: DowningStep): DowningStep | undefined {
  if (seen.context.absent.length === 0) return undefined;
  // already out: once is enough
  const self = seen.context.view?.selfKey;
  if (
    self !== undefined &&
    ctx.lastDecision?.decision !== 'down-unreachable' &&
    ctx.lastDecision?.down.includes(self)
  )
    return undefined;
  const own = selfDowning(seen.context);
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
  const partition = ctx.partition;
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

/** The decider's decision for its side (a strategy's): log it and have the membership carry it out. */
export function decideForSide(ctx: DowningContext): DowningStep {
  return decided(ctx, ctx.resolution!);
}

/** lease-majority, once the lease attempt is over. */
export function decideWithLease(ctx: DowningContext, acquired: boolean): DowningStep {
  return decided(ctx, resolveWithLease(inputOf(ctx)!, acquired, ctx.partition));
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

/** The strategy's resolution takes this member's whole side down, this member with it. */
export function downsOwnSide(ctx: DowningContext): boolean {
  const selfKey = ctx.view?.selfKey;
  const resolution = ctx.resolution;
  if (selfKey === undefined || !resolution) return false;
  if (resolution.decision !== 'down-reachable' && resolution.decision !== 'down-all') return false;
  return resolution.down.includes(selfKey);
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
export function selfDowning(ctx: DowningContext): DowningStep | undefined {
  if (!downsOwnSide(ctx)) return undefined;
  const selfKey = ctx.view!.selfKey;
  const resolution = ctx.resolution!;
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
  const { unreachable, indirect } = ctx.partition!;
  const resolution: SbrResolution = {
    decision: 'down-all',
    down: input.members.map((m) => m.key),
    unreachable: [...unreachable],
    indirectlyConnected: [...indirect],
    reason: 'still unstable after stable-after + down-all-when-unstable',
  };
  return decided(ctx, resolution);
}
