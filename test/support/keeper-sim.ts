import {
  arrive,
  GATHER_DUE,
  type GatherDue,
} from '../../packages/sharding/src/partition-keeper/hand-off-gather.js';
import { splitHandOff } from '../../packages/sharding/src/partition-keeper/hand-off-parts.js';
import {
  initialKeeperContext,
  type KeeperContext,
  type KeeperEffect,
  type KeeperEvent,
  type KeeperPolicy,
  type KeeperStep,
  decide as keeperDecide,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import type { CargoMessage, HandOffCargo } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import type {
  HandOff,
  HandOffPart,
  KeeperMessage,
} from '../../packages/sharding/src/partition-keeper/keeper-messages.js';
import { SeededRandom } from '../../packages/testkit/src/index.js';

/**
 * A deterministic simulation of N partition keepers running the PURE decisions, each with a model
 * of the runtime it drives (regions: active partitions, drains keeping messages for the cargo,
 * messages held while not active, sender buffers and flushes; an entity per partition whose
 * state is the count of messages it took, carried by snapshots), under one real time:
 *
 * - a network of FIFO channels, one per ordered pair of nodes (keeper messages, entity messages
 *   and drain markers share it, as they share a connection), each message with its own delay, so
 *   messages on different connections reorder freely; a cut link holds its messages until it heals;
 *   a crashed node's messages already sent still arrive;
 * - an allocator publishing versioned tables to each node after its own delay (so nodes adopt
 *   tables at different times, and may get a newer one before an older one): joins, graceful
 *   leaves (the leaver goes once it holds nothing), rebalances, removal of crashed nodes;
 * - an owner-lease oracle with the documented timing: a node holds its lease while it reaches a
 *   majority of the members (renewed every `renewMs` for `leaseMs`; it sees the end up to
 *   `leaseMs · drift` late on its own clock); a fence of member k completes once k has not renewed
 *   for `leaseMs · (1 + drift) + pauseBoundMs`, and k never holds its lease again; pauses last less
 *   than `pauseBoundMs`;
 * - faults: crashes, pauses (a paused node processes nothing, then everything in order), partitions,
 *   connection RESETS (a reset drops everything in flight on the connection, both directions;
 *   FIFO otherwise; no view change tells of it); in one run in two, hand-offs travel in parts
 *   (one entry per part) so a reset can cut a cargo in the middle.
 *
 * After EVERY step it checks: at most one live node has p active; no message delivered twice; per
 * sender, messages delivered in the order sent. At the end of a run without crashes it checks that
 * every message sent was delivered (with resets: every message not dropped by a reset) and that
 * each entity's state moved with it (nothing lost across planned moves), and for every kind that
 * each partition ended active at exactly one node.
 */

export type Decide = (
  policy: KeeperPolicy,
  ctx: KeeperContext,
  event: KeeperEvent,
  now: number,
) => KeeperStep;

/**
 * `handoff-crash` aims at the void-token rule: the first hand-off after 300 ms is held in flight
 * for 1.5 s and its sender crashes at once; the partition then moves to a third node (which
 * recreates its token behind the crashed node's fence) and back to the hand-off's receiver just
 * before the stale token lands there.
 */
/**
 * `reset`: planned moves while random connections reset. `handoff-lost`: the first hand-off after
 * 300 ms is dropped by a reset of its connection, and the partition moves on to a third node (so
 * the node that queries is not the one the hand-off went to). `marker-lost`: the first drain
 * markers after 300 ms sent to a node that is draining are dropped by a reset.
 */
export type FaultKind =
  | 'moves'
  | 'crash'
  | 'pause'
  | 'partition'
  | 'handoff-crash'
  | 'reset'
  | 'handoff-lost'
  | 'marker-lost';

/** The kinds whose only faults are connection resets: everything not dropped by one must arrive. */
const LOSSLESS_BUT_RESETS: readonly FaultKind[] = ['moves', 'reset', 'handoff-lost', 'marker-lost'];

export interface KeeperSimOptions {
  readonly seed: number;
  readonly kind: FaultKind;
  readonly decide?: Decide;
  /** Defaults: 3..5 nodes, 4..12 partitions, 6 s. */
  readonly nodes?: number;
  readonly partitions?: number;
  readonly durationMs?: number;
  readonly maxConcurrentHandOffs?: number;
  /** Longest delay of one message on a link (ms). */
  readonly maxDelayMs?: number;
  /**
   * When a node says `sharding.farewell` to every member: `left` (default: a leaver, once gone,
   * as the region does once closed: behind everything it sent), `never`, or `lying` (a positive
   * control: every node soon after it starts, and it goes on sending).
   */
  readonly farewell?: 'left' | 'never' | 'lying';
  /**
   * Whether keepers gather hand-offs arriving back to back into one step, as the machine does
   * (hand-off-gather.ts; decided when nothing else is due at that instant, the end of the turn),
   * and what one step sends on a connection arrives together (one frame). Default: in runs of
   * even seeds (odd seeds run exactly as before, one step per hand-off: the control).
   */
  readonly gather?: boolean;
}

export interface KeeperSimResult {
  readonly seed: number;
  readonly kind: FaultKind;
  /** The first invariant broken, or null. */
  readonly violation: string | null;
  readonly steps: number;
  readonly sent: number;
  readonly delivered: number;
  readonly created: number;
  readonly handOffs: number;
  readonly voided: number;
  /** Entity messages dropped by resets (allowed to be missing at the end). */
  readonly lostMessages: number;
  /** Hand-offs (whole or a part) and drain markers dropped by resets: the faults were reached. */
  readonly lostHandOffs: number;
  readonly lostMarkers: number;
  /** Hand-offs taken back by their senders after a probe found them missing. */
  readonly takenBack: number;
  /** Gathered steps that took several hand-offs at once (`keeper.hand-offs`). */
  readonly batches: number;
  readonly plan: readonly string[];
}

const LEASE_MS = 300;
const PAUSE_BOUND_MS = 200;
const DRIFT = 0.01;
const RENEW_MS = 60;
const DETECT_MS = 200;
const DOWN_MS = 500;
const MAX_HOPS = 3;

interface Pending {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
}

/** A binary heap of timed actions, ties in insertion order. */
class Agenda {
  private readonly heap: Pending[] = [];
  private seq = 0;

  push(at: number, run: () => void): void {
    const item = { at, seq: this.seq++, run };
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  peek(): Pending | undefined {
    return this.heap[0];
  }

  pop(): Pending | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

const before = (a: Pending, b: Pending) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

interface SimNode {
  readonly i: number;
  readonly key: string;
  ctx: KeeperContext;
  alive: boolean;
  crashedAt: number | null;
  started: boolean;
  pausedUntil: number;
  deferred: (() => void)[];
  wantsLease: boolean;
  leaseUntil: number;
  leaseGen: number;
  readonly driftExtra: number;
  fenced: boolean;
  readonly active: Set<number>;
  readonly draining: Map<number, CargoMessage[]>;
  readonly held: Map<number, CargoMessage[]>;
  readonly buffers: Map<number, CargoMessage[]>;
  /** Messages routed by a newer table than this node's, per partition, until it adopts it. */
  readonly future: Map<number, CargoMessage[]>;
  readonly state: Map<number, number>;
  /** Hand-offs kept until confirmed (the machine's `unconfirmed`). */
  readonly unconfirmed: Map<number, HandOff>;
  nextSeq: number;
  /** Hand-offs gathered, not decided yet (the machine's `gathered`). */
  gathered: readonly HandOff[];
  /** Bumped when a gathering is decided early: its due event is then stale. */
  gatherGen: number;
  wakeGen: number;
  view: string;
}

type Payload = 'entity' | 'hand-off' | 'marker' | 'other';

interface Channel {
  readonly queue: { readonly readyAt: number; readonly deliver: () => void; readonly what: Payload }[];
  pumpAt: number | null;
  /** When the last message was queued: messages one step sends travel together (gather runs). */
  lastSentAt: number;
}

export function simulateKeepers(options: KeeperSimOptions): KeeperSimResult {
  return new KeeperSim(options).run();
}

class KeeperSim {
  private readonly rnd: SeededRandom;
  private readonly decide: Decide;
  private readonly agenda = new Agenda();
  private now = 0;
  private readonly nodes: SimNode[] = [];
  private members: number[] = [];
  /** Members removed from the membership (left or downed), by index. */
  private readonly gone = new Set<number>();
  private readonly channels = new Map<string, Channel>();
  private readonly cuts: { side: number; until: number }[] = [];
  private readonly fenceRequests = new Map<number, Set<number>>();
  private tableVersion = 0;
  private owners: string[] = [];
  private readonly partitionCount: number;
  private readonly durationMs: number;
  private readonly sendUntil: number;
  private readonly maxDelayMs: number;
  private readonly leaving = new Set<number>();
  private violation: string | null = null;
  private steps = 0;
  private sent = 0;
  private delivered = 0;
  private created = 0;
  private handOffs = 0;
  private voided = 0;
  private lostMessages = 0;
  private lostHandOffs = 0;
  private lostMarkers = 0;
  private takenBack = 0;
  private batches = 0;
  /** Work due when nothing else is due at this instant (the end of a turn). */
  private readonly instantEnd: (() => void)[] = [];
  private readonly gather: boolean;
  private markerTraps = 0;
  /** One run in two: hand-offs go in parts, one entry each. */
  private readonly partBytes: number;
  private readonly deliveredIds = new Set<string>();
  private readonly lastSeq = new Map<string, number>();
  private readonly deliveredPer = new Map<number, number>();
  private readonly plan: string[] = [];

  constructor(private readonly options: KeeperSimOptions) {
    this.rnd = new SeededRandom(options.seed);
    this.decide = options.decide ?? keeperDecide;
    this.partitionCount = options.partitions ?? 4 + this.rnd.int(9);
    this.durationMs = options.durationMs ?? 6000;
    this.sendUntil = this.durationMs * 0.55;
    this.maxDelayMs = options.maxDelayMs ?? 5 + this.rnd.int(60);
    this.partBytes = this.rnd.chance(0.5) ? 1 : Number.POSITIVE_INFINITY;
    this.gather = options.gather ?? options.seed % 2 === 0;
  }

  run(): KeeperSimResult {
    const initial = this.options.nodes ?? 3 + this.rnd.int(3);
    for (let i = 0; i < initial; i++) this.addNode(true);
    this.at(10, () => this.publish(this.assign()));
    this.at(0, () => this.leaseRound());
    this.schedulePlan();
    for (;;) {
      // the instant is over (nothing else due now): gathered hand-offs are decided
      if (this.instantEnd.length > 0 && (this.agenda.peek()?.at ?? Number.POSITIVE_INFINITY) > this.now) {
        for (const work of this.instantEnd.splice(0)) work();
        continue;
      }
      const next = this.agenda.pop();
      if (!next || this.violation !== null) break;
      if (next.at > this.durationMs + 4000) break;
      this.now = next.at;
      next.run();
    }
    if (this.violation === null) this.finalChecks();
    return {
      seed: this.options.seed,
      kind: this.options.kind,
      violation: this.violation,
      steps: this.steps,
      sent: this.sent,
      delivered: this.delivered,
      created: this.created,
      handOffs: this.handOffs,
      voided: this.voided,
      lostMessages: this.lostMessages,
      lostHandOffs: this.lostHandOffs,
      lostMarkers: this.lostMarkers,
      takenBack: this.takenBack,
      batches: this.batches,
      plan: this.plan,
    };
  }

  // ---- schedule ---------------------------------------------------------------------------------

  private at(t: number, run: () => void): void {
    this.agenda.push(Math.max(t, this.now), run);
  }

  private schedulePlan(): void {
    const moves = 2 + this.rnd.int(4);
    const window = this.durationMs * 0.5;
    for (let k = 0; k < moves; k++) {
      const t = 200 + this.rnd.int(window);
      const what = this.rnd.int(3);
      if (what === 0) this.at(t, () => this.join());
      else if (what === 1) this.at(t, () => this.leave());
      else this.at(t, () => this.rebalance());
    }
    const kind = this.options.kind;
    if (kind === 'crash') {
      const crashes = 1 + this.rnd.int(2);
      for (let k = 0; k < crashes; k++) this.at(200 + this.rnd.int(window), () => this.crash());
    } else if (kind === 'pause') {
      const pauses = 1 + this.rnd.int(3);
      for (let k = 0; k < pauses; k++)
        this.at(200 + this.rnd.int(window), () => this.pause(30 + this.rnd.int(PAUSE_BOUND_MS - 31)));
    } else if (kind === 'partition') {
      const cuts = 1 + this.rnd.int(2);
      for (let k = 0; k < cuts; k++)
        this.at(200 + this.rnd.int(window), () => this.partition(100 + this.rnd.int(1400)));
    } else if (kind === 'reset') {
      const resets = 3 + this.rnd.int(8);
      for (let k = 0; k < resets; k++) this.at(200 + this.rnd.int(window), () => this.resetRandom());
    }
  }

  private addNode(member: boolean): SimNode {
    const i = this.nodes.length;
    const n: SimNode = {
      i,
      key: `10.0.0.${i}:2552#u${i}`,
      ctx: initialKeeperContext,
      alive: true,
      crashedAt: null,
      started: true,
      pausedUntil: 0,
      deferred: [],
      wantsLease: false,
      // never held (0 would read as held until driftExtra: a bid at t=0 was never reported)
      leaseUntil: Number.NEGATIVE_INFINITY,
      leaseGen: 0,
      driftExtra: this.rnd.next() * LEASE_MS * DRIFT,
      fenced: false,
      active: new Set(),
      draining: new Map(),
      held: new Map(),
      buffers: new Map(),
      future: new Map(),
      state: new Map(),
      unconfirmed: new Map(),
      nextSeq: 1,
      gathered: [],
      gatherGen: 0,
      wakeGen: 0,
      view: '',
    };
    this.nodes.push(n);
    if (member) this.members.push(i);
    this.scheduleSends(n);
    this.at(this.now, () => this.updateViews());
    if (this.options.farewell === 'lying') this.at(this.now + 20, () => this.sayFarewell(n));
    return n;
  }

  private liveMembers(): number[] {
    return this.members.filter((i) => this.nodes[i]!.alive && !this.leaving.has(i));
  }

  private join(): void {
    if (this.nodes.length >= 8) return;
    const n = this.addNode(true);
    this.plan.push(`${this.now}: join ${n.i}`);
    // the new member takes some partitions
    const owners = [...this.owners];
    const take = 1 + this.rnd.int(Math.max(1, Math.floor(this.partitionCount / this.members.length)));
    for (let k = 0; k < take; k++) owners[this.rnd.int(this.partitionCount)] = n.key;
    this.publish(owners);
  }

  private leave(): void {
    const live = this.liveMembers();
    if (live.length <= 2) return;
    const i = live[this.rnd.int(live.length)]!;
    this.leaving.add(i);
    this.plan.push(`${this.now}: leave ${i}`);
    this.publish(this.assign());
    this.awaitLeft(i);
  }

  /** A leaver goes once it holds no token and drains nothing (its sent messages still arrive). */
  private awaitLeft(i: number): void {
    const n = this.nodes[i]!;
    if (!this.leaving.has(i)) return; // the leave was called off (the last members standing)
    // a gathered hand-off is a token on its way in (as one in the mailbox is)
    const holding = Object.values(n.ctx.parts).some((s) => s.token !== null) || n.gathered.length > 0;
    const current = n.ctx.table?.version === this.tableVersion;
    if (!n.alive) return;
    if (holding || !current || n.buffers.size > 0 || n.held.size > 0) {
      this.at(this.now + 20, () => this.awaitLeft(i));
      return;
    }
    this.plan.push(`${this.now}: left ${i}`);
    if ((this.options.farewell ?? 'left') === 'left') this.sayFarewell(n);
    n.alive = false;
    this.members = this.members.filter((k) => k !== i);
    this.leaving.delete(i);
    this.gone.add(i);
    this.updateViews();
  }

  /** `sharding.farewell` to every member, on the channel its entity messages and markers take. */
  private sayFarewell(n: SimNode): void {
    for (const i of this.members)
      if (i !== n.i) this.sendKeeper(n, this.nodes[i]!.key, { type: 'sharding.farewell', from: n.key });
  }

  private rebalance(): void {
    const live = this.liveMembers();
    if (live.length === 0) return;
    const owners = [...this.owners];
    const moves = 1 + this.rnd.int(4);
    for (let k = 0; k < moves; k++)
      owners[this.rnd.int(this.partitionCount)] = this.nodes[live[this.rnd.int(live.length)]!]!.key;
    this.plan.push(`${this.now}: rebalance`);
    this.publish(owners);
  }

  private crash(which?: number): void {
    const live = this.liveMembers();
    const downed = this.members.length - live.length;
    if (live.length - 1 <= Math.floor(this.members.length / 2) || downed > 0) return;
    const i = which ?? live[this.rnd.int(live.length)]!;
    const n = this.nodes[i]!;
    n.alive = false;
    n.crashedAt = this.now;
    this.plan.push(`${this.now}: crash ${i}`);
    this.at(this.now + DETECT_MS, () => this.updateViews());
    this.at(this.now + DOWN_MS, () => {
      this.members = this.members.filter((k) => k !== i);
      this.gone.add(i);
      this.updateViews();
      this.publish(this.assign());
    });
  }

  /**
   * A fenced member that lives (cut off) is downed: it leaves the membership at once and its
   * process exits a second later (until then it acts on what it knows, as a minority node does).
   */
  private down(i: number): void {
    this.at(this.now + 1000, () => {
      this.nodes[i]!.alive = false;
    });
    this.members = this.members.filter((k) => k !== i);
    this.gone.add(i);
    this.plan.push(`${this.now}: down ${i}`);
    this.publish(this.assign());
  }

  private pause(forMs: number): void {
    const live = this.liveMembers();
    const i = live[this.rnd.int(live.length)]!;
    const n = this.nodes[i]!;
    if (n.pausedUntil > this.now) return;
    n.pausedUntil = this.now + forMs;
    this.plan.push(`${this.now}: pause ${i} for ${forMs}`);
    this.at(n.pausedUntil, () => {
      const work = n.deferred;
      n.deferred = [];
      for (const w of work) if (n.alive) w();
    });
  }

  private partition(forMs: number): void {
    // one side keeps a strict majority of the members (the other is downed once fenced)
    const live = this.liveMembers();
    const few = 1 + this.rnd.int(Math.max(1, Math.floor((this.members.length - 1) / 2)));
    if (few > Math.floor((this.members.length - 1) / 2)) return;
    let side = 0;
    for (let k = 0; k < few; k++) side |= 1 << live[this.rnd.int(live.length)]!;
    this.cuts.push({ side, until: this.now + forMs });
    this.plan.push(`${this.now}: partition ${side.toString(2)} for ${forMs}`);
    this.updateViews();
    this.at(this.now + forMs, () => this.updateViews());
    this.at(this.now + forMs + DETECT_MS, () => this.updateViews());
  }

  private cut(a: number, b: number): boolean {
    for (const c of this.cuts)
      if (c.until > this.now && ((c.side >> a) & 1) !== ((c.side >> b) & 1)) return true;
    return false;
  }

  private cutUntil(a: number, b: number): number {
    let until = this.now;
    for (const c of this.cuts)
      if (c.until > this.now && ((c.side >> a) & 1) !== ((c.side >> b) & 1)) until = Math.max(until, c.until);
    return until;
  }

  // ---- tables -----------------------------------------------------------------------------------

  private assign(): string[] {
    // the last members standing stay, even if they were leaving
    if (this.liveMembers().length === 0) for (const i of this.members) this.leaving.delete(i);
    const live = this.liveMembers();
    if (live.length === 0) return this.owners;
    const owners: string[] = [];
    const keep = this.owners;
    for (let p = 0; p < this.partitionCount; p++) {
      const current = keep[p];
      const stays = current !== undefined && live.some((i) => this.nodes[i]!.key === current);
      owners.push(stays ? current! : this.nodes[live[(p + this.tableVersion) % live.length]!]!.key);
    }
    return owners;
  }

  private publish(owners: string[]): void {
    this.tableVersion++;
    this.owners = owners;
    const table = { version: this.tableVersion, owners };
    for (const n of this.nodes) {
      if (!n.alive) continue;
      this.at(this.now + this.rnd.int(150), () =>
        this.nodeEvent(n, () => this.step(n, { type: 'keeper.table', table })),
      );
    }
  }

  // ---- views and leases -------------------------------------------------------------------------

  private updateViews(): void {
    for (const n of this.nodes) {
      if (!n.alive) continue;
      const reachable: string[] = [];
      const absent: string[] = [];
      for (const i of this.members) {
        if (i === n.i) continue;
        const m = this.nodes[i]!;
        const detected = m.crashedAt !== null && this.now - m.crashedAt >= DETECT_MS;
        if (detected || this.cut(n.i, i)) absent.push(m.key);
        else reachable.push(m.key);
      }
      for (const i of this.gone) if (!this.nodes[i]!.fenced && i !== n.i) absent.push(this.nodes[i]!.key);
      const view = `${reachable.join()}|${absent.join()}`;
      if (view === n.view) continue;
      n.view = view;
      this.nodeEvent(n, () => this.step(n, { type: 'keeper.membership', reachable, absent }));
    }
  }

  private holdsOwn(n: SimNode): boolean {
    return !n.fenced && this.now < n.leaseUntil + n.driftExtra;
  }

  private majority(n: SimNode): boolean {
    let votes = 0;
    for (const i of this.members) {
      const v = this.nodes[i]!;
      if (i === n.i || (v.alive && v.pausedUntil <= this.now && !this.cut(n.i, i))) votes++;
    }
    return votes > this.members.length / 2;
  }

  private leaseRound(): void {
    for (const n of this.nodes) {
      if (!n.alive || n.fenced || !n.wantsLease || n.pausedUntil > this.now) continue;
      if (!this.members.includes(n.i) || !this.majority(n)) continue;
      const had = this.holdsOwn(n);
      n.leaseUntil = this.now + LEASE_MS;
      const gen = ++n.leaseGen;
      // the holder's own timer at the end of its lease (its clock: up to the drift late)
      this.at(n.leaseUntil + n.driftExtra, () => {
        if (n.leaseGen === gen) this.nodeEvent(n, () => this.leaseCheck(n));
      });
      if (!had) this.nodeEvent(n, () => this.leaseCheck(n));
    }
    // fences: a member that has not renewed for a lease and its margins never will again
    for (const [k, askers] of this.fenceRequests) {
      const m = this.nodes[k]!;
      if (!m.fenced && this.now >= m.leaseUntil + LEASE_MS * DRIFT + PAUSE_BOUND_MS && !this.renewable(m)) {
        m.fenced = true;
        this.plan.push(`${this.now}: fenced ${k}`);
        if (m.alive && this.members.includes(k)) this.down(k);
        this.updateViews();
      }
      if (!m.fenced) continue;
      for (const a of askers) {
        const asker = this.nodes[a]!;
        this.nodeEvent(asker, () => this.step(asker, { type: 'keeper.fenced', key: m.key }));
      }
      this.fenceRequests.delete(k);
    }
    if (this.now < this.durationMs + 4000) this.at(this.now + RENEW_MS, () => this.leaseRound());
  }

  /** Whether the voters would still grant m (it is live and reaches a majority). */
  private renewable(m: SimNode): boolean {
    return m.alive && m.pausedUntil <= this.now && this.members.includes(m.i) && this.majority(m);
  }

  private leaseCheck(n: SimNode): void {
    const held = this.holdsOwn(n);
    if (held !== n.ctx.lease) this.step(n, { type: 'keeper.lease', held });
  }

  // ---- the keeper's steps -----------------------------------------------------------------------

  /** Runs `work` at node n now, or when its pause ends (in order); never at a dead node. */
  private nodeEvent(n: SimNode, work: () => void): void {
    if (!n.alive) return;
    if (n.pausedUntil > this.now) n.deferred.push(work);
    else work();
  }

  private policyOf(n: SimNode): KeeperPolicy {
    return {
      selfKey: n.key,
      partitionCount: this.partitionCount,
      maxConcurrentHandOffs: this.options.maxConcurrentHandOffs ?? 16,
      retryMs: 100,
    };
  }

  private step(n: SimNode, event: KeeperEvent | GatherDue): void {
    if (!n.alive || this.violation !== null) return;
    // as the machine does: hand-offs back to back are gathered, decided at the instant's end or
    // before the next other event
    const arrival = arrive(n.gathered, event, this.gather);
    if (arrival.started) {
      const gen = ++n.gatherGen;
      this.instantEnd.push(() => {
        if (n.gatherGen === gen) this.nodeEvent(n, () => this.step(n, { type: GATHER_DUE }));
      });
    } else if (n.gathered.length > 0 && arrival.gathered.length === 0) n.gatherGen++;
    n.gathered = arrival.gathered;
    if (arrival.decide.length === 0) return;
    const policy = this.policyOf(n);
    // as the machine does: a lost lease is read before anything else
    const onlyLease = arrival.decide.length === 1 && arrival.decide[0]!.type === 'keeper.lease';
    if (n.ctx.lease && !onlyLease && !this.holdsOwn(n))
      this.apply(n, this.decide(policy, n.ctx, { type: 'keeper.lease', held: false }, this.now));
    for (const input of arrival.decide) {
      if (input.type === 'keeper.hand-offs') this.batches++;
      const result = this.decide(policy, n.ctx, input, this.now);
      this.apply(n, result);
      // as the machine does: a lost hand-off comes back at once, as if handed to this node
      for (const e of result.effects) {
        if (e.kind !== 'take-back') continue;
        const handOff = n.unconfirmed.get(e.partition);
        n.unconfirmed.delete(e.partition);
        if (!handOff) {
          this.fail(`node ${n.i} asked to take back a hand-off of p${e.partition} it no longer keeps`);
          return;
        }
        this.apply(n, this.decide(policy, n.ctx, { type: 'keeper.taken-back', handOff }, this.now));
      }
    }
    this.steps++;
    if (event.type === 'keeper.table') this.releaseFuture(n);
    this.checkActive(n);
  }

  private apply(n: SimNode, result: KeeperStep): void {
    n.ctx = result.context;
    for (const e of result.effects) this.execute(n, e);
    const gen = ++n.wakeGen;
    if (result.wakeInMs !== null)
      this.at(this.now + result.wakeInMs, () => {
        if (n.wakeGen === gen) this.nodeEvent(n, () => this.step(n, { type: 'keeper.tick' }));
      });
  }

  private execute(n: SimNode, e: KeeperEffect): void {
    if ('partition' in e) this.trace(`${n.i} ${JSON.stringify({ ...e, cargo: undefined })}`, e.partition);
    switch (e.kind) {
      case 'log':
        if (e.event === 'sharding.token-created') this.created++;
        return;
      case 'count':
        if (e.event === 'token-void') this.voided++;
        return;
      case 'activate': {
        const cargo = e.takeRegionCargo ? merge(e.cargo, this.takeCargo(n, e.partition)) : e.cargo;
        const p = e.partition;
        const snapshot = cargo.snapshots.find((s) => s.entityId === String(p));
        n.state.set(p, (snapshot?.snapshot as number | undefined) ?? 0);
        n.active.add(p);
        for (const m of cargo.forwarded) this.deliver(n, m);
        const held = n.held.get(p) ?? [];
        n.held.delete(p);
        for (const m of held) this.deliver(n, m);
        return;
      }
      case 'deactivate': {
        const p = e.partition;
        n.active.delete(p);
        n.held.set(p, [...(n.held.get(p) ?? []), ...(n.draining.get(p) ?? [])]);
        n.draining.delete(p);
        n.state.delete(p);
        return;
      }
      case 'drain': {
        const p = e.partition;
        n.active.delete(p);
        n.draining.set(p, n.held.get(p) ?? []);
        n.held.delete(p);
        this.at(this.now + this.rnd.int(15), () =>
          this.nodeEvent(n, () => {
            if (n.draining.has(p)) this.step(n, { type: 'keeper.region-drained', partition: p });
          }),
        );
        return;
      }
      case 'reroute': {
        const held = n.held.get(e.partition) ?? [];
        n.held.delete(e.partition);
        for (const m of held) this.route(n, { ...m, hops: m.hops + 1 });
        return;
      }
      case 'hand-off': {
        this.handOffs++;
        const cargo = merge(e.cargo, this.takeCargo(n, e.partition));
        if (this.springTrap(n, e.to, e.partition)) return;
        const h: HandOff = {
          type: 'sharding.hand-off',
          from: n.key,
          partition: e.partition,
          stamp: e.stamp,
          version: e.version,
          cargo,
        };
        n.unconfirmed.set(e.partition, h);
        this.sendHandOff(n, e.to, h);
        this.loseHandOff(n, e.to, e.partition);
        return;
      }
      case 'take-back':
        this.takenBack++; // the step gave the kept hand-off back already
        return;
      case 'forget-hand-off':
        n.unconfirmed.delete(e.partition);
        return;
      case 'start-buffering':
        if (!n.buffers.has(e.partition)) n.buffers.set(e.partition, []);
        return;
      case 'flush': {
        const queued = n.buffers.get(e.partition) ?? [];
        n.buffers.delete(e.partition);
        for (const m of queued) this.route(n, m);
        return;
      }
      case 'marker':
        this.sendKeeper(n, e.to, { type: 'sharding.drain-marker', ...e.marker }, 'marker');
        this.loseMarker(n, e.to, e.marker.version);
        return;
      case 'send':
        this.sendKeeper(n, e.to, e.message);
        return;
      case 'fence': {
        const k = this.nodes.findIndex((x) => x.key === e.key);
        if (k < 0) return;
        const askers = this.fenceRequests.get(k) ?? new Set();
        askers.add(n.i);
        this.fenceRequests.set(k, askers);
        return;
      }
      case 'want-own-lease':
        n.wantsLease = e.active;
        return;
      case 'tokens-held':
        return;
    }
  }

  private trapSprung = false;

  /** `handoff-crash`: holds this hand-off in flight, crashes its sender and moves p away and back. */
  private springTrap(n: SimNode, to: string, p: number): boolean {
    if (this.options.kind !== 'handoff-crash' || this.trapSprung || this.now < 300) return false;
    const target = this.nodes.find((x) => x.key === to);
    const others = this.liveMembers().filter((i) => i !== n.i && this.nodes[i]!.key !== to);
    if (!target || others.length === 0 || this.liveMembers().length < 3) return false;
    this.trapSprung = true;
    const t0 = this.now;
    const stale: KeeperMessage = {
      type: 'sharding.hand-off',
      from: n.key,
      partition: p,
      stamp: n.ctx.parts[p]?.handed?.stamp ?? { version: 0, round: 0, seq: 0 },
      version: n.ctx.table?.version ?? 0,
      cargo: { snapshots: [], forwarded: [] },
    };
    this.transmit(n, target, () => this.step(target, stale), 1500);
    this.plan.push(`${t0}: hand-off of p${p} from ${n.i} to ${target.i} held in flight`);
    this.at(t0, () => this.crash(n.i));
    const third = this.nodes[others[this.rnd.int(others.length)]!]!;
    this.at(t0 + DOWN_MS + 10, () => {
      if (!this.liveMembers().includes(third.i)) return;
      const owners = [...this.owners];
      owners[p] = third.key;
      this.plan.push(`${this.now}: p${p} to ${third.i}`);
      this.publish(owners);
    });
    this.at(t0 + 1400 + this.rnd.int(60), () => {
      if (!this.liveMembers().includes(target.i)) return;
      const owners = [...this.owners];
      owners[p] = to;
      this.plan.push(`${this.now}: p${p} back to ${target.i}`);
      this.publish(owners);
    });
    return true;
  }

  private takeCargo(n: SimNode, p: number): HandOffCargo {
    const forwarded = [...(n.held.get(p) ?? []), ...(n.draining.get(p) ?? [])];
    n.held.delete(p);
    n.draining.delete(p);
    const state = n.state.get(p);
    n.state.delete(p);
    return {
      snapshots: state === undefined ? [] : [{ entityType: 'e', entityId: String(p), snapshot: state }],
      forwarded,
    };
  }

  // ---- the network ------------------------------------------------------------------------------

  private channel(from: number, to: number): Channel {
    const k = `${from}>${to}`;
    let c = this.channels.get(k);
    if (!c) this.channels.set(k, (c = { queue: [], pumpAt: null, lastSentAt: -1 }));
    return c;
  }

  private transmit(
    from: SimNode,
    to: SimNode,
    deliver: () => void,
    delayMs?: number,
    what: Payload = 'other',
  ): void {
    const c = this.channel(from.i, to.i);
    const last = c.queue.at(-1);
    // in gather runs, what one step sends on a connection arrives together (one frame, one turn)
    const burst = this.gather && delayMs === undefined && last !== undefined && c.lastSentAt === this.now;
    const slow = this.rnd.chance(0.05) ? this.rnd.int(300) : 0;
    const readyAt = burst
      ? last.readyAt
      : Math.max(this.now + (delayMs ?? 1 + this.rnd.int(this.maxDelayMs) + slow), last?.readyAt ?? 0);
    c.lastSentAt = this.now;
    c.queue.push({ readyAt, deliver, what });
    this.pump(from.i, to.i, c);
  }

  /** The connection between a and b resets: what it had in flight, both ways, is gone. */
  private reset(a: number, b: number): void {
    for (const c of [this.channel(a, b), this.channel(b, a)]) {
      for (const item of c.queue.splice(0)) {
        if (item.what === 'entity') this.lostMessages++;
        else if (item.what === 'hand-off') this.lostHandOffs++;
        else if (item.what === 'marker') this.lostMarkers++;
      }
    }
  }

  private resetRandom(): void {
    const live = this.liveMembers();
    if (live.length < 2) return;
    const a = live[this.rnd.int(live.length)]!;
    const others = live.filter((i) => i !== a);
    const b = others[this.rnd.int(others.length)]!;
    this.plan.push(`${this.now}: reset ${a}-${b}`);
    this.reset(a, b);
  }

  private sendHandOff(n: SimNode, to: string, h: HandOff): void {
    const target = this.nodes.find((x) => x.key === to);
    if (!target) return;
    for (const m of splitHandOff(h, this.partBytes))
      this.transmit(
        n,
        target,
        () => this.step(target, m as KeeperMessage | HandOffPart),
        undefined,
        'hand-off',
      );
  }

  private handOffTrap = false;

  /**
   * `handoff-lost`: the first hand-off after 300 ms (with a third node live) is dropped by a reset
   * of its connection and the partition moves on to a third node, whose query finds the hand-off
   * dangling at a member other than itself.
   */
  private loseHandOff(n: SimNode, to: string, p: number): void {
    if (this.options.kind !== 'handoff-lost' || this.handOffTrap || this.now < 300) return;
    const target = this.nodes.find((x) => x.key === to);
    const others = this.liveMembers().filter((i) => i !== n.i && this.nodes[i]!.key !== to);
    if (!target || others.length === 0) return;
    this.handOffTrap = true;
    this.plan.push(`${this.now}: hand-off of p${p} from ${n.i} to ${target.i} lost in a reset`);
    this.reset(n.i, target.i);
    const third = this.nodes[others[this.rnd.int(others.length)]!]!;
    this.at(this.now + 1 + this.rnd.int(80), () => {
      if (!this.liveMembers().includes(third.i)) return;
      const owners = [...this.owners];
      owners[p] = third.key;
      this.plan.push(`${this.now}: p${p} to ${third.i}`);
      this.publish(owners);
    });
  }

  /** `marker-lost`: up to three markers after 300 ms, each to a node draining, dropped by a reset. */
  private loseMarker(n: SimNode, to: string, version: number): void {
    if (this.options.kind !== 'marker-lost' || this.markerTraps >= 3 || this.now < 300) return;
    const target = this.nodes.find((x) => x.key === to);
    if (!target) return;
    const draining = Object.values(target.ctx.parts).some(
      (s) => s.token?.leaving && s.token.drainVersion <= version,
    );
    if (!draining) return;
    this.markerTraps++;
    this.plan.push(`${this.now}: marker v${version} from ${n.i} to draining ${target.i} lost in a reset`);
    this.reset(n.i, target.i);
  }

  private pump(from: number, to: number, c: Channel): void {
    if (c.pumpAt !== null || c.queue.length === 0) return;
    const head = c.queue[0]!;
    const at = Math.max(head.readyAt, this.now, this.cutUntil(from, to));
    c.pumpAt = at;
    this.at(at, () => {
      c.pumpAt = null;
      // a reset emptied the queue, or replaced its head with a later one
      if (c.queue.length === 0) return;
      if (this.cut(from, to) || c.queue[0]!.readyAt > this.now) {
        this.pump(from, to, c);
        return;
      }
      const item = c.queue.shift()!;
      const target = this.nodes[to]!;
      if (target.alive) this.nodeEvent(target, item.deliver);
      this.pump(from, to, c);
    });
  }

  private sendKeeper(n: SimNode, to: string, message: KeeperMessage, what: Payload = 'other'): void {
    const target = this.nodes.find((x) => x.key === to);
    if (!target) return;
    this.transmit(n, target, () => this.step(target, message), undefined, what);
  }

  // ---- entity messages --------------------------------------------------------------------------

  private scheduleSends(n: SimNode): void {
    const next = this.now + 5 + this.rnd.int(40);
    if (next > this.sendUntil) return;
    this.at(next, () => {
      if (!n.alive || this.leaving.has(n.i)) return;
      this.nodeEvent(n, () => {
        const p = this.rnd.int(this.partitionCount);
        const m: CargoMessage = {
          entityType: 'e',
          entityId: String(p),
          partition: p,
          payload: { type: 'm', sender: n.i, seq: n.nextSeq++ } as unknown as CargoMessage['payload'],
          sender: undefined,
          hops: 0,
        };
        this.sent++;
        this.route(n, m);
      });
      this.scheduleSends(n);
    });
  }

  /** Where node n sends (or forwards) a message for p: its buffer, itself, or the owner in its table. */
  private route(n: SimNode, m: CargoMessage): void {
    const p = m.partition;
    const buffer = n.buffers.get(p);
    if (buffer) {
      buffer.push(m);
      return;
    }
    const table = n.ctx.table;
    if (table === null) {
      n.buffers.set(p, [m]);
      return;
    }
    const owner = table.owners[p];
    this.trace(`route ${JSON.stringify(m.payload)} from ${n.i} to ${owner} (table ${table.version})`, p);
    if (owner === n.key) {
      this.receive(n, m);
      return;
    }
    if (m.hops > MAX_HOPS) {
      // the region dead-letters it; across planned moves alone that is a loss
      if (LOSSLESS_BUT_RESETS.includes(this.options.kind))
        this.fail(`message ${JSON.stringify(m.payload)} forwarded in a loop`);
      return;
    }
    const target = this.nodes.find((x) => x.key === owner);
    if (!target) return;
    // the envelope carries the table the sender routed by
    const stamped = { ...m, payload: { ...m.payload, v: table.version } };
    this.transmit(n, target, () => this.receive(target, stamped), undefined, 'entity');
  }

  /** A message for p reaching node n's region. */
  private receive(n: SimNode, m: CargoMessage): void {
    const p = m.partition;
    // routed by a newer table than ours: wait for it (a region forwards only by a newer table)
    const future = n.future.get(p);
    const v = (m.payload as unknown as { v?: number }).v ?? 0;
    if (future || v > (n.ctx.table?.version ?? 0)) {
      if (future) future.push(m);
      else n.future.set(p, [m]);
      return;
    }
    this.trace(
      `receive ${JSON.stringify(m.payload)} at ${n.i} hops ${m.hops} active ${n.active.has(p)} draining ${n.draining.has(p)} table ${n.ctx.table?.version}`,
      p,
    );
    if (n.active.has(p)) {
      this.deliver(n, m);
      return;
    }
    const kept = n.draining.get(p);
    if (kept) {
      kept.push(m);
      return;
    }
    if (n.ctx.table?.owners[p] === n.key || n.held.has(p)) {
      const held = n.held.get(p) ?? [];
      held.push(m);
      n.held.set(p, held);
      return;
    }
    this.route(n, { ...m, hops: m.hops + 1 });
  }

  private trace(what: string, p: number): void {
    if (process.env.KEEPER_SIM_TRACE === String(p)) console.log(`${this.now.toFixed(1)} ${what}`);
  }

  /** Messages that waited for the table now adopted, in order (later ones keep waiting behind them). */
  private releaseFuture(n: SimNode): void {
    const version = n.ctx.table?.version ?? 0;
    for (const [p, queue] of [...n.future]) {
      n.future.delete(p);
      let k = 0;
      for (; k < queue.length; k++) {
        const v = (queue[k]!.payload as unknown as { v?: number }).v ?? 0;
        if (v > version) break;
        this.receive(n, queue[k]!);
      }
      if (k < queue.length) n.future.set(p, [...(n.future.get(p) ?? []), ...queue.slice(k)]);
    }
  }

  private deliver(n: SimNode, m: CargoMessage): void {
    const { sender, seq } = m.payload as unknown as { sender: number; seq: number };
    this.trace(`deliver ${sender}:${seq} at ${n.i}`, m.partition);
    const id = `${sender}:${seq}`;
    if (this.deliveredIds.has(id)) {
      this.fail(`message ${id} delivered twice (at ${n.i}, p${m.partition})`);
      return;
    }
    this.deliveredIds.add(id);
    const orderKey = `${sender}/${m.partition}`;
    const last = this.lastSeq.get(orderKey) ?? 0;
    if (seq < last) {
      this.fail(`message ${id} for p${m.partition} delivered after ${sender}:${last}`);
      return;
    }
    this.lastSeq.set(orderKey, seq);
    this.delivered++;
    this.deliveredPer.set(m.partition, (this.deliveredPer.get(m.partition) ?? 0) + 1);
    n.state.set(m.partition, (n.state.get(m.partition) ?? 0) + 1);
  }

  // ---- checks -----------------------------------------------------------------------------------

  private fail(why: string): void {
    if (this.violation === null) this.violation = `t=${this.now}: ${why}`;
  }

  private checkActive(n: SimNode): void {
    for (const [p, s] of Object.entries(n.ctx.parts)) {
      if (s.token?.phase !== 'active') continue;
      for (const o of this.nodes) {
        if (o === n || !o.alive) continue;
        if (o.ctx.parts[Number(p)]?.token?.phase === 'active') {
          this.fail(`partition ${p} active at ${n.i} and ${o.i}`);
          return;
        }
      }
    }
  }

  private finalChecks(): void {
    const live = this.nodes.filter((n) => n.alive);
    for (let p = 0; p < this.partitionCount; p++) {
      const at = live.filter((n) => n.ctx.parts[p]?.token?.phase === 'active');
      if (at.length !== 1 && process.env.KEEPER_SIM_DEBUG)
        for (const n of live)
          console.log(
            `node ${n.i} table ${n.ctx.table?.version} owner ${n.ctx.table?.owners[p]} lease ${n.ctx.lease} view ${n.view} fenced ${JSON.stringify(n.ctx.fenced)} asked ${JSON.stringify(n.ctx.fenceAsked)} part ${JSON.stringify(n.ctx.parts[p])}`,
          );
      if (at.length !== 1) {
        this.fail(`at the end partition ${p} is active at ${at.length} nodes (${at.map((n) => n.i)})`);
        return;
      }
    }
    if (!LOSSLESS_BUT_RESETS.includes(this.options.kind)) return;
    if (this.delivered + this.lostMessages !== this.sent) {
      if (process.env.KEEPER_SIM_DEBUG)
        for (const n of live)
          for (const [p, b] of n.buffers)
            console.log(
              `node ${n.i} buffers p${p} (${b.length}): part ${JSON.stringify(n.ctx.parts[p])} table ${n.ctx.table?.version} owner ${n.ctx.table?.owners[p]}; owner ctx ${JSON.stringify(this.nodes.find((x) => x.key === n.ctx.table?.owners[p])?.ctx.parts[p])} ${this.nodes.find((x) => x.key === n.ctx.table?.owners[p])?.ctx.table?.version}`,
            );
      const buffered = live.reduce(
        (k, n) => k + [...n.buffers.values()].reduce((a, b) => a + b.length, 0),
        0,
      );
      this.fail(
        `${this.sent - this.delivered - this.lostMessages} of ${this.sent} messages not delivered (${buffered} still buffered, ${this.lostMessages} dropped by resets)`,
      );
      return;
    }
    for (let p = 0; p < this.partitionCount; p++) {
      const owner = live.find((n) => n.active.has(p));
      const state = owner?.state.get(p) ?? 0;
      if (state !== (this.deliveredPer.get(p) ?? 0)) {
        this.fail(
          `entity of p${p} counted ${state} of ${this.deliveredPer.get(p) ?? 0} messages: its state did not move with it`,
        );
        return;
      }
    }
  }
}

function merge(first: HandOffCargo, then: HandOffCargo): HandOffCargo {
  return {
    snapshots: [...first.snapshots, ...then.snapshots],
    forwarded: [...first.forwarded, ...then.forwarded],
  };
}
