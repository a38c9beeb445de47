import type { Member, Membership } from '../../packages/cluster/src/index.js';
import {
  batchEffects,
  decide,
  goneIn,
  type HostLeaseContext,
  type HostLeaseEvent,
  type HostLeasePolicy,
  type HostLeaseStep,
  holdsOwnIn,
  initialHostLeaseContext,
  intendedHost,
  isFencedIn,
  mandateOf,
  ownerScopeOf,
} from '../../packages/singleton/src/index.js';
import { SeededRandom } from '../../packages/testkit/src/index.js';

/**
 * A deterministic simulation of N nodes each running the host lease's PURE decisions (no xstate,
 * no sockets): one real clock, a local clock per node (offset and rate within the drift bound),
 * a network that delays, loses, reorders and cuts messages one way or both, pauses (a paused
 * node processes nothing, then resumes with everything overdue), crashes, joins, and a cluster
 * oracle that makes membership the way the cluster does: each side (nodes connected both ways)
 * flags the members it has not heard from for `detectMs`; the side keep-majority keeps downs
 * them after `stableMs`, and the downed exit within the down-removal margin (`minorityExits`);
 * joiners are admitted and made up only while converged; each side's coordinator gossips its
 * membership, which a node cut off from it misses. After every step it
 * checks that no two nodes ACT with a mandate at one real instant; a node acts with the mandate
 * its placement last heard (what the manager runs on), except while paused or crashed, and a node
 * resuming from a pause acts on that stale word until its first step (so that instant is checked
 * too).
 *
 * With `owners`, every node also holds its own OWNER scope (`want(true)`) on the same voters, and
 * fences every member it saw that is gone in its view (unreachable, downed, removed); after every
 * step and before every event it checks that no node acts holding its owner lease while any live
 * node counts it fenced. Messages travel as the machine sends them: one batch per voter and round.
 */

export type Decide = (
  policy: HostLeasePolicy,
  ctx: HostLeaseContext,
  event: HostLeaseEvent,
  now: number,
) => HostLeaseStep;

export type Fault =
  | { readonly kind: 'crash'; readonly at: number; readonly node: number }
  | { readonly kind: 'pause'; readonly at: number; readonly node: number; readonly forMs: number }
  /** Links between the nodes in `side` (bit i = node i) and the others are cut both ways. */
  | { readonly kind: 'partition'; readonly at: number; readonly forMs: number; readonly side: number }
  /** Messages from `from` to `to` are dropped (one direction only). */
  | {
      readonly kind: 'cut';
      readonly at: number;
      readonly forMs: number;
      readonly from: number;
      readonly to: number;
    }
  /**
   * `count` new nodes (at most two in a run) join through the majority's coordinator in one
   * membership version, and are made up together `upAfterMs` later.
   */
  | {
      readonly kind: 'join';
      readonly at: number;
      readonly count: number;
      readonly upAfterMs: number;
      /** A partition `delayMs` after the joiners are made up, while the news may still travel. */
      readonly partitionAfterUp?: { readonly side: number; readonly forMs: number; readonly delayMs: number };
    }
  /**
   * The pause bound's edge: `node` stops reaching anyone (one way, for `cutMs`), and if it acts
   * with a mandate, it pauses for `forMs` starting `aimMs` before its lease ends.
   */
  | {
      readonly kind: 'stall';
      readonly at: number;
      readonly node: number;
      readonly forMs: number;
      readonly aimMs: number;
      readonly cutMs: number;
    };

export interface SimPlan {
  readonly nodes: number;
  readonly seed: number;
  readonly faults: readonly Fault[];
  /** Chance a message is lost. */
  readonly lossRate: number;
  /** Longest ordinary delivery delay (ms); 2 % of messages take up to 2 s. */
  readonly maxDelayMs: number;
  /** Silence after which an observer reports a member unreachable. */
  readonly detectMs: number;
  /** How long the unreachable set must stay unchanged before the majority side downs it. */
  readonly stableMs: number;
  /**
   * A downed side (the minority) exits shortly after; otherwise it lives on with its old view
   * until late in the down-removal margin (`downedCountsForMs`), as the host lease assumes: the
   * real side's own resolver downs it at the same stable-after (the margin's default), and its
   * first heartbeat to a member that downed it brings a `membership.downed-notice`. Downed
   * members living on past the margin can together make a majority of the oldest one's view
   * (issue 29, helper V, session 39): see `downedLiveOn`.
   */
  readonly minorityExits: boolean;
  /**
   * OUTSIDE the host lease's assumptions, for the test that shows why it needs them: a downed
   * side that does not exit lives on for good (no resolver of its own, no downed-notice).
   */
  readonly downedLiveOn?: boolean;
  /**
   * Crossed downing: the minority also downs the majority (in its own view) and then exits within
   * `exitWithinMs` (the down-removal margin the protocol assumes).
   */
  readonly crossed?: { readonly exitWithinMs: number };
  /** Clock rates: each node's rate is 1 or 1 + drift (extremes) or in between. */
  readonly extremeRates: boolean;
  /**
   * Singletons of a role every member but the first has: the host is then not the coordinator,
   * so it hears of membership changes only by gossip, like any member.
   */
  readonly roleScoped?: boolean;
  /** Each node's clock rate, overriding the drawn ones (a directed scenario). */
  readonly rates?: readonly number[];
  /** Owner scopes and fences (see the file's comment); stalls then aim at the owner lease's end. */
  readonly owners?: boolean;
}

/** The host lease's policy the simulated runs share: 1 s leases, a 500 ms pause bound, 1 % drift. */
export const SIM_POLICY: Omit<HostLeasePolicy, 'selfKey'> = {
  leaseMs: 1000,
  pauseBoundMs: 500,
  maxClockDrift: 0.01,
  downedCountsForMs: 1500,
  renewEveryMs: 250,
  minRetryMs: 20,
};

export interface SimOptions {
  readonly policy: Omit<HostLeasePolicy, 'selfKey'>;
  readonly decide?: Decide;
  /** Real time simulated (ms). */
  readonly durationMs: number;
}

export interface Violation {
  readonly at: number;
  readonly acting: readonly string[];
  readonly note: string;
  readonly trace: readonly string[];
}

export interface SimResult {
  readonly violation: Violation | undefined;
  /** Fences completed (at any node), owners refused as fenced. */
  readonly fences: number;
  readonly ownersFenced: number;
  readonly acquisitions: number;
  readonly uncleanAcquisitions: number;
  readonly steps: number;
  /** Real time with some node acting with a mandate. */
  readonly servedMs: number;
}

/** Nodes that may join during a run. */
const JOINERS = 2;

/** The role singletons need in a role-scoped run: every member but the first (the coordinator) has it. */
const ROLE = 'db';

const memberOf = (i: number, roleScoped = false): Member => ({
  address: `10.0.0.${i + 1}:2552`,
  uid: `u${i + 1}`,
  name: `n${i + 1}`,
  age: i + 1,
  status: 'up',
  roles: roleScoped && i > 0 ? [ROLE] : [],
});
export const simKey = (i: number): string => `10.0.0.${i + 1}:2552#u${i + 1}`;

type Queued =
  | { readonly kind: 'deliver'; readonly to: number; readonly event: HostLeaseEvent }
  | { readonly kind: 'wake'; readonly node: number; readonly gen: number }
  | { readonly kind: 'resume'; readonly node: number; readonly pauseId: number }
  | { readonly kind: 'fault'; readonly fault: Fault }
  | { readonly kind: 'heal'; readonly fault: Fault }
  | { readonly kind: 'exit'; readonly node: number }
  | { readonly kind: 'handover'; readonly node: number }
  | { readonly kind: 'aimed'; readonly node: number; readonly forMs: number; readonly aimMs: number }
  | {
      readonly kind: 'up';
      readonly keys: readonly string[];
      readonly then?: Fault;
      readonly thenInMs: number;
    }
  /** A membership on its way from a side's coordinator: lost if the receiver is no longer on its side when it lands. */
  | { readonly kind: 'publish'; readonly from: number; readonly to: number; readonly membership: Membership }
  | { readonly kind: 'tick' };

interface Node {
  readonly i: number;
  readonly key: string;
  readonly offset: number;
  readonly rate: number;
  ctx: HostLeaseContext;
  crashed: boolean;
  pausedUntil: number | null;
  pauseId: number;
  /** Events that arrived while paused, in order; a due wake is noted apart. */
  backlog: HostLeaseEvent[];
  wakeDue: boolean;
  wakeGen: number;
  /** The mandate the placement last reported (what the manager acts on). */
  belief: boolean;
  /** What `holdsOwn()` said at this node's last step (what its entities act on). */
  ownBelief: boolean;
  /** Members this node has seen in a membership (it fences those gone since). */
  seen: Set<string>;
  running: boolean;
  /** The members and failed this node last heard of (it keeps them while cut off from the majority). */
  view: { members: Member[]; failed: Member[] };
  lastSent: string;
}

/** The failure detector's judging tick. */
const TICK_MS = 200;

export function simulate(plan: SimPlan, options: SimOptions): SimResult {
  const decideFn = options.decide ?? decide;
  const seeded = new SeededRandom(plan.seed);
  const random = () => seeded.next();
  const n = plan.nodes;
  const SCOPE = plan.roleScoped ? ROLE : '';
  const member = (i: number) => memberOf(i, plan.roleScoped);
  const drift = options.policy.maxClockDrift;
  const trace: string[] = [];
  const note = (t: number, s: string) => {
    trace.push(`${t.toFixed(1)} ${s}`);
    if (trace.length > 60) trace.shift();
  };

  // nodes n and n + 1 are started only when they join
  const nodes: Node[] = [];
  for (let i = 0; i < n + JOINERS; i++) {
    const pick = random();
    const drawn = plan.extremeRates ? (pick < 0.5 ? 1 : 1 + drift) : 1 + drift * pick;
    const rate = plan.rates?.[i] ?? drawn;
    nodes.push({
      i,
      key: simKey(i),
      offset: Math.floor(random() * 1_000_000),
      rate,
      ctx: initialHostLeaseContext,
      crashed: i >= n,
      pausedUntil: null,
      pauseId: 0,
      backlog: [],
      wakeDue: false,
      wakeGen: 0,
      belief: false,
      ownBelief: false,
      seen: new Set(),
      running: false,
      view: { members: i < n ? Array.from({ length: n }, (_, k) => member(k)) : [], failed: [] },
      lastSent: '',
    });
  }
  const byKey = new Map(nodes.map((x) => [x.key, x]));
  // the majority's membership (only the side with a majority downs)
  const cluster = {
    members: nodes.filter((x) => x.i < n).map((x) => member(x.i)),
    failed: [] as Member[],
    version: 1,
  };
  let joined = 0;

  // links: cut[from][to] counts the faults cutting that direction
  const cut = nodes.map(() => nodes.map(() => 0));
  // silentSince[x][z]: since when z has not heard x (NaN: it hears it)
  const silentSince = nodes.map(() => nodes.map(() => Number.NaN));
  let unreachableSince: { set: string; since: number } = { set: '', since: 0 };

  // the event queue: a binary heap ordered by (time, sequence)
  let seq = 0;
  const queue: { t: number; s: number; q: Queued }[] = [];
  const before = (a: { t: number; s: number }, b: { t: number; s: number }) =>
    a.t < b.t || (a.t === b.t && a.s < b.s);
  const push = (t: number, q: Queued) => {
    const item = { t, s: seq++, q };
    let i = queue.length;
    queue.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(item, queue[parent]!)) break;
      queue[i] = queue[parent]!;
      i = parent;
    }
    queue[i] = item;
  };
  const pop = () => {
    const top = queue[0]!;
    const last = queue.pop()!;
    if (queue.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= queue.length) break;
        const r = l + 1;
        const c = r < queue.length && before(queue[r]!, queue[l]!) ? r : l;
        if (!before(queue[c]!, last)) break;
        queue[i] = queue[c]!;
        i = c;
      }
      queue[i] = last;
    }
    return top;
  };

  const localNow = (x: Node, t: number) => x.offset + x.rate * t;
  /** The lease a stall aims at: the owner lease in an owners run, else the singleton's. */
  const aimScope = (x: Node) => (plan.owners ? ownerScopeOf(x.key) : SCOPE);
  let t = 0;
  let steps = 0;
  let acquisitions = 0;
  let unclean = 0;
  let violation: Violation | undefined;
  let fences = 0;
  let ownersFenced = 0;
  let servedMs = 0;
  let lastCheck = 0;
  let lastActing = 0;

  const send = (from: Node, toKey: string, event: HostLeaseEvent) => {
    if (toKey === from.key) return;
    const to = byKey.get(toKey);
    if (!to || cut[from.i]![to.i]! > 0 || random() < plan.lossRate) return;
    const delay = random() < 0.02 ? random() * 2000 : random() * plan.maxDelayMs;
    push(t + delay, { kind: 'deliver', to: to.i, event });
  };

  const acting = (): Node[] => nodes.filter((x) => !x.crashed && x.pausedUntil === null && x.belief);

  const check = (why: string, extra?: Node) => {
    if (violation) return;
    const who = acting();
    if (extra?.belief && !who.includes(extra)) who.push(extra);
    if (who.length > 1) {
      violation = { at: t, acting: who.map((x) => x.key), note: why, trace: [...trace] };
    }
    if (plan.owners) checkOwners(why, extra);
  };

  /** No node acts holding its owner lease while a live node counts it fenced. */
  const checkOwners = (why: string, extra?: Node) => {
    if (violation) return;
    for (const k of nodes) {
      const acts = k.ownBelief && !k.crashed && (k.pausedUntil === null || k === extra);
      if (!acts) continue;
      const by = nodes.find((y) => !y.crashed && isFencedIn(y.ctx, k.key, localNow(y, t)));
      if (by) {
        violation = {
          at: t,
          acting: [k.key],
          note: `${k.key} acts holding its owner lease while ${by.key} counts it fenced (${why})`,
          trace: [...trace],
        };
        return;
      }
    }
  };

  const step = (x: Node, event: HostLeaseEvent) => {
    const now = localNow(x, t);
    const result = decideFn({ ...options.policy, selfKey: x.key }, x.ctx, event, now);
    steps++;
    x.ctx = result.context;
    for (const e of batchEffects(x.key, result.effects)) {
      switch (e.kind) {
        case 'log':
          if (e.event === 'host-lease.acquired' && e.fields.scope === SCOPE) {
            acquisitions++;
            if (e.fields.clean === false) unclean++;
          }
          if (e.event === 'host-lease.fenced') fences++;
          if (e.event === 'host-lease.owner-fenced') ownersFenced++;
          note(t, `${x.key} ${e.event} ${JSON.stringify(e.fields)}`);
          break;
        case 'send':
          send(x, e.to, e.message);
          break;
        case 'placement':
          x.belief = e.mandates[SCOPE] === true;
          note(t, `${x.key} placement mandate=${x.belief}`);
          break;
      }
    }
    // the placement hears the mandate of every step: a node resuming from a pause past its lease
    // sees it gone at its first step
    if (!violation && x.belief !== mandateOf(x.ctx, SCOPE, now)) {
      violation = {
        at: t,
        acting: [x.key],
        note: `${x.key}'s placement disagrees with its mandate`,
        trace: [...trace],
      };
    }
    const holdsOwn = holdsOwnIn({ ...options.policy, selfKey: x.key }, x.ctx, now);
    if (holdsOwn !== x.ownBelief) note(t, `${x.key} holdsOwn=${holdsOwn}`);
    x.ownBelief = holdsOwn;
    x.wakeGen++;
    if (result.wakeInMs !== null)
      push(t + result.wakeInMs / x.rate, { kind: 'wake', node: x.i, gen: x.wakeGen });
    manage(x);
    if (plan.owners && event.type === 'host-lease.membership') fenceGone(x);
  };

  /** The sharding runtime, reduced: fence every member seen before that is gone in this view. */
  const fenceGone = (x: Node) => {
    const m = x.ctx.membership;
    if (!m) return;
    for (const y of m.members) x.seen.add(`${y.address}#${y.uid}`);
    for (const k of x.seen) {
      if (k === x.key || x.ctx.fences[k] !== undefined || !goneIn(m, k)) continue;
      if (x.crashed || x.pausedUntil !== null) return;
      step(x, { type: 'host-lease.fence', key: k });
    }
  };

  /** The singleton manager, reduced: start on the mandate when intended, stop at once without it, hand over when not intended. */
  const manage = (x: Node) => {
    const m = x.ctx.membership;
    const intended = m ? intendedHost(m, SCOPE) === x.key : false;
    if (x.belief && !x.running && intended) {
      x.running = true;
      step(x, { type: 'host-lease.hosting', scope: SCOPE, running: 1 });
    } else if (!x.belief && x.running) {
      x.running = false;
      step(x, { type: 'host-lease.hosting', scope: SCOPE, running: 0 });
    } else if (x.belief && x.running && !intended) {
      push(t + 5 + random() * 45, { kind: 'handover', node: x.i });
    }
  };

  const handle = (x: Node, event: HostLeaseEvent) => {
    if (x.crashed) return;
    if (x.pausedUntil !== null) {
      x.backlog.push(event);
      return;
    }
    step(x, event);
  };

  // ---- the cluster oracle: reachability, unreachable flags, keep-majority downing ----
  const bothWays = (a: number, b: number) => cut[a]![b] === 0 && cut[b]![a] === 0;
  const groups = (): number[][] => {
    const seen = new Set<number>();
    const out: number[][] = [];
    for (const x of nodes) {
      if (x.crashed || seen.has(x.i)) continue;
      const g: number[] = [];
      const stack = [x.i];
      seen.add(x.i);
      while (stack.length > 0) {
        const a = stack.pop()!;
        g.push(a);
        for (const y of nodes)
          if (!y.crashed && !seen.has(y.i) && bothWays(a, y.i)) {
            seen.add(y.i);
            stack.push(y.i);
          }
      }
      out.push(g);
    }
    return out;
  };

  /**
   * keep-majority as the resolver judges it (downing/strategies.ts): this side counts its members
   * that are not joining, the other side every member it cannot reach (joining ones too: they may
   * be up over there); a tie keeps the side with the lowest address.
   */
  const keepsMajority = (g: readonly number[]): boolean => {
    const here = new Set(g);
    const ours = cluster.members.filter((m) => here.has(m.age - 1) && m.status !== 'joining');
    const theirs = cluster.members.filter((m) => !here.has(m.age - 1));
    if (ours.length !== theirs.length) return ours.length > theirs.length;
    const lowest = Math.min(...[...ours, ...theirs].map((m) => m.age - 1));
    return ours.length > 0 && here.has(lowest);
  };

  /** Convergence (the coordinator's rule for joins and ups): every member live, in one group, none unreachable. */
  const converged = (): boolean => {
    const live = cluster.members.map((m) => nodes[m.age - 1]!);
    if (live.length === 0 || live.some((x) => x.crashed || x.pausedUntil !== null)) return false;
    const g = groups().find((x) => x.includes(live[0]!.i));
    return g !== undefined && live.every((x) => g.includes(x.i)) && unreachableSince.set === '';
  };

  /** A side's coordinator: its oldest up member (its oldest member while none is up). */
  const coordinatorIn = (g: readonly number[]): number => {
    const up = g.filter((i) => cluster.members.some((m) => m.age - 1 === i && m.status === 'up'));
    return Math.min(...(up.length > 0 ? up : g));
  };

  const tick = () => {
    // who has been silent to whom for how long
    for (const z of nodes) {
      if (z.crashed || z.pausedUntil !== null) continue;
      for (const x of nodes) {
        if (x === z) continue;
        const silent = x.crashed || x.pausedUntil !== null || cut[x.i]![z.i]! > 0;
        if (!silent) silentSince[x.i]![z.i] = Number.NaN;
        else if (Number.isNaN(silentSince[x.i]![z.i]!)) silentSince[x.i]![z.i] = t;
      }
    }
    const liveKeys = new Set(cluster.members.map((m) => simKey(m.age - 1)));
    for (const g of groups()) {
      const flagged = new Set<string>();
      for (const zi of g) {
        const z = nodes[zi]!;
        if (z.pausedUntil !== null) continue;
        for (const x of nodes) {
          if (t - silentSince[x.i]![z.i]! >= plan.detectMs) flagged.add(x.key);
        }
      }
      if (keepsMajority(g)) {
        const set = [...flagged]
          .filter((k) => liveKeys.has(k))
          .sort()
          .join(',');
        if (set !== unreachableSince.set) unreachableSince = { set, since: t };
        else if (set !== '' && t - unreachableSince.since >= plan.stableMs) {
          const downed = set.split(',');
          note(t, `majority downs ${set}`);
          const down = cluster.members.filter((m) => downed.includes(simKey(m.age - 1)));
          cluster.members = cluster.members.filter((m) => !downed.includes(simKey(m.age - 1)));
          cluster.failed = [...cluster.failed, ...down.map((m) => ({ ...m, status: 'down' as const }))];
          cluster.version++;
          unreachableSince = { set: '', since: t };
          for (const k of downed) {
            const y = byKey.get(k)!;
            if (y.crashed) continue;
            if (plan.crossed) {
              // the downed side downs the others in its own view, then exits within the margin
              const others = y.view.members.filter((m) => !downed.includes(simKey(m.age - 1)));
              y.view = {
                members: y.view.members.filter((m) => downed.includes(simKey(m.age - 1))),
                failed: [...y.view.failed, ...others.map((m) => ({ ...m, status: 'down' as const }))],
              };
              push(t + plan.crossed.exitWithinMs * (0.5 + 0.45 * random()), { kind: 'exit', node: y.i });
            } else if (plan.minorityExits) push(t + random() * 500, { kind: 'exit', node: y.i });
            else if (!plan.downedLiveOn) {
              // its own resolver takes it out within the margin (see SimPlan.minorityExits)
              const margin = options.policy.downedCountsForMs;
              push(t + margin * (0.5 + 0.45 * random()), { kind: 'exit', node: y.i });
            }
          }
        }
      }
      // the majority's coordinator publishes its membership; any other side keeps the view it has
      const main = keepsMajority(g);
      const coordinator = coordinatorIn(g);
      for (const i of g) {
        const y = nodes[i]!;
        const held = main ? { members: cluster.members, failed: cluster.failed } : y.view;
        const view: Membership = {
          version: 0,
          nextAge: n + JOINERS + 1,
          members: held.members,
          failed: held.failed,
          unreachable: held.members.map((m) => simKey(m.age - 1)).filter((k) => flagged.has(k)),
        };
        const text = `${held.members.map((m) => `${m.age}${m.status}`).join(',')}|${held.failed.map((m) => m.age).join(',')}|${view.unreachable.join(',')}`;
        if (text === y.lastSent) continue;
        y.lastSent = text;
        push(t + random() * 50, { kind: 'publish', from: coordinator, to: i, membership: view });
      }
    }
  };

  // ---- the run ----
  const start = (x: Node) => {
    x.ctx = decideFn(
      { ...options.policy, selfKey: x.key },
      x.ctx,
      { type: 'host-lease.scope', scope: SCOPE },
      localNow(x, t),
    ).context;
    if (plan.owners)
      x.ctx = decideFn(
        { ...options.policy, selfKey: x.key },
        x.ctx,
        { type: 'host-lease.want-own', active: true },
        localNow(x, t),
      ).context;
  };
  for (const x of nodes.filter((y) => !y.crashed)) start(x);
  for (const f of plan.faults) push(f.at, { kind: 'fault', fault: f });
  push(0, { kind: 'tick' });

  while (queue.length > 0 && !violation) {
    const { t: at, q } = pop();
    if (at > options.durationMs) break;
    if (lastActing > 0) servedMs += at - lastCheck;
    t = at;
    // a fence completes by the clock, between events: check the instant before this event acts
    if (plan.owners) checkOwners(`before ${q.kind}`);
    switch (q.kind) {
      case 'tick':
        tick();
        push(t + TICK_MS, { kind: 'tick' });
        break;
      case 'deliver':
        handle(nodes[q.to]!, q.event);
        break;
      case 'publish': {
        const y = nodes[q.to]!;
        // gossip travels within a side: lost if the publisher crashed or the receiver is cut off from it
        const side = groups().find((g) => g.includes(q.from));
        if (q.from !== q.to && (nodes[q.from]!.crashed || !side?.includes(q.to))) {
          y.lastSent = ''; // lost: published again once it can arrive
          break;
        }
        y.view = { members: [...q.membership.members], failed: [...q.membership.failed] };
        handle(y, { type: 'host-lease.membership', membership: q.membership });
        break;
      }
      case 'wake': {
        const x = nodes[q.node]!;
        if (x.crashed || q.gen !== x.wakeGen) break;
        if (x.pausedUntil !== null) x.wakeDue = true;
        else step(x, { type: 'host-lease.wake' });
        break;
      }
      case 'handover': {
        const x = nodes[q.node]!;
        if (x.crashed || x.pausedUntil !== null || !x.running) break;
        const m = x.ctx.membership;
        if (m && intendedHost(m, SCOPE) === x.key) break;
        x.running = false;
        note(t, `${x.key} hands over`);
        step(x, { type: 'host-lease.hosting', scope: SCOPE, running: 0 });
        break;
      }
      case 'aimed': {
        const x = nodes[q.node]!;
        if (x.crashed || x.pausedUntil !== null || !(plan.owners ? x.ownBelief : x.belief)) break;
        // a renewal granted in flight moved the end: aim again
        const until = x.ctx.holds[aimScope(x)]?.heldUntil;
        const end = until == null ? t : (until - x.offset) / x.rate;
        if (end - q.aimMs > t + 0.5) push(end - q.aimMs, q);
        else applyFault({ kind: 'pause', at: t, node: x.i, forMs: q.forMs });
        break;
      }
      case 'up': {
        if (!converged()) {
          push(t + TICK_MS, q);
          break;
        }
        note(t, `${q.keys.join(',')} up`);
        cluster.members = cluster.members.map((m) =>
          q.keys.includes(simKey(m.age - 1)) ? { ...m, status: 'up' as const } : m,
        );
        cluster.version++;
        tick();
        if (q.then) push(t + q.thenInMs, { kind: 'fault', fault: q.then });
        break;
      }
      case 'exit':
        // the node itself: a joiner's index is past the plan's nodes (a fault's `node % n` is not)
        note(t, `${nodes[q.node]!.key} exits (downed)`);
        crash(nodes[q.node]!);
        break;
      case 'fault':
        applyFault(q.fault);
        break;
      case 'heal': {
        const f = q.fault;
        note(t, `heal ${JSON.stringify(f)}`);
        forLinks(f, -1);
        break;
      }
      case 'resume': {
        const x = nodes[q.node]!;
        if (x.crashed || x.pauseId !== q.pauseId) break;
        x.pausedUntil = null;
        note(t, `${x.key} resumes (stale mandate=${x.belief})`);
        // the resumed node acts on its stale word until its first step
        check(`${x.key} resumed`, x);
        const backlog = x.backlog;
        x.backlog = [];
        const woke = x.wakeDue;
        x.wakeDue = false;
        if (woke || backlog.length === 0) step(x, { type: 'host-lease.wake' });
        for (const e of backlog) if (!x.crashed && x.pausedUntil === null) step(x, e);
        break;
      }
    }
    check(q.kind);
    lastCheck = t;
    lastActing = acting().length;
  }

  function forLinks(f: Fault, by: number) {
    if (f.kind === 'partition') {
      for (const a of nodes)
        for (const b of nodes) if (((f.side >> a.i) & 1) !== ((f.side >> b.i) & 1)) cut[a.i]![b.i]! += by;
    } else if (f.kind === 'cut') {
      cut[f.from % n]![f.to % n]! += f.from % n === f.to % n ? 0 : by;
    }
  }

  function crash(x: Node) {
    x.crashed = true;
    x.belief = false;
    x.ownBelief = false;
  }

  function applyFault(f: Fault) {
    note(t, `fault ${JSON.stringify(f)}`);
    switch (f.kind) {
      case 'crash':
        crash(nodes[f.node % n]!);
        break;
      case 'pause': {
        const x = nodes[f.node % n]!;
        if (x.crashed || x.pausedUntil !== null) break;
        x.pausedUntil = t + f.forMs;
        x.pauseId++;
        push(t + f.forMs, { kind: 'resume', node: x.i, pauseId: x.pauseId });
        break;
      }
      case 'partition':
      case 'cut':
        forLinks(f, 1);
        push(t + f.forMs, { kind: 'heal', fault: f });
        break;
      case 'join': {
        // the coordinator admits joiners only while converged; everyone hears of them at once
        if (!converged()) {
          push(t + TICK_MS, { kind: 'fault', fault: f });
          break;
        }
        const keys: string[] = [];
        for (let k = 0; k < f.count && joined < JOINERS; k++, joined++) {
          const x = nodes[n + joined]!;
          x.crashed = false;
          start(x);
          cluster.members = [...cluster.members, { ...member(x.i), status: 'joining' }];
          keys.push(x.key);
        }
        if (keys.length === 0) break;
        cluster.version++;
        tick();
        const p = f.partitionAfterUp;
        const then: Fault | undefined = p && { kind: 'partition', at: 0, side: p.side, forMs: p.forMs };
        push(t + f.upAfterMs, { kind: 'up', keys, then, thenInMs: p?.delayMs ?? 0 });
        break;
      }
      case 'stall': {
        const x = nodes[f.node % n]!;
        for (const y of nodes) {
          if (y === x) continue;
          const c: Fault = { kind: 'cut', at: t, forMs: f.cutMs, from: x.i, to: y.i };
          forLinks(c, 1);
          push(t + f.cutMs, { kind: 'heal', fault: c });
        }
        const until = x.ctx.holds[aimScope(x)]?.heldUntil;
        if (!x.crashed && (plan.owners ? x.ownBelief : x.belief) && until != null) {
          const end = (until - x.offset) / x.rate;
          push(Math.max(t, end - f.aimMs), { kind: 'aimed', node: x.i, forMs: f.forMs, aimMs: f.aimMs });
        }
        break;
      }
    }
  }

  return { violation, acquisitions, uncleanAcquisitions: unclean, steps, servedMs, fences, ownersFenced };
}
