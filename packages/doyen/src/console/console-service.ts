import { type Cluster, type Member, memberKey, nodeOf } from '@doyen/cluster';
import { type ActorSystem, type Logger, type Message, RateLimitedLog } from '@doyen/core';
import { ConsoleGatherer, type UpdateRefusal } from './console-gatherer.js';
import { DEFAULT_HISTORY_BYTES, DEFAULT_HISTORY_MS } from './console-history.js';
import {
  CONSOLE_ACTOR_NAME,
  CONSOLE_PATH,
  type ConsoleMessage,
  type ConsoleUpdate,
  registerConsoleMessages,
} from './console-messages.js';
import { ConsolePublisher } from './console-publisher.js';
import { type ConsoleViewerLimits, ConsoleViewers } from './console-viewers.js';
import { LogTap } from './log-tap.js';
import { MachineTracker } from './machine-tracker.js';
import { type ConsoleNode, OwnView } from './own-view.js';

export interface ConsoleOptions extends ConsoleViewerLimits {
  /** History kept by age (default 10 min). */
  readonly historyMs?: number;
  /** History kept by size, bytes of JSON (default 16 MiB). */
  readonly historyBytes?: number;
  /** A member not heard from for this long is shown stale (default 2000 ms). */
  readonly staleAfterMs?: number;
  /** How often members are told to keep sending (default 5000 ms; the lease is three times it). */
  readonly renewMs?: number;
  /** Least time between two updates a member sends (default 50 ms; `coalesceMs` is the stream's own). */
  readonly publishEveryMs?: number;
}

/** The node as the console reads it (its system and cluster change when it restarts). */
export interface ConsoleHost extends ConsoleNode {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
}

const TICK_MS = 1000;
/** Log events that are cluster facts (a member unreachable, leaving, removed, …): published without waiting out the window. */
const isClusterFact = (event: string): boolean => event.startsWith('member.');
/**
 * Urgent pokes that may cut one publishing window short. One was too few: a fact logged within a
 * window of another's cut waited the window out (on a loaded 20-node host the 53 ms between a
 * leave's log line and the serving node's own view, the node neither running nor waiting for a
 * CPU: a timer). Still bounded: a storm of facts builds at most this many extra views per window.
 * Against 1, interleaved on one build at 50 nodes (session 38): kill on the page 84, 88 ms vs 92,
 * 98 ms, leave 128, 149 vs 126, 138 ms, stream 0.56–1.0 vs 0.49–1.2 MB: no cost seen, kept.
 */
const URGENT_CUTS_PER_WINDOW = 3;
/** The page was fetched and its state not asked for since: the members are asked anyway after this. */
export const PAGE_ASKS_MEMBERS_AFTER_MS = 1000;

/** Least time between two requests for one member's whole view. */
const ASK_WHOLE_EVERY_MS = 500;

/**
 * The cluster console on one node, both sides of it:
 * - as a member, the `/system/console` actor answers subscriptions from serving nodes with this
 *   node's view (OwnView) and logged events (LogTap), pushed on change (coalesced) and at
 *   least once a second so the serving node knows it is alive;
 * - as a serving node (once someone opens the console here, and for `historyMs` after the last
 *   viewer), it subscribes to every member, gathers their views and events (ConsoleGatherer,
 *   with the bounded history) and streams them to the viewers (ConsoleViewers).
 * Follows the node into a new incarnation; the gathered history stays.
 */
export class ConsoleService {
  readonly gatherer: ConsoleGatherer;
  readonly viewers: ConsoleViewers;
  private readonly tap: LogTap | undefined;
  private readonly publisher: ConsolePublisher;
  private attached:
    | { system: ActorSystem; tracker: MachineTracker; view: OwnView; stop: () => void }
    | undefined;
  private readonly timer: ReturnType<typeof setInterval>;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private flushScheduled = false;
  /** Counts flushes scheduled and run: a scheduled one whose turn is not the latest is stale. */
  private flushTurn = 0;
  private lastFlushAt = 0;
  /** When urgent pokes cut the publishing window short, the last `URGENT_CUTS_PER_WINDOW` of them. */
  private readonly cuts: number[] = [];
  private gatherUntil = 0;
  /** The page was fetched and the members not asked yet (`touchPage`): asks them when it fires. */
  private membersDeferred: ReturnType<typeof setTimeout> | undefined;
  private lastRenewal = 0;
  /**
   * Members asked to send since the last renewal of all: a membership change asks only the ones
   * not among them. Asking all 49 members at 50 nodes on every change (a leave is three) was 49
   * sends on the serving node in the step that logged the change, and a wake-up and a view
   * built on each member, while the change's own frame waited for a CPU.
   */
  private readonly asked = new Set<string>();
  private refusalLog: { system: ActorSystem; log: RateLimitedLog } | undefined;
  /** When each member was last asked for its whole view. */
  private readonly askedWhole = new Map<string, number>();
  private closed = false;
  private readonly historyMs: number;
  private readonly renewMs: number;
  private readonly coalesceMs: number;

  constructor(
    private readonly node: ConsoleHost,
    logger: Logger | undefined,
    options: ConsoleOptions = {},
  ) {
    this.historyMs = options.historyMs ?? DEFAULT_HISTORY_MS;
    this.renewMs = options.renewMs ?? 5000;
    this.coalesceMs = options.publishEveryMs ?? 50;
    this.gatherer = new ConsoleGatherer({
      historyMs: this.historyMs,
      historyBytes: options.historyBytes ?? DEFAULT_HISTORY_BYTES,
      ...(options.staleAfterMs !== undefined ? { staleAfterMs: options.staleAfterMs } : {}),
    });
    this.viewers = new ConsoleViewers(
      options,
      (reason) =>
        this.node.system.metrics.inc(
          'doyen_console_viewers_closed_total',
          'Console viewers closed by the server',
          {
            reason,
          },
        ),
      (key) => key === this.selfKey,
    );
    this.gatherer.listen(this.viewers);
    this.publisher = new ConsolePublisher(
      () => this.node.cluster.self.key,
      () => this.attach().view.build(),
      (to, update) => this.deliver(to, update),
    );
    if (logger)
      this.tap = new LogTap(logger, this.node.cluster.self.address, (event) => {
        this.publisher.record(event);
        this.poke(isClusterFact(event.event));
      });
    this.attach();
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  /** Someone uses the console here: gather from every member, now and for `historyMs` after. */
  touch(): void {
    const first = !this.gathering;
    this.gatherUntil = Date.now() + this.historyMs;
    if (first || this.membersDeferred !== undefined) this.renew();
  }

  /**
   * The page itself (or one of its files) was fetched: gather this node's own view now, and ask
   * the members at the page's next request (its state; `touch`), or `PAGE_ASKS_MEMBERS_AFTER_MS`
   * from now if none comes. At 50 nodes, asking the 49 members on the page's own request brought
   * their 49 whole views in while the page's script and state were being served: the script's
   * first byte waited ~100 ms and the state's ~200 ms for the serving node's loop. The page
   * draws from this node's own view and fills the members in from the stream as they come.
   */
  touchPage(): void {
    if (!this.gathering) this.startWithOwnView();
    // gathering already (the page's other files, another viewer): the members are asked, or will be
    else this.gatherUntil = Date.now() + this.historyMs;
  }

  /** Gathering with this node's own view only; the members are asked by `touch` or the delay. */
  private startWithOwnView(): void {
    this.gatherUntil = Date.now() + this.historyMs;
    this.lastRenewal = Date.now();
    this.asked.clear();
    this.publisher.subscribe(this.selfKey, this.renewMs * 3);
    this.attach().tracker.setActive(true);
    this.poke();
    this.membersDeferred = setTimeout(() => this.touch(), PAGE_ASKS_MEMBERS_AFTER_MS);
    this.membersDeferred.unref();
  }

  /** Whether the members are still to be asked (the page was fetched, its state not yet). */
  get membersPending(): boolean {
    return this.membersDeferred !== undefined;
  }

  get gathering(): boolean {
    return Date.now() < this.gatherUntil;
  }

  get selfKey(): string {
    return this.node.cluster.self.key;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.membersDeferred);
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.tap?.close();
    this.attached?.stop();
    this.viewers.close();
  }

  /** Sets up the console actor on the node's current incarnation (again after a restart). */
  private attach(): NonNullable<ConsoleService['attached']> {
    const system = this.node.system;
    if (this.attached?.system === system) return this.attached;
    this.attached?.stop();
    registerConsoleMessages(system.messageTypes);
    // a member sends at most ~21 updates a second (one per coalescing window, one for liveness)
    system.limitRemoteRate('console.update', 100);
    system.limitRemoteRate('console.subscribe', 10);
    const tracker = new MachineTracker(system, () => this.poke());
    const view = new OwnView(this.node, tracker);
    const ref = system.functionRef(CONSOLE_ACTOR_NAME, (message) =>
      this.onMessage(message as ConsoleMessage),
    );
    const cluster = this.node.cluster;
    // set once this attachment is in place: subscribing calls the listener at once, and a flush
    // from there would build the view through `attach` again, before it returned
    let inPlace = false;
    const unsubscribe = cluster.subscribeMembership((m) => {
      const keys = new Set(m.members.map((x) => memberKey(x)));
      this.publisher.retain((k) => keys.has(k));
      // in the membership step itself, not a microtask: see `poke`'s `now`
      this.poke(true, inPlace);
      if (this.gathering && this.membersDeferred === undefined) this.askNew(m.members);
    });
    const stopPartitions = this.node.partitions?.subscribe(() => this.poke()) ?? (() => {});
    const attached = {
      system,
      tracker,
      view,
      stop: () => {
        unsubscribe();
        stopPartitions();
        tracker.close();
        system.removeFunctionRef(ref);
      },
    };
    this.attached = attached;
    inPlace = true;
    // a new incarnation: the old key's subscribers are gone with it (they subscribe again), and
    // it asks every member anew
    this.publisher.retain(() => false);
    this.asked.clear();
    return attached;
  }

  private isMember = (key: string): boolean =>
    this.node.cluster.state().membership?.members.some((x) => memberKey(x) === key) ?? false;

  private onMessage(message: ConsoleMessage): void {
    if (this.closed) return;
    if (message.type === 'console.subscribe') {
      if (!this.isMember(message.from)) return;
      this.publisher.subscribe(message.from, message.leaseMs, message.full === true);
      this.attach().tracker.setActive(true);
      this.poke();
    } else if (message.type === 'console.update') {
      this.take(message.from, message);
    }
  }

  /** An update reaches the gatherer (from the wire, or from this node's own publisher). */
  private take(from: string, update: ConsoleUpdate): void {
    const refusal: UpdateRefusal | undefined = this.gathering
      ? this.gatherer.receive(from, update, this.isMember)
      : 'not-gathering';
    if (refusal) this.refuse(refusal, from);
    if (refusal === 'resync') this.askWhole(from);
  }

  /** A member's change came from a version this node lacks: ask it for its whole view (once per renewal period at most). */
  private askWhole(key: string): void {
    const now = Date.now();
    if ((this.askedWhole.get(key) ?? 0) > now - ASK_WHOLE_EVERY_MS) return;
    this.askedWhole.set(key, now);
    if (this.askedWhole.size > 4 * 1024) this.askedWhole.clear();
    const leaseMs = this.renewMs * 3;
    if (key === this.selfKey) {
      this.publisher.subscribe(key, leaseMs, true);
      this.poke();
      return;
    }
    const member = this.node.cluster.state().membership?.members.find((x) => memberKey(x) === key);
    if (!member) return;
    this.node.system
      .remoteRef(nodeOf(member), CONSOLE_PATH)
      .send({ type: 'console.subscribe', from: this.selfKey, leaseMs, full: true } as unknown as Message);
  }

  private refuse(reason: UpdateRefusal, from: string): void {
    const system = this.node.system;
    system.metrics.inc('doyen_console_updates_refused_total', 'Console updates from members dropped', {
      reason,
    });
    // updates still in flight after a lapse, a change after a lost one: expected
    if (reason === 'not-gathering' || reason === 'resync') return;
    if (this.refusalLog?.system !== system)
      this.refusalLog = { system, log: new RateLimitedLog(system.logger, Date.now) };
    this.refusalLog.log.warn(
      `console.update-refused:${reason}`,
      { event: 'console.update-refused', reason, from: from.slice(0, 400) },
      `console update refused (${reason})`,
    );
  }

  private deliver(to: string, update: ConsoleUpdate): void {
    if (to === this.selfKey) {
      this.take(to, update);
      return;
    }
    const member = this.node.cluster.state().membership?.members.find((x) => memberKey(x) === to);
    if (!member) {
      this.publisher.drop(to);
      return;
    }
    this.node.system.remoteRef(nodeOf(member), CONSOLE_PATH).send(update as unknown as Message);
  }

  /** Asks every member (this node too) to keep sending for three renewal periods. */
  private renew(): void {
    clearTimeout(this.membersDeferred);
    this.membersDeferred = undefined;
    this.lastRenewal = Date.now();
    this.asked.clear();
    this.publisher.subscribe(this.selfKey, this.renewMs * 3);
    this.attach().tracker.setActive(true);
    this.askNew(this.node.cluster.state().membership?.members ?? []);
    this.poke();
  }

  /** Asks those of `members` not asked since the last renewal of all to keep sending (see `asked`). */
  private askNew(members: readonly Member[]): void {
    const self = this.selfKey;
    const leaseMs = this.renewMs * 3;
    for (const member of members) {
      const key = memberKey(member);
      if (key === self || this.asked.has(key)) continue;
      this.asked.add(key);
      this.node.system
        .remoteRef(nodeOf(member), CONSOLE_PATH)
        .send({ type: 'console.subscribe', from: self, leaseMs } as unknown as Message);
    }
  }

  /**
   * Something changed: send the subscribers an update (at most one per `coalesceMs`). Leading
   * edge: the first change after a quiet spell goes as soon as the current step returns, not
   * `coalesceMs` later — with the viewers' own coalescing behind it, two trailing delays put
   * updates past 100 ms. `urgent` (a cluster fact: the membership changed, a `member.*` line was
   * logged) cuts a window being waited out short, at most `URGENT_CUTS_PER_WINDOW` times per
   * window: at 50 nodes the serving node's own view of a leave waited 182 ms behind that timer on
   * a busy loop. Members that serve no console send the same way: making them wait the window
   * out (session 38) cut the stream of a kill and a leave at 50 nodes from 0.5–1.2 MB to
   * 0.26–0.39 MB but slowed the kill on the page from 84–98 ms to 118–140 ms (4 and 3 runs): the
   * first observer's own view is the kill's quickest way to the page.
   *
   * `now`: when the update may go without waiting, it goes in this call rather than in a
   * microtask (the membership listener: the step that adopted a membership). The membership
   * machine has queued its gossip by then, and the wire flushes it in microtasks queued before
   * ours: at 50 nodes the coordinator's own view of a leave was built after it had written the
   * change to 49 members, and 49 processes woken on 2 cores ran first (session 39: 97 ms from
   * the log line to the view, 81 of them waiting for a core, then 54 ms more to the frame).
   */
  private poke(urgent = false, now = false): void {
    if (this.closed || this.publisher.subscriberCount === 0) return;
    const at = Date.now();
    while (this.cuts.length > 0 && at - this.cuts[0]! >= this.coalesceMs) this.cuts.shift();
    const mayCut = urgent && this.cuts.length < URGENT_CUTS_PER_WINDOW;
    if (this.flushScheduled) {
      // on its way in a microtask: `now` runs it here (the microtask then finds it done)
      if (this.flushTimer === undefined) {
        if (now) this.runFlush();
        return;
      }
      // waiting out the window: only an urgent poke cuts that short
      if (!mayCut) return;
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
      this.flushScheduled = false;
    }
    const due = this.lastFlushAt + this.coalesceMs - at;
    const cut = due > 0 && mayCut;
    if (cut) this.cuts.push(at);
    // a microtask, not a zero timer: the change that poked (a log line, a membership event) is
    // in place once the current step returns, and on a loaded host a timer hop waited 50-130 ms
    const wait = cut ? 0 : due;
    if (wait <= 0 && now) {
      this.runFlush();
      return;
    }
    this.flushScheduled = true;
    const turn = ++this.flushTurn;
    const run = () => {
      if (turn === this.flushTurn) this.runFlush();
    };
    if (wait <= 0) queueMicrotask(run);
    else {
      this.flushTimer = setTimeout(run, wait);
      this.flushTimer.unref();
    }
  }

  /** Sends the subscribers their update now; a flush still scheduled is dropped (`flushTurn`). */
  private runFlush(): void {
    this.flushTurn++;
    this.flushScheduled = false;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.closed) return;
    this.lastFlushAt = Date.now();
    if (this.publisher.flush(false)) this.poke();
  }

  private tick(): void {
    if (this.closed) return;
    const attached = this.attach();
    // the machines are watched only while someone subscribed to this node's console
    attached.tracker.setActive(this.publisher.subscriberCount > 0);
    attached.tracker.rescan();
    if (this.viewers.size > 0) this.touch();
    if (this.gathering && Date.now() - this.lastRenewal >= this.renewMs) this.renew();
    if (this.publisher.flush(true)) this.poke();
    this.gatherer.check(this.isMember);
    this.node.system.metrics.set(
      'doyen_console_history_bytes',
      'Bytes of console history kept',
      this.gatherer.history.bytes,
    );
  }
}
