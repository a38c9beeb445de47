import {
  type ActorRef,
  type DecisionStep,
  formatNodeAddress,
  type LogEffect,
  type Message,
  type NodeAddress,
  nodeKey,
  sameNode,
  type UniqueNodeAddress,
} from '@doyen/core';
import type { SbrViewMessage } from '../downing/downing-messages.js';
import { heartbeatPeers } from '../failure-detector/heartbeat-ring.js';
import type { ClusterConfig } from '../model/config.js';
import { isLive, type Member, nodeOf, oldestOf } from '../model/member.js';
import {
  addJoiner,
  coordinatorOf,
  downMembers,
  findByAddress,
  findMember,
  formCluster,
  liveMembers,
  type Membership,
  type NewMember,
  removeMembers,
  setStatus,
  setUnreachable,
} from '../model/membership.js';
import type { SelfInfo } from '../model/self-info.js';
import { HEARTBEAT_PATH } from '../model/system-actors.js';
import type { SbcView } from '../split-brain-checker/split-brain-checker-messages.js';
import type {
  Ack,
  DownedNotice,
  DownRequest,
  Join,
  JoinSeen,
  Leave,
  Pull,
  ReachabilityChange,
  ReachabilityReport,
  Redirect,
  Update,
  Welcome,
} from './membership-messages.js';
import { sbcView, sbrViewMessage } from './membership-views.js';

export type { SelfInfo } from '../model/self-info.js';

/**
 * The membership protocol as pure functions: (context, input) -> a `MembershipStep` (the next
 * context, its effects as data — one `MembershipEffect` union — and the collector timeouts to
 * schedule). No logger, clock or actor system here: the machine in membership-machine.ts wires
 * these to states and delays, and its one action `run` carries the effects out, so every
 * decision can be tested without a network or a clock.
 */

/** A pending ResultsCollector: answers the joiner once every member acknowledged `version`. */
export interface Collector {
  readonly id: number;
  readonly version: number;
  readonly waiting: readonly string[];
  readonly joiner: string;
  readonly replyTo: ActorRef;
}

/** subject key -> observers (keys) that currently report it unreachable. */
type Observations = Readonly<Record<string, readonly string[]>>;

export interface MembershipContext {
  readonly membership: Membership | undefined;
  readonly attempt: number;
  readonly collectors: readonly Collector[];
  readonly nextCollectorId: number;
  /** subject key -> observers (keys) that currently report it unreachable. */
  readonly observations: Observations;
  readonly failure: string | undefined;
  /**
   * While joining: the first member that answered "your join reached a live cluster"
   * (`membership.join-seen`), by key. Once set, this incarnation never forms a cluster of its own.
   */
  readonly joinSeenBy: string | undefined;
  /** While joining: the attempt during which a member last answered join-seen (a live cluster answers every attempt). */
  readonly joinSeenAttempt: number | undefined;
  /**
   * While joining, on the first forming seed: each other forming seed or last-known member
   * (`host:port`) that asked this node to join, with the attempt of this node's during which it
   * last did. A node asks only while it has no cluster itself.
   */
  readonly joinAskedBy: Readonly<Record<string, number>>;
  /**
   * Every membership adopted, newest last (bounded): one step may adopt several versions
   * (unreachable, then downed), and the edge turns each consecutive pair into events.
   */
  readonly journal: readonly { readonly seq: number; readonly membership: Membership }[];
  /**
   * The membership version and observations the coordinator last evaluated (see
   * `evaluateChanges`): it evaluates again only once either changed, not on a timer.
   */
  readonly evaluated: { readonly version: number; readonly observations: Observations } | undefined;
}

const JOURNAL_MAX = 32;

/** Where an outbound message goes. */
export type Destination =
  | { readonly kind: 'member'; readonly node: UniqueNodeAddress }
  | { readonly kind: 'seed'; readonly address: NodeAddress }
  | { readonly kind: 'ref'; readonly ref: ActorRef }
  | { readonly kind: 'local'; readonly path: string };

/** A message to send, from this node's membership actor (its replies come back to it). */
export interface Outbound {
  readonly kind: 'send';
  readonly to: Destination;
  readonly message: Message;
}

/**
 * Every effect of the membership machine, carried out in order by its one action `run`:
 * - `send`: a message to a member (this incarnation), a seed (any incarnation at the address),
 *   a ref (a joiner or a replier), or a local system actor (the failure detector's new membership);
 * - `publish`: the views of a new membership or new observations, for the split-brain resolver
 *   (`downing`) and the split-brain checker (`checker`): they read these, never this context.
 */
export type MembershipEffect =
  | Outbound
  | { readonly kind: 'publish'; readonly downing: SbrViewMessage; readonly checker: SbcView }
  | LogEffect<'info'>;

/**
 * A decision of the membership protocol: the next context and its effects (the shared
 * `DecisionStep`), and the collector timeouts to schedule (the machine raises
 * `membership.collector-timeout` for each after the ack timeout, as its own delayed event).
 */
export interface MembershipStep extends DecisionStep<MembershipContext, MembershipEffect> {
  readonly timeouts: readonly number[];
}

/** @deprecated The old name of {@link MembershipStep}; kept for one release. */
export type Step = MembershipStep;

export interface Env {
  readonly self: SelfInfo;
  readonly config: ClusterConfig;
  /** This node's membership actor, the `replyTo` of updates and pulls. */
  readonly selfRef: ActorRef;
}

export const initialContext: MembershipContext = {
  membership: undefined,
  attempt: 0,
  collectors: [],
  nextCollectorId: 1,
  observations: {},
  failure: undefined,
  joinSeenBy: undefined,
  joinSeenAttempt: undefined,
  joinAskedBy: {},
  journal: [],
  evaluated: undefined,
};

const noop = (context: MembershipContext): MembershipStep => ({ context, effects: [], timeouts: [] });

// ---- queries ----------------------------------------------------------------------------------

/** Whether `ref` belongs to a live member of `m` (by its node incarnation). */
function isLiveMember(m: Membership, ref: ActorRef): boolean {
  const member = findMember(m, nodeKey(ref.address.node));
  return member !== undefined && isLive(member.status);
}

export function selfMember(env: Env, ctx: MembershipContext): Member | undefined {
  return ctx.membership ? findMember(ctx.membership, env.self.key) : undefined;
}

/**
 * The member this node takes for coordinator: the oldest up member it does not itself find
 * unreachable. Only its updates are believed: after a crash or a partition the next oldest of a
 * side is believed as soon as this node sees the old one unreachable, and a member cannot talk
 * its way into coordinating by sending a membership that leaves the older ones out. "Itself"
 * means its own failure detector for the members it monitors, and the reports of others only
 * for those it does not (a ring beyond ten members): a report from one member that it cannot
 * reach the coordinator must not make everyone stop listening to it.
 */
export function believedCoordinator(env: Env, ctx: MembershipContext): Member | undefined {
  const m = ctx.membership;
  if (!m) return undefined;
  const unreachable = unreachableHere(env, ctx, m);
  return oldestOf(m.members.filter((member) => member.status === 'up' && !unreachable(nodeKey(member))));
}

/**
 * Whether this node itself takes a member for unreachable: by its own failure detector for the
 * members it monitors, by the reports of others only for those it does not (a ring beyond ten
 * members); never itself. A report that one member cannot reach another this node reaches is
 * that member's word against ours: the resolver sets its observer aside (indirectly connected).
 */
function unreachableHere(env: Env, ctx: MembershipContext, m: Membership): (key: string) => boolean {
  // The ring is built only for a member somebody observes unreachable: the machine's guards ask
  // on every event, and building it each time (sorting every member) was a tenth of the CPU of a
  // simulated rolling start of 50, where nobody is unreachable.
  let monitored: ReadonlySet<string> | undefined;
  return (key: string) => {
    if (key === env.self.key) return false;
    const observers = ctx.observations[key];
    if (observers === undefined || observers.length === 0) return false;
    monitored ??= monitoredHere(env, m);
    return monitored.has(key) ? observers.includes(env.self.key) : true;
  };
}

/** The members this node's own failure detector watches (its heartbeat targets) in `m`. */
function monitoredHere(env: Env, m: Membership): ReadonlySet<string> {
  const { targets } = heartbeatPeers(
    { address: env.self.address, uid: env.self.uid },
    liveMembers(m).filter((x) => nodeKey(x) !== env.self.key),
    { config: env.config.heartbeatRing },
  );
  return new Set(targets.map(nodeKey));
}

/**
 * Akka's convergence for moving joiners up, as the coordinator sees it: nobody it takes for
 * unreachable. Reports it contradicts do not hold joins up: a member it reaches hears of the new
 * member from it, so both sides of any later decision count the joiner alike; and one member
 * reporting others it cannot reach (or says it cannot) would otherwise keep every joiner out
 * until the resolver had spoken.
 */
export function convergedHere(env: Env, ctx: MembershipContext): boolean {
  const m = ctx.membership;
  if (!m) return false;
  const unreachable = unreachableHere(env, ctx, m);
  return !unreachableKeys(ctx).some(unreachable);
}

/** Whether `ref` (a sender's reply address, bound to its connection) is the believed coordinator. */
function fromBelievedCoordinator(env: Env, ctx: MembershipContext, ref: ActorRef): boolean {
  const c = believedCoordinator(env, ctx);
  return c !== undefined && nodeKey(c) === nodeKey(ref.address.node);
}

export function isCoordinator(env: Env, ctx: MembershipContext): boolean {
  const c = ctx.membership && coordinatorOf(ctx.membership);
  return c !== undefined && nodeKey(c) === env.self.key;
}

/** The node whose address is the first seed may form the cluster when no other seed answers. */
export function isFirstSeed(env: Env): boolean {
  const first = env.config.seeds[0];
  return first !== undefined && first.host === env.self.node.host && first.port === env.self.node.port;
}

/**
 * Whether this node may form a new cluster now, its join having timed out: only the first seed,
 * only where the configuration lets it, and only while no member answered its join (Akka's
 * rule: the first seed forms a cluster only if no other seed answers its InitJoin). A member
 * that answered means a live cluster exists, however long its welcome takes.
 */
export function mayFormCluster(env: Env, ctx: MembershipContext): boolean {
  return env.config.mayFormCluster && isFirstSeed(env) && ctx.joinSeenBy === undefined;
}

/** The forming seeds (see `ClusterConfig.formingSeeds`): by default the seeds of a node that may form. */
function formingSeedsOf(config: ClusterConfig): readonly NodeAddress[] {
  return config.formingSeeds ?? (config.mayFormCluster ? config.seeds : []);
}

/** The other forming seeds, by `host:port`, when this node is the first of them; else none. */
function otherFormingSeeds(env: Env): readonly string[] {
  const seeds = formingSeedsOf(env.config);
  const first = seeds[0];
  if (first === undefined || !sameNode(first, env.self.node)) return [];
  return seeds.filter((s) => !sameNode(s, env.self.node)).map(formatNodeAddress);
}

/**
 * The members the previous incarnation last knew, this node included, by `host:port` (a
 * restarted member has a new uid, the same address); undefined on a first start (no re-forming).
 */
function lastKnownMembers(env: Env): ReadonlySet<string> | undefined {
  const last = env.config.lastMembers;
  if (last === undefined) return undefined;
  return new Set([...last.map(formatNodeAddress), formatNodeAddress(env.self.node)]);
}

/**
 * Whose join is evidence for `mayReformCluster`, by `host:port`: on the first forming seed of a
 * restarted incarnation, the other forming seeds and the members it last knew; else nobody.
 */
function reformWitnesses(env: Env): ReadonlySet<string> {
  const others = otherFormingSeeds(env);
  const last = lastKnownMembers(env);
  if (others.length === 0 || last === undefined) return new Set();
  const self = formatNodeAddress(env.self.node);
  return new Set([...others, ...last].filter((a) => a !== self));
}

/**
 * Whether this node may form a new cluster although silence alone would not let it (a restarted
 * incarnation): it is the first forming seed, no member answered join-seen (a live cluster
 * answers every attempt), and within this attempt and the one before it was asked to join by
 * every other forming seed and by enough of the members it last knew that, with itself, they are
 * a strict majority of them. After a total downing everyone restarts and asks, so the first seed
 * forms and the others join it. Under a partition the side holding half the members or more is
 * made of members, which ask nothing: the seeds, however few and wherever they sit, cannot
 * outvote it, so the first seed forms no second cluster.
 */
export function mayReformCluster(env: Env, ctx: MembershipContext): boolean {
  const others = otherFormingSeeds(env);
  const last = lastKnownMembers(env);
  if (others.length === 0 || last === undefined) return false;
  const recent = ctx.attempt - 1;
  if (ctx.joinSeenAttempt !== undefined && ctx.joinSeenAttempt >= recent) return false;
  const askedLately = (a: string) => (ctx.joinAskedBy[a] ?? Number.NEGATIVE_INFINITY) >= recent;
  if (!others.every(askedLately)) return false;
  const self = formatNodeAddress(env.self.node);
  const withoutCluster = [...last].filter((a) => a === self || askedLately(a)).length;
  return withoutCluster * 2 > last.size;
}

/** Forms a new cluster on the evidence of `mayReformCluster`, saying so. */
export function reformCluster(env: Env, ctx: MembershipContext): MembershipStep {
  const step = formNewCluster(env, ctx);
  const log: LogEffect<'info'> = {
    kind: 'log',
    level: 'info',
    event: 'membership.reformed',
    fields: {
      attempt: ctx.attempt,
      askedBy: Object.keys(ctx.joinAskedBy).sort(),
      lastMembers: lastKnownMembers(env)?.size ?? 0,
    },
    msg: 'every other forming seed and a majority of the members last known are joining too, and no member answered: no cluster is left, so this first seed forms a new one',
  };
  return { ...step, effects: [log, ...step.effects] };
}

/**
 * A join reaching a node that is joining itself: nothing to answer, but when it comes from a
 * forming seed or a last-known member (from its own connection) and this node is the first
 * forming seed, it is evidence that the asker has no cluster either (see `mayReformCluster`).
 */
export function noteJoinAsked(env: Env, ctx: MembershipContext, join: Join): MembershipStep {
  const from = formatNodeAddress(join.node);
  if (!sameNode(join.node, join.replyTo.address.node) || !reformWitnesses(env).has(from)) return noop(ctx);
  if (ctx.joinAskedBy[from] === ctx.attempt) return noop(ctx);
  return {
    context: { ...ctx, joinAskedBy: { ...ctx.joinAskedBy, [from]: ctx.attempt } },
    effects: [],
    timeouts: [],
  };
}

/** Why the join gave up, once the attempts ran out (the `JoinFailedError` reason). */
export function joinFailureReason(env: Env, ctx: MembershipContext): string {
  const seeds = env.config.seeds.map(formatNodeAddress).join(', ');
  if (ctx.joinSeenBy === undefined) return `no seed answered after ${ctx.attempt} attempts (seeds: ${seeds})`;
  return (
    `a live cluster saw the join (${ctx.joinSeenBy} answered) but did not let this node in after ` +
    `${ctx.attempt} attempts; not forming a second cluster (seeds: ${seeds})`
  );
}

export function joinBackoffMs(config: ClusterConfig, attempt: number): number {
  return Math.min(config.joinBackoffMaxMs, config.joinBackoffMinMs * 2 ** Math.max(0, attempt - 1));
}

// ---- joining ------------------------------------------------------------------------------------

function joinMessage(env: Env): Join {
  const join: Join = {
    type: 'membership.join',
    node: env.self.node,
    name: env.self.name,
    roles: env.self.roles,
    replyTo: env.selfRef,
  };
  return env.self.publicKey === undefined ? join : { ...join, publicKey: env.self.publicKey };
}

export function joinAttempt(env: Env, ctx: MembershipContext): MembershipStep {
  const join = joinMessage(env);
  // the forming seeds too: the first of them must hear every seed that looks for a cluster
  const targets = [...env.config.seeds];
  for (const s of formingSeedsOf(env.config)) if (!targets.some((t) => sameNode(t, s))) targets.push(s);
  const out = targets
    .filter((s) => !(s.host === env.self.node.host && s.port === env.self.node.port))
    .map((address) => sendTo({ kind: 'seed', address }, join));
  return { context: { ...ctx, attempt: ctx.attempt + 1 }, effects: out, timeouts: [] };
}

export function formNewCluster(env: Env, ctx: MembershipContext): MembershipStep {
  return adopt(ctx, formCluster(env.self));
}

/** A welcome (or an update naming us while we join) makes us a member. */
export function welcomed(_env: Env, ctx: MembershipContext, membership: Membership): MembershipStep {
  return adopt({ ...ctx, attempt: 0 }, membership);
}

/** An update that names us while we join: take it, and acknowledge it like any member. */
export function welcomedByUpdate(env: Env, ctx: MembershipContext, update: Update): MembershipStep {
  const step = welcomed(env, ctx, update.membership);
  const ack: Ack = { type: 'membership.ack', version: update.membership.version, from: env.self.key };
  return { ...step, effects: [...step.effects, sendTo({ kind: 'ref', ref: update.replyTo }, ack)] };
}

/**
 * A joiner believes a welcome (or an update naming it) only from the coordinator of the
 * membership it carries: the node that admitted it.
 */
export function admittedBy(env: Env, m: Membership, sender: UniqueNodeAddress): boolean {
  const c = coordinatorOf(m);
  return includesSelfLive(env, m) && c !== undefined && nodeKey(c) === nodeKey(sender);
}

/**
 * A member says our join reached a live cluster: from now on this incarnation keeps joining it
 * and never forms a cluster of its own (see `mayFormCluster`). Only the first answer is noted
 * (and logged); a node that has a membership has nothing left to learn from it.
 */
export function onJoinSeen(env: Env, ctx: MembershipContext, seen: JoinSeen): MembershipStep {
  const from = nodeKey(seen.from);
  if (ctx.membership !== undefined || from === env.self.key || ctx.joinSeenAttempt === ctx.attempt)
    return noop(ctx);
  // later answers only keep the evidence of a live cluster fresh (see `mayReformCluster`)
  if (ctx.joinSeenBy !== undefined)
    return { context: { ...ctx, joinSeenAttempt: ctx.attempt }, effects: [], timeouts: [] };
  const log: LogEffect<'info'> = {
    kind: 'log',
    level: 'info',
    event: 'membership.join-seen',
    fields: { from, attempt: ctx.attempt },
    msg: `${from} answered the join: a live cluster exists, so this node joins it and never forms its own`,
  };
  return {
    context: { ...ctx, joinSeenBy: from, joinSeenAttempt: ctx.attempt },
    effects: [log],
    timeouts: [],
  };
}

/** A seed that is not the coordinator sent us to it: join there (only a seed we asked may). */
export function onRedirect(env: Env, ctx: MembershipContext, redirect: Redirect): MembershipStep {
  const fromSeed = env.config.seeds.some(
    (s) => s.host === redirect.from.host && s.port === redirect.from.port,
  );
  if (!fromSeed || nodeKey(redirect.coordinator) === env.self.key) return noop(ctx);
  return {
    context: ctx,
    effects: [sendTo({ kind: 'member', node: redirect.coordinator }, joinMessage(env))],
    timeouts: [],
  };
}

export function includesSelfLive(env: Env, m: Membership): boolean {
  const me = findMember(m, env.self.key);
  return me !== undefined && isLive(me.status);
}

// ---- adopting and broadcasting --------------------------------------------------------------

/** Takes `next` as our membership and tells the failure detector; no broadcast. */
function adopt(ctx: MembershipContext, next: Membership): MembershipStep {
  const live = new Set(next.members.map(nodeKey));
  const observations: Record<string, readonly string[]> = {};
  for (const [subject, observers] of Object.entries(ctx.observations)) {
    if (!live.has(subject)) continue;
    const still = observers.filter((o) => live.has(o));
    if (still.length > 0) observations[subject] = still;
  }
  const seq = (ctx.journal.at(-1)?.seq ?? 0) + 1;
  const journal = [...ctx.journal, { seq, membership: next }].slice(-JOURNAL_MAX);
  return {
    context: { ...ctx, membership: next, observations, journal },
    effects: [
      sendTo({ kind: 'local', path: HEARTBEAT_PATH }, { type: 'fd.members', membership: next } as Message),
    ],
    timeouts: [],
  };
}

/** Coordinator: adopt `next` and send it to every member of the old and the new membership. */
function publish(
  env: Env,
  ctx: MembershipContext,
  next: Membership,
  exclude?: ReadonlySet<string>,
): MembershipStep {
  const prev = ctx.membership;
  const step = adopt(ctx, next);
  const recipients = new Map<string, Member>();
  for (const m of [...(prev?.members ?? []), ...next.members]) {
    if (nodeKey(m) !== env.self.key && isLive(m.status) && !exclude?.has(nodeKey(m)))
      recipients.set(nodeKey(m), m);
  }
  const update: Update = { type: 'membership.update', membership: next, replyTo: env.selfRef };
  const out = [...step.effects];
  for (const m of recipients.values()) out.push(sendTo({ kind: 'member', node: nodeOf(m) }, update));
  return { ...step, effects: out };
}

function chain(first: MembershipStep, next: (ctx: MembershipContext) => MembershipStep): MembershipStep {
  const second = next(first.context);
  return {
    context: second.context,
    effects: [...first.effects, ...second.effects],
    timeouts: [...first.timeouts, ...second.timeouts],
  };
}

function sendTo(to: Destination, message: Message): Outbound {
  return { kind: 'send', to, message };
}

function coordinatorNode(ctx: MembershipContext): UniqueNodeAddress | undefined {
  const c = ctx.membership && coordinatorOf(ctx.membership);
  return c ? nodeOf(c) : undefined;
}

// ---- join handling (coordinator) -------------------------------------------------------------

/**
 * "Your join reached a live cluster", to the joiner, at once: the welcome waits for every
 * member's ack (and a held join for the old incarnation to fail), which can outlast the joiner's
 * join timeout; without this a first seed would take the silence for an empty cluster.
 */
function joinSeen(env: Env, join: Join): Outbound {
  const seen: JoinSeen = { type: 'membership.join-seen', from: env.self.node };
  return sendTo({ kind: 'ref', ref: join.replyTo }, seen);
}

export function onJoin(env: Env, ctx: MembershipContext, join: Join): MembershipStep {
  const m = ctx.membership;
  if (!m) return noteJoinAsked(env, ctx, join);
  if (!isCoordinator(env, ctx)) {
    // not forwarded: the coordinator admits a join only from the joiner's own connection
    const c = coordinatorNode(ctx);
    const redirect: Redirect = { type: 'membership.redirect', coordinator: c!, from: env.self.node };
    return c
      ? {
          context: ctx,
          effects: [joinSeen(env, join), sendTo({ kind: 'ref', ref: join.replyTo }, redirect)],
          timeouts: [],
        }
      : noop(ctx);
  }
  const address = formatNodeAddress(join.node);
  const existing = findByAddress(m, address);
  if (existing && existing.uid === join.node.uid) {
    // a retry of a join we already handled: answer again, change nothing
    const pending = ctx.collectors.some((c) => c.joiner === nodeKey(existing));
    if (pending) return { context: ctx, effects: [joinSeen(env, join)], timeouts: [] };
    const welcome: Welcome = { type: 'membership.welcome', membership: m, from: env.self.node };
    return { context: ctx, effects: [sendTo({ kind: 'ref', ref: join.replyTo }, welcome)], timeouts: [] };
  }
  // held until the incarnation it would replace fails: the joiner must keep asking, not form
  if (existing && !mayReplace(env, ctx, existing, join))
    return { context: ctx, effects: [joinSeen(env, join)], timeouts: [] };
  const joiner: NewMember = {
    address,
    uid: join.node.uid,
    name: join.name,
    roles: join.roles,
    ...(join.publicKey === undefined ? {} : { publicKey: join.publicKey }),
  };
  const { membership: next, replaced } = addJoiner(m, joiner);
  const joinerKey = nodeKey(joiner);
  // Joiners do not hold up other joins: they may still be busy joining themselves.
  const waiting = liveMembers(m)
    .filter((x) => x.status !== 'joining')
    .map(nodeKey)
    .filter((k) => k !== env.self.key && k !== (replaced && nodeKey(replaced)));
  const published = publish(env, ctx, next);
  const withoutJoiner = published.effects.filter(
    (o) => !(o.kind === 'send' && o.to.kind === 'member' && nodeKey(o.to.node) === joinerKey),
  );
  const step: MembershipStep = { ...published, effects: withoutJoiner };
  const collector: Collector = {
    id: ctx.nextCollectorId,
    version: next.version,
    waiting,
    joiner: joinerKey,
    replyTo: join.replyTo,
  };
  const withCollector: MembershipStep = {
    context: {
      ...step.context,
      collectors: [...step.context.collectors, collector],
      nextCollectorId: ctx.nextCollectorId + 1,
    },
    effects: [joinSeen(env, join), ...step.effects],
    timeouts: [collector.id],
  };
  return waiting.length === 0
    ? chain(withCollector, (c) => completeCollector(env, c, collector.id))
    : withCollector;
}

/**
 * Whether a join from a new incarnation at `existing`'s address may replace it. A restarted
 * process is a new incarnation, but with a shared secret anyone in the cluster could claim to be
 * one, and replacing a live member on that word alone would let them take its place. So: never
 * this node itself (it is alive: it is answering); at once when the joiner proves the identity
 * key of the incarnation it replaces (a node with a stable key); otherwise only once that
 * incarnation is unreachable, as a crashed process soon is (the joiner retries until then).
 * Members without identity keys (a cluster whose transport has none) are replaced as before.
 */
export function mayReplace(env: Env, ctx: MembershipContext, existing: Member, join: Join): boolean {
  const key = nodeKey(existing);
  if (key === env.self.key) return false;
  if (existing.publicKey === undefined || existing.publicKey === join.publicKey) return true;
  return ctx.membership!.unreachable.includes(key) || (ctx.observations[key]?.length ?? 0) > 0;
}

export function onAck(env: Env, ctx: MembershipContext, ack: Ack): MembershipStep {
  let step = noop(ctx);
  for (const collector of ctx.collectors) {
    if (ack.version < collector.version || !collector.waiting.includes(ack.from)) continue;
    const waiting = collector.waiting.filter((k) => k !== ack.from);
    step = chain(step, (c) => ({
      context: { ...c, collectors: c.collectors.map((x) => (x.id === collector.id ? { ...x, waiting } : x)) },
      effects: [],
      timeouts: [],
    }));
    if (waiting.length === 0) step = chain(step, (c) => completeCollector(env, c, collector.id, true));
  }
  return step;
}

/**
 * All acks in, or the timeout passed: answer the joiner. It is marked up only when every member
 * acknowledged and nobody is unreachable (Akka's convergence rule, as `convergedHere` judges it):
 * a member that became up while part of the cluster could not hear of it would count differently
 * on the two sides of a partition, and the split-brain resolver's sides would disagree.
 */
export function completeCollector(
  env: Env,
  ctx: MembershipContext,
  id: number,
  allAcked = false,
): MembershipStep {
  const collector = ctx.collectors.find((c) => c.id === id);
  if (!collector || !ctx.membership) return noop(ctx);
  const rest = { ...ctx, collectors: ctx.collectors.filter((c) => c.id !== id) };
  const joiner = findMember(ctx.membership, collector.joiner);
  if (!joiner) return noop(rest);
  const welcome: Welcome = { type: 'membership.welcome', membership: ctx.membership, from: env.self.node };
  const answered: MembershipStep = {
    context: rest,
    effects: [sendTo({ kind: 'ref', ref: collector.replyTo }, welcome)],
    timeouts: [],
  };
  if (!isCoordinator(env, rest) || !allAcked || !convergedHere(env, rest)) return answered;
  return chain(answered, (c) => publish(env, c, setStatus(c.membership!, [collector.joiner], 'up')));
}

// ---- updates, pulls, versions ----------------------------------------------------------------

export function onUpdate(env: Env, ctx: MembershipContext, update: Update): MembershipStep {
  const mine = ctx.membership;
  const theirs = update.membership;
  const ack: Ack = { type: 'membership.ack', version: theirs.version, from: env.self.key };
  const ackOut = sendTo({ kind: 'ref', ref: update.replyTo }, ack);
  if (!mine) return noop(ctx);
  // Only members of our own cluster may change our view: after a partition the other side's
  // coordinator (whom we downed, or who downed us) may have a higher version of another history.
  if (!isLiveMember(mine, update.replyTo)) return noop(ctx);
  if (theirs.version > mine.version) {
    // Only the coordinator we believe in publishes: a member cannot rewrite the membership. An
    // update from another live member that leaves us out counts as its downed-notice: the side
    // that downed us may not be the one we believe in.
    if (!fromBelievedCoordinator(env, ctx, update.replyTo)) {
      if (includesSelfLive(env, theirs)) return noop(ctx);
      const step = onDownedNotice(env, ctx, nodeKey(update.replyTo.address.node));
      return { ...step, effects: [...step.effects, ackOut] };
    }
    // only from our own cluster: it names us, or we are in it and learn that we were taken out
    if (!includesSelfLive(env, theirs) && !includesSelfLive(env, mine)) return noop(ctx);
    const step = adopt(ctx, theirs);
    return { ...step, effects: [...step.effects, ackOut] };
  }
  if (theirs.version === mine.version) return { context: ctx, effects: [ackOut], timeouts: [] };
  // the sender is behind: the coordinator brings it up to date
  if (isCoordinator(env, ctx)) {
    const newer: Update = { type: 'membership.update', membership: mine, replyTo: env.selfRef };
    return { context: ctx, effects: [sendTo({ kind: 'ref', ref: update.replyTo }, newer)], timeouts: [] };
  }
  return noop(ctx);
}

export function onPull(env: Env, ctx: MembershipContext, pull: Pull): MembershipStep {
  const m = ctx.membership;
  if (!m || pull.version >= m.version || !isLiveMember(m, pull.replyTo)) return noop(ctx);
  const update: Update = { type: 'membership.update', membership: m, replyTo: env.selfRef };
  return { context: ctx, effects: [sendTo({ kind: 'ref', ref: pull.replyTo }, update)], timeouts: [] };
}

/** Periodic catch-up: a member asks the coordinator whether it missed an update. */
export function pullFromCoordinator(env: Env, ctx: MembershipContext): MembershipStep {
  const believed = believedCoordinator(env, ctx);
  const c = believed && nodeKey(believed) !== env.self.key ? nodeOf(believed) : undefined;
  if (!c || !ctx.membership) return noop(ctx);
  const pull: Pull = { type: 'membership.pull', version: ctx.membership.version, replyTo: env.selfRef };
  return { context: ctx, effects: [sendTo({ kind: 'member', node: c }, pull)], timeouts: [] };
}

/**
 * The pull timer's backstop (pullIntervalMs): the pull, and, while the membership lists anyone
 * unreachable or this node observes anyone so, its own view of those members to the coordinator
 * (the oldest up member, whom this node may not believe: its view is what the coordinator needs).
 * A reachability report is a change of mind sent once and delivered at most once: one lost on a
 * broken connection left the coordinator holding an observation nobody makes any more, and under
 * manual downing it never moved a joiner up again. Receivers apply only what differs from what
 * they hold, so a repeated view costs them no evaluation. An idle cluster, with nobody
 * unreachable, sends nothing more than the pull.
 */
export function catchUp(env: Env, ctx: MembershipContext): MembershipStep {
  const pulled = pullFromCoordinator(env, ctx);
  const m = ctx.membership;
  const coordinator = m && coordinatorOf(m);
  if (!m || !coordinator || nodeKey(coordinator) === env.self.key) return pulled;
  const observed = (subject: string) => ctx.observations[subject]?.includes(env.self.key) ?? false;
  const subjects = new Set([...m.unreachable, ...Object.keys(ctx.observations).filter(observed)]);
  subjects.delete(env.self.key);
  if (subjects.size === 0) return pulled;
  const report: ReachabilityReport = {
    type: 'membership.reachability',
    observer: env.self.key,
    changes: [...subjects].sort().map((subject) => ({ subject, reachable: !observed(subject) })),
  };
  const to: Destination = { kind: 'member', node: nodeOf(coordinator) };
  return { ...pulled, effects: [...pulled.effects, sendTo(to, report)] };
}

/** A heartbeat showed a peer's membership version (the seed's missed-update detection). */
export function onVersionSeen(
  env: Env,
  ctx: MembershipContext,
  peer: UniqueNodeAddress,
  version: number,
): MembershipStep {
  const m = ctx.membership;
  if (!m) return noop(ctx);
  const peerMember = findMember(m, nodeKey(peer));
  if (!peerMember || !isLive(peerMember.status)) return noop(ctx);
  if (version < m.version && isCoordinator(env, ctx)) {
    const update: Update = { type: 'membership.update', membership: m, replyTo: env.selfRef };
    return { context: ctx, effects: [sendTo({ kind: 'member', node: peer }, update)], timeouts: [] };
  }
  // newer elsewhere: ask the coordinator we believe (only its updates are taken)
  if (version > m.version) return pullFromCoordinator(env, ctx);
  return noop(ctx);
}

// ---- reachability and failures --------------------------------------------------------------

/** Our own failure detector changed its mind: record it, tell everyone in one report, then re-evaluate. */
export function onOwnReachability(
  env: Env,
  ctx: MembershipContext,
  changes: readonly ReachabilityChange[],
): MembershipStep {
  if (changes.length === 0) return noop(ctx);
  const report: ReachabilityReport = { type: 'membership.reachability', observer: env.self.key, changes };
  const out: Outbound[] = [];
  const about = new Set(changes.map((c) => c.subject));
  for (const m of ctx.membership ? liveMembers(ctx.membership) : []) {
    const key = nodeKey(m);
    if (key === env.self.key) continue;
    // nobody is told about itself: the rest of the report, or nothing
    const theirs = about.has(key) ? { ...report, changes: changes.filter((c) => c.subject !== key) } : report;
    if (theirs.changes.length > 0) out.push(sendTo({ kind: 'member', node: nodeOf(m) }, theirs));
  }
  const step = onReachabilityReport(env, ctx, report);
  return { ...step, effects: [...out, ...step.effects] };
}

/** An observer's changes of mind, applied in order, then one evaluation. */
export function onReachabilityReport(
  env: Env,
  ctx: MembershipContext,
  report: ReachabilityReport,
): MembershipStep {
  const m = ctx.membership;
  if (!m || !findMember(m, report.observer)) return noop(ctx);
  let observations: Record<string, readonly string[]> | undefined;
  for (const { subject, reachable } of report.changes) {
    if (!findMember(m, subject)) continue;
    const current = (observations ?? ctx.observations)[subject] ?? [];
    const known = current.includes(report.observer);
    if (known !== reachable) continue;
    observations ??= { ...ctx.observations };
    const observers = reachable
      ? current.filter((o) => o !== report.observer)
      : [...current, report.observer];
    if (observers.length > 0) observations[subject] = observers;
    else delete observations[subject];
  }
  return observations ? evaluate(env, { ...ctx, observations }) : noop(ctx);
}

/** Members unreachable per at least one live observer (the coordinator's aggregated view). */
export function unreachableKeys(ctx: MembershipContext): string[] {
  return Object.entries(ctx.observations)
    .filter(([, observers]) => observers.length > 0)
    .map(([subject]) => subject);
}

/**
 * The coordinator records reachability in the membership and, under `auto` downing, downs what
 * is unreachable. A member whose older members all look failed claims coordination (the seed's
 * claimLeadershipIfNeeded) by downing them.
 */
export function evaluate(env: Env, ctx: MembershipContext): MembershipStep {
  const m = ctx.membership;
  if (!m) return noop(ctx);
  const unreachable = unreachableKeys(ctx).filter((k) => k !== env.self.key);
  if (isCoordinator(env, ctx)) {
    // two versions, so every node sees the member unreachable before it sees it downed
    const marked = setUnreachable(m, unreachable);
    const step = marked === m ? noop(ctx) : publish(env, ctx, marked, new Set(unreachable));
    if (env.config.downing !== 'auto' || unreachable.length === 0) return step;
    // the downed are not told: they are on the other side and form their own cluster
    return chain(step, (c) => publish(env, c, downMembers(c.membership!, unreachable), new Set(unreachable)));
  }
  const me = selfMember(env, ctx);
  if (env.config.downing !== 'auto' || !me || me.status !== 'up') return noop(ctx);
  const older = m.members.filter((x) => x.status === 'up' && x.age < me.age);
  const failed = new Set(unreachable);
  if (older.length === 0 || !older.every((x) => failed.has(nodeKey(x)))) return noop(ctx);
  const marked = setUnreachable(m, unreachable);
  const cut = new Set(unreachable);
  const step = chain(marked === m ? noop(ctx) : publish(env, ctx, marked, cut), (c) =>
    publish(env, c, downMembers(c.membership!, older.map(nodeKey)), cut),
  );
  // now the coordinator: down whatever else is unreachable too
  return chain(step, (c) => evaluate(env, c));
}

/**
 * Whether `evaluate` has not yet seen this membership and these observations: the coordinator
 * evaluates on every change of either (right after the step that made it), and never otherwise.
 */
export function evaluationStale(ctx: MembershipContext): boolean {
  const seen = ctx.evaluated;
  return (
    ctx.membership !== undefined &&
    (seen === undefined || seen.version !== ctx.membership.version || seen.observations !== ctx.observations)
  );
}

/**
 * `evaluate`, noting what it left behind as evaluated. It marks its own result, not its input:
 * evaluate is idempotent (what it publishes, it would leave alone on a second pass), and a
 * second pass must never be able to chase its own tail.
 */
export function evaluateChanges(env: Env, ctx: MembershipContext): MembershipStep {
  const step = evaluate(env, ctx);
  const after = step.context;
  if (!after.membership) return step;
  return {
    ...step,
    context: { ...after, evaluated: { version: after.membership.version, observations: after.observations } },
  };
}

/** Operator or API: down a member (by key or by `host:port`). Only the coordinator acts on it. */
export function onDownRequest(
  env: Env,
  ctx: MembershipContext,
  target: string,
  by = env.self.key,
): MembershipStep {
  const m = ctx.membership;
  if (!m) return noop(ctx);
  const member = findMember(m, target) ?? findByAddress(m, target);
  if (!member) return noop(ctx);
  // a request made on another node counts only from a live member (it speaks for its operator)
  const requester = findMember(m, by);
  if (!requester || !isLive(requester.status)) return noop(ctx);
  if (!isCoordinator(env, ctx)) {
    // only a request made here is passed on, in our own name: a member speaks only for itself
    const c = coordinatorNode(ctx);
    if (!c || by !== env.self.key) return noop(ctx);
    const request: DownRequest = { type: 'membership.down', member: nodeKey(member), by: env.self.key };
    return { context: ctx, effects: [sendTo({ kind: 'member', node: c }, request)], timeouts: [] };
  }
  return publish(env, ctx, downMembers(m, [nodeKey(member)]));
}

/**
 * Carries out a split-brain resolver decision taken on this node (the decider of its side):
 * records who is unreachable and downs `down`, in one update (each update costs every member of
 * the side a turn, and the side is waiting for this one). Unreachable members are not sent the
 * news (they are on the other side, which decides for itself).
 */
export function executeDowning(
  env: Env,
  ctx: MembershipContext,
  down: readonly string[],
  cleanUnreachable: readonly string[],
): MembershipStep {
  const m = ctx.membership;
  if (!m || down.length === 0) return noop(ctx);
  const unreachable = unreachableKeys(ctx).filter((k) => k !== env.self.key);
  // The cleanly partitioned side decides for itself; everyone else (the indirectly connected
  // included) must hear the outcome, or it would carry on with a stale membership.
  const exclude = new Set(cleanUnreachable);
  return publish(env, ctx, downMembers(setUnreachable(m, unreachable), down), exclude);
}

/**
 * A member of our cluster says it downed us (we still heartbeat it, or its update leaves us
 * out): take ourselves out at once, as Akka does when it learns it was marked down. A down is
 * final whoever took it: the side that took it starts our singletons after the down-removal
 * margin, so staying up on the word of the rest (views that went stale while a node stalled
 * make two sides down each other) would run them twice. It is no more than any member can get
 * by asking the coordinator to down us, and only a live member of our cluster, speaking for
 * itself on its own connection, is heard.
 */
export function onDownedNotice(env: Env, ctx: MembershipContext, by: string): MembershipStep {
  const m = ctx.membership;
  const sender = m && findMember(m, by);
  if (!m || !sender || !isLive(sender.status) || by === env.self.key) return noop(ctx);
  return adopt(ctx, downMembers(m, [env.self.key]));
}

/**
 * This node's split-brain resolver found that its side loses (down-reachable, down-all) and it
 * is not the decider: it tells the rest of its side (`side`: the members that decision takes down
 * and this node still reaches), then takes itself out. The notices leave first, so they are on
 * the wire before a node run with `--on-downed exit` stops.
 */
export function downSelf(env: Env, ctx: MembershipContext, side: readonly string[]): MembershipStep {
  const m = ctx.membership;
  const me = m && findMember(m, env.self.key);
  if (!m || !me || !isLive(me.status)) return noop(ctx);
  const notice: DownedNotice = { type: 'membership.downed-notice', by: env.self.key };
  const out = side
    .map((key) => findMember(m, key))
    .filter((x): x is Member => x !== undefined && isLive(x.status) && nodeKey(x) !== env.self.key)
    .map((x) => sendTo({ kind: 'member', node: nodeOf(x) }, notice));
  const step = adopt(ctx, downMembers(m, [env.self.key]));
  return { ...step, effects: [...out, ...step.effects] };
}

// ---- leaving ----------------------------------------------------------------------------------

/** This node wants to leave: the coordinator marks itself leaving; a member asks the coordinator. */
export function requestLeave(env: Env, ctx: MembershipContext): MembershipStep {
  const m = ctx.membership;
  if (!m) return noop(ctx);
  if (isCoordinator(env, ctx)) {
    if (liveMembers(m).length === 1) return adopt(ctx, removeMembers(m, [env.self.key]));
    return publish(env, ctx, setStatus(m, [env.self.key], 'leaving'));
  }
  const c = coordinatorNode(ctx);
  const leave: Leave = { type: 'membership.leave', member: env.self.key };
  return c
    ? { context: ctx, effects: [sendTo({ kind: 'member', node: c }, leave)], timeouts: [] }
    : noop(ctx);
}

export function onLeave(env: Env, ctx: MembershipContext, leave: Leave): MembershipStep {
  const m = ctx.membership;
  if (!m) return noop(ctx);
  const member = findMember(m, leave.member);
  // not forwarded when we are not the coordinator: the leaver asks again, of the right one
  if (!member || (member.status !== 'up' && member.status !== 'joining') || !isCoordinator(env, ctx)) {
    return noop(ctx);
  }
  return publish(env, ctx, setStatus(m, [leave.member], 'leaving'));
}

interface LeaderWork {
  readonly exiting: readonly string[];
  readonly leaving: readonly string[];
  readonly stuck: readonly string[];
}

/**
 * What the coordinator's leader actions would do now: exiting members to remove, leaving ones
 * to move to exiting, and joiners whose collector timed out or was lost (the coordinator changed
 * mid-join) to move up once nobody is unreachable (convergence). Undefined when there is
 * nothing: then no leader-actions timer runs at all (an idle cluster costs no transitions).
 */
function leaderWork(env: Env, ctx: MembershipContext): LeaderWork | undefined {
  const m = ctx.membership;
  if (!m || !isCoordinator(env, ctx)) return undefined;
  const exiting = m.members.filter((x) => x.status === 'exiting').map(nodeKey);
  const leaving = m.members.filter((x) => x.status === 'leaving').map(nodeKey);
  const joining = m.members
    .filter((x) => x.status === 'joining' && !ctx.collectors.some((c) => c.joiner === nodeKey(x)))
    .map(nodeKey);
  // convergence is judged only when there is a joiner it would move up (asked on every event)
  const stuck = joining.length > 0 && convergedHere(env, ctx) ? joining : [];
  return exiting.length + leaving.length + stuck.length > 0 ? { exiting, leaving, stuck } : undefined;
}

/** Whether `leaderActions` would change anything now (the coordinator's timer runs only then). */
export function hasLeaderWork(env: Env, ctx: MembershipContext): boolean {
  return leaderWork(env, ctx) !== undefined;
}

/**
 * The coordinator's duties (Akka's leader actions), run one interval apart while there are
 * any: exiting members are removed, leaving members move to exiting, and stuck joiners move up.
 */
export function leaderActions(env: Env, ctx: MembershipContext): MembershipStep {
  const m = ctx.membership;
  const work = leaderWork(env, ctx);
  if (!m || !work) return noop(ctx);
  let next = m;
  if (work.exiting.length > 0) next = removeMembers(next, work.exiting);
  if (work.leaving.length > 0) next = setStatus(next, work.leaving, 'exiting');
  if (work.stuck.length > 0) next = setStatus(next, work.stuck, 'up');
  if (next === m) return noop(ctx);
  // several changes, one new version
  const collapsed = { ...next, version: m.version + 1 };
  return publish(env, ctx, collapsed);
}

// ---- the views it publishes -----------------------------------------------------------------

/**
 * `step` with the views its change publishes: after every step that changed the membership or
 * the observations, the split-brain resolver and the checker get their views of the result,
 * after the step's messages. The machine applies every decision through this.
 */
export function withViews(env: Env, before: MembershipContext, step: MembershipStep): MembershipStep {
  const after = step.context;
  const changed = after.membership !== before.membership || after.observations !== before.observations;
  if (!changed || !after.membership) return step;
  const views: MembershipEffect = {
    kind: 'publish',
    downing: sbrViewMessage(env.self.key, after),
    checker: sbcView(env.self.key, after),
  };
  return { ...step, effects: [...step.effects, views] };
}
