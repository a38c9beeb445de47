import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { AnyActorLogic, EventFromLogic, InspectionEvent, Observer } from 'xstate';
import { ActorCell, type CellHost } from './actor-cell.js';
import { type ActorRef, type AskOptions, LocalActorRef, type RefHost, RemoteActorRef } from './actor-ref.js';
import {
  type ActorAddress,
  formatActorAddress,
  formatNodeAddress,
  isValidName,
  type NodeAddress,
  nodeKey,
  nodeOfKey,
  parseActorAddress,
  sameNode,
  type UniqueNodeAddress,
} from './address.js';
import { AskDeadlines } from './ask-deadlines.js';
import type { HistogramSeries } from './bucket-histogram.js';
import { type Clock, immediateScheduler, realClock, type TurnScheduler } from './clock.js';
import type { DeadLetterReason } from './dead-letter-reasons.js';
import { DeadLetters } from './dead-letters.js';
import { Dispatcher, type DispatcherConfig, defaultDispatcherConfig } from './dispatcher.js';
import {
  ActorNameTakenError,
  ActorSystemTerminatedError,
  AskTargetGoneError,
  AskTimeoutError,
  InvalidActorNameError,
  TooManyPendingAsksError,
} from './errors.js';
import { RateLimitedLog, silentLogger } from './logger.js';
import {
  ACCEPTED,
  type Delivery,
  defaultMailboxConfig,
  type MailboxConfig,
  type OfferResult,
  type OverflowPolicy,
} from './mailbox.js';
import { MAILBOX_DEPTH_MAX_SERIES, mailboxDepthSeries } from './mailbox-depth-series.js';
import type { Message } from './message.js';
import { MessageTypes } from './message-types.js';
import { MAILBOX_DEPTH_BUCKETS } from './metric-catalogue.js';
import { Metrics } from './metrics.js';
import { NodeInterner } from './node-interner.js';
import { PeerKeys } from './peer-keys.js';
import { type PeerLimits, PerNodeCounts, resolvePeerLimits, TokenBuckets } from './peer-limits.js';
import { PendingAsk } from './pending-ask.js';
import { defaultSupervision, type SupervisionStrategy, validateSupervision } from './supervision.js';
import {
  type Rejected,
  registerSystemMessages,
  type Terminated,
  type TerminationReason,
  type Unwatch,
  type Watch,
} from './system-messages.js';
import { activeTraceparent, inSpan } from './tracing.js';
import { type Envelope, laneOf, type RemoteTransport } from './transport.js';

/** The uid that addresses whichever incarnation runs at an address. */
export const ANY_INCARNATION = '*';

export interface ActorSystemConfig {
  /** Cluster name: part of every address; nodes of other clusters are refused at the handshake. */
  readonly cluster: string;
  /** Where this node is reachable by its peers. */
  readonly host: string;
  readonly port: number;
  /** Incarnation id; random by default so a restarted process is a new incarnation. */
  readonly uid?: string;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** How dispatcher turns are scheduled (setImmediate by default; the testkit drives them). */
  readonly scheduler?: TurnScheduler;
  /** Randomness for backoff jitter; seeded in simulations. */
  readonly random?: () => number;
  readonly mailbox?: Partial<MailboxConfig>;
  readonly supervision?: SupervisionStrategy;
  readonly dispatcher?: Partial<DispatcherConfig>;
  /** Observer for every xstate actor of this system (the inspector hooks in here). */
  readonly inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  readonly metrics?: Metrics;
  /** What one remote node may make this node hold (watches, pending asks); see PeerLimits. */
  readonly limits?: Partial<PeerLimits>;
  /** This incarnation's identity key (base64url Ed25519 public key), when its transport has one. */
  readonly publicKey?: string;
}

export interface SpawnContext {
  readonly self: ActorRef;
  readonly system: ActorSystem;
}

export interface SpawnOptions<TInput = unknown> {
  /** Name under the parent (letters, digits, - _ .); a generated one when absent. */
  readonly name?: string;
  /** `user` (default), `system` for framework actors, or a parent actor: it stops its children. */
  readonly parent?: 'user' | 'system' | ActorRef;
  /** Input of the logic, computed again on every restart when given as `inputFrom`. */
  readonly input?: TInput;
  readonly inputFrom?: (context: SpawnContext) => TInput;
  readonly mailbox?: Partial<MailboxConfig>;
  readonly supervision?: SupervisionStrategy;
  /** Resume from a persisted xstate snapshot instead of the initial state (first start only). */
  readonly snapshot?: unknown;
  /**
   * Read once before each turn of this actor, before it takes any message: false and the turn
   * processes nothing (the gate has stopped the actor, e.g. with `stopKeepingMailbox`). An actor
   * with a gate never runs a message in its sender's call. For sharded entities: a paused node
   * whose owner lease ran out must not process what its entities had queued (issue 29).
   */
  readonly gate?: () => boolean;
}

interface FunctionTarget {
  handler(message: Message, sender: string | undefined): void;
  onTerminate?(): void;
}

const noInput = (): undefined => undefined;

/**
 * Where a CellRef keeps its cell: a symbol only this module holds, so no other ref can claim one. `deliver`
 * reads it from any ref (absent: undefined) instead of asking `instanceof CellRef`, which V8 ran as a generic
 * check on every tell: CPU per fromTransition tell went from ~36 to ~19 ns without it (issue 31).
 */
const CELL: unique symbol = Symbol('doyen.cell');

/** A local ref that may point straight at its cell, skipping a map lookup on every send. */
class CellRef extends LocalActorRef {
  [CELL]: ActorCell | undefined;
}

/**
 * One per node: spawns actors from xstate logic under paths, delivers messages locally or
 * through the transport, supervises, watches, and keeps the dead letters.
 */
const ASK_DURATION = 'doyen_ask_duration_seconds';
const ASK_DURATION_HELP = 'From an ask to its reply (outcome settled) or its timeout';

export class ActorSystem implements RefHost, CellHost {
  readonly cluster: string;
  readonly node: UniqueNodeAddress;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  readonly metrics: Metrics;
  private readonly askSettled: HistogramSeries;
  private readonly askTimedOut: HistogramSeries;
  private readonly mailboxDepthSampled: HistogramSeries;
  readonly deadLetters: DeadLetters;
  readonly messageTypes = new MessageTypes();
  /** This incarnation's identity key, admitted with it into the membership (see PeerKeys). */
  readonly publicKey: string | undefined;
  /** The identity keys of the members this node knows: a connection claiming one must prove it. */
  readonly peerKeys = new PeerKeys();
  readonly inspect: ActorSystemConfig['inspect'];
  private readonly dispatcher: Dispatcher;
  private readonly mailboxDefaults: MailboxConfig;
  /** Queue depth at which a send from outside any actor runs a dispatcher turn (see DispatcherConfig). */
  private readonly drainBacklogAt: number;
  /** Mailbox warnings (drops, high water): at most one line per second per actor path. */
  private readonly mailboxLog: RateLimitedLog;
  private readonly supervisionDefault: SupervisionStrategy;
  private readonly cells = new Map<string, ActorCell>();
  /** The node objects remote refs share (see NodeInterner). */
  private readonly nodeObjects = new NodeInterner();
  private readonly functions = new Map<string, FunctionTarget>();
  /** Remote actors we watch: node key -> watched ref id -> watcher id -> watcher. */
  private readonly remoteWatched = new Map<
    string,
    Map<string, { target: ActorRef; watchers: Map<string, ActorRef> }>
  >();
  private readonly askDeadlines: AskDeadlines;
  readonly limits: PeerLimits;
  /** Watches remote nodes hold on local actors, per watcher node key (capped: limits.maxWatchesPerNode). */
  private readonly watchesByNode: PerNodeCounts;
  /** Asks waiting for replies from each remote node, by its key (capped: limits.maxPendingAsksPerNode). */
  private readonly asksByNode = new Map<string, Set<PendingAsk>>();
  /** Per-type token buckets for messages from remote nodes (see limitRemoteRate). */
  private readonly remoteRates = new Map<string, TokenBuckets>();
  /** Refusals of the peer limits: a few lines a second per kind (keyed by kind only, so peers cannot grow it). */
  private readonly limitLog: RateLimitedLog;
  private readonly localAddressPrefix: string;
  private readonly localAddressSuffix: string;
  private transport: RemoteTransport | undefined;
  private seq = 0;
  private enqueues = 0;
  private terminated = false;

  constructor(config: ActorSystemConfig) {
    this.cluster = config.cluster;
    this.node = { host: config.host, port: config.port, uid: config.uid ?? randomBytes(8).toString('hex') };
    this.publicKey = config.publicKey;
    this.clock = config.clock ?? realClock;
    this.random = config.random ?? Math.random;
    this.metrics = config.metrics ?? new Metrics();
    // taken once: an ask observes its duration into its outcome's series without a label lookup
    this.askSettled = this.metrics.histogramSeries(ASK_DURATION, ASK_DURATION_HELP, { outcome: 'settled' });
    this.askTimedOut = this.metrics.histogramSeries(ASK_DURATION, ASK_DURATION_HELP, { outcome: 'timeout' });
    this.mailboxDepthSampled = this.metrics.histogramSeries(
      'doyen_mailbox_depth_sampled',
      'Mailbox depth seen by one enqueue in 64 (after it)',
      {},
      MAILBOX_DEPTH_BUCKETS,
    );
    const logger = config.logger ?? silentLogger();
    // a node's own logger may name the node already: a second `node` key would repeat in the JSON
    this.logger =
      logger.bindings().node === undefined ? logger.child({ node: formatNodeAddress(this.node) }) : logger;
    this.deadLetters = new DeadLetters(this.logger, this.clock, this.metrics);
    this.inspect = config.inspect;
    this.mailboxDefaults = { ...defaultMailboxConfig, ...config.mailbox };
    this.mailboxLog = new RateLimitedLog(this.logger, () => this.clock.now(), 1);
    this.metrics.collect(
      'doyen_mailbox_depth',
      `Messages waiting in each top-level local actor and its descendants, past ${MAILBOX_DEPTH_MAX_SERIES} the rest as other (read when scraped)`,
      () => mailboxDepthSeries(this.mailboxDepths()),
    );
    this.supervisionDefault = validateSupervision(config.supervision ?? defaultSupervision);
    const dispatcherConfig: DispatcherConfig = {
      ...defaultDispatcherConfig,
      ...(config.scheduler ? { drainBacklogAt: 0, microtaskTurns: false } : {}),
      ...config.dispatcher,
    };
    this.drainBacklogAt = dispatcherConfig.drainBacklogAt > 0 ? dispatcherConfig.drainBacklogAt : Infinity;
    this.dispatcher = new Dispatcher(config.scheduler ?? immediateScheduler, dispatcherConfig, (error) =>
      this.logger.error({ event: 'dispatcher.error', err: error }, 'dispatcher error'),
    );
    registerSystemMessages(this.messageTypes);
    this.functions.set('/system/death-watch', { handler: (m) => this.onDeathWatchMessage(m) });
    this.askDeadlines = new AskDeadlines(this.clock);
    this.limits = resolvePeerLimits(config.limits);
    this.watchesByNode = new PerNodeCounts(this.limits.maxWatchesPerNode, this.limits.maxRemoteWatches);
    this.limitLog = new RateLimitedLog(this.logger, () => this.clock.now(), 5);
    const sample = formatActorAddress({ cluster: this.cluster, node: this.node, path: '/' });
    this.localAddressPrefix = sample.slice(0, sample.lastIndexOf('/#'));
    this.localAddressSuffix = sample.slice(sample.lastIndexOf('/#') + 1);
  }

  /** Human-readable `host:port` of this node. */
  get nodeName(): string {
    return formatNodeAddress(this.node);
  }

  /** True when no actor has queued messages. */
  get idle(): boolean {
    return this.dispatcher.idle;
  }

  /** Why the transport's last dial to a node failed, when it knows (a join attempt names it). */
  lastDialFailure(node: NodeAddress): string | undefined {
    return this.transport?.lastDialFailure?.(node);
  }

  /**
   * Hears of every dial the transport saw refused (nothing listening at that address), for the
   * failure detector; a transport that cannot tell never calls. Returns the unsubscribe function.
   */
  onConnectionRefused(listener: (node: NodeAddress) => void): () => void {
    return this.transport?.onConnectionRefused?.(listener) ?? (() => {});
  }

  attachTransport(transport: RemoteTransport): void {
    this.transport = transport;
  }

  // ---- spawning and lookup ------------------------------------------------------------------

  spawn<TLogic extends AnyActorLogic>(
    logic: TLogic,
    options: SpawnOptions = {},
  ): LocalActorRef<EventFromLogic<TLogic> & Message> {
    if (this.terminated) throw new ActorSystemTerminatedError('spawn');
    const name = options.name ?? `anon-${(++this.seq).toString(36)}`;
    if (!isValidName(name)) throw new InvalidActorNameError(name);
    const parentSpec = options.parent ?? 'user';
    const parentCell = typeof parentSpec === 'string' ? undefined : this.cells.get(parentSpec.path);
    const parentPath = typeof parentSpec === 'string' ? `/${parentSpec}` : parentSpec.path;
    if (typeof parentSpec !== 'string' && (!parentCell || parentCell.isStopped)) {
      throw new ActorSystemTerminatedError(`spawn under stopped parent ${parentSpec.path}`);
    }
    const path = `${parentPath}/${name}`;
    if (this.cells.has(path) || this.functions.has(path)) throw new ActorNameTakenError(path);
    const ref = this.makeLocalRef(path);
    // No closure, context or mailbox config of its own for an actor that needs none (per-actor memory)
    const { input, inputFrom } = options;
    const makeInput = inputFrom
      ? () => inputFrom({ self: ref, system: this })
      : input === undefined
        ? noInput
        : () => input;
    const cell = new ActorCell(
      this,
      ref,
      logic,
      makeInput,
      options.mailbox ? { ...this.mailboxDefaults, ...options.mailbox } : this.mailboxDefaults,
      options.supervision ? validateSupervision(options.supervision) : this.supervisionDefault,
      parentCell,
      options.snapshot,
    );
    if (options.gate) cell.gate = options.gate;
    ref[CELL] = cell;
    this.cells.set(path, cell);
    parentCell?.addChild(cell);
    cell.start();
    return ref as LocalActorRef<EventFromLogic<TLogic> & Message>;
  }

  /**
   * A local ref whose messages are handled synchronously by `handler` (no mailbox): for
   * framework edges that turn messages into callbacks.
   */
  functionRef<M extends Message = Message>(
    name: string,
    handler: (message: Message, sender: string | undefined) => void,
    parent: 'user' | 'system' | 'temp' = 'system',
  ): LocalActorRef<M> {
    const path = `/${parent}/${name}`;
    if (!isValidName(name)) throw new InvalidActorNameError(name);
    if (this.cells.has(path) || this.functions.has(path)) throw new ActorNameTakenError(path);
    this.functions.set(path, { handler });
    return this.makeLocalRef(path) as LocalActorRef<M>;
  }

  removeFunctionRef(ref: ActorRef): void {
    this.functions.delete(ref.path);
  }

  lookup(path: string): LocalActorRef | undefined {
    const cell = this.cells.get(path);
    if (cell && !cell.isStopped) return cell.ref as LocalActorRef;
    return this.functions.has(path) ? this.makeLocalRef(path) : undefined;
  }

  /** The xstate snapshot of a local actor (for management and inspection). */
  snapshotOf(ref: ActorRef): unknown {
    return this.cells.get(ref.path)?.getSnapshot();
  }

  /** Paths of the running local actors (spawned ones, not function refs), e.g. for inspection. */
  actorPaths(prefix = '/'): string[] {
    return [...this.cells.keys()].filter((p) => p.startsWith(prefix));
  }

  /** Messages waiting in a local actor's mailbox. */
  mailboxSize(ref: ActorRef): number {
    return this.cells.get(ref.path)?.mailbox.size ?? 0;
  }

  /** xstate's persisted (serialisable) snapshot of a local actor. */
  persistedSnapshotOf(ref: ActorRef): unknown {
    return this.cells.get(ref.path)?.getPersistedSnapshot();
  }

  subscribeSnapshots(ref: ActorRef, listener: (snapshot: unknown) => void): () => void {
    const cell = this.cells.get(ref.path);
    return cell ? cell.subscribe(listener) : () => {};
  }

  /** A ref from its address string: local when it names this node incarnation, remote otherwise. */
  refFor<M extends Message = Message>(address: string | ActorAddress): ActorRef<M> {
    const parsed = typeof address === 'string' ? parseActorAddress(address) : address;
    if (this.isSelf(parsed.node) && parsed.cluster === this.cluster) {
      const cell = this.cells.get(parsed.path);
      return (cell && !cell.isStopped ? cell.ref : this.makeLocalRef(parsed.path)) as ActorRef<M>;
    }
    // one node object per incarnation for all refs (see NodeInterner)
    const node = this.nodeObjects.intern(parsed.node);
    return new RemoteActorRef<M>(
      this,
      node === parsed.node ? parsed : { cluster: parsed.cluster, node, path: parsed.path },
      typeof address === 'string' ? address : formatActorAddress(parsed),
    );
  }

  /**
   * A ref to `path` on whichever incarnation runs at `node` (uid `*`): for first contact, such
   * as a join sent to a seed whose uid is not known yet.
   */
  anyIncarnationRef<M extends Message = Message>(node: NodeAddress, path: string): ActorRef<M> {
    return this.remoteRef<M>({ host: node.host, port: node.port, uid: ANY_INCARNATION }, path);
  }

  /** A ref to `path` on another node incarnation. */
  remoteRef<M extends Message = Message>(node: UniqueNodeAddress, path: string): ActorRef<M> {
    return this.refFor<M>({ cluster: this.cluster, node, path });
  }

  stop(ref: ActorRef): void {
    if (!ref.isLocal) return;
    this.cells.get(ref.path)?.stop('stopped');
    this.functions.delete(ref.path);
  }

  /**
   * Stops a local actor like `stop`, but hands back what its mailbox still held, in order, instead
   * of dead-lettering it: for an owner that must stop an actor at once and deliver its unprocessed
   * messages to its successor later (sharding, when a node's owner lease lapses).
   */
  stopKeepingMailbox(ref: ActorRef): { message: Message; sender: ActorRef | undefined }[] {
    const cell = ref.isLocal ? this.cells.get(ref.path) : undefined;
    const kept = cell && !cell.isStopped ? cell.mailbox.drain() : [];
    this.stop(ref);
    return kept.map((d) => ({
      message: d.message,
      sender: d.sender === undefined ? undefined : this.refFor(d.sender),
    }));
  }

  // ---- delivery -------------------------------------------------------------------------------

  deliver(ref: ActorRef, message: Message, sender: ActorRef | undefined): void {
    // the local tell alone here, the rest in `deliverElsewhere`: small enough for V8 to inline into `send`
    const cell = (ref as CellRef)[CELL];
    if (cell !== undefined && !cell.isStopped) {
      this.enqueue(cell, message, sender?.id);
      return;
    }
    this.deliverElsewhere(ref, message, sender);
  }

  /** A tell that is not to a live local cell this ref holds: by path, to another node, or a dead letter. */
  private deliverElsewhere(ref: ActorRef, message: Message, sender: ActorRef | undefined): void {
    if (this.terminated) {
      this.deadLetter(ref.id, message, sender?.id, 'system-terminated');
      return;
    }
    if (ref.isLocal) {
      this.deliverLocal(ref.path, message, sender?.id);
      return;
    }
    const node = ref.address.node;
    if (sameNode(node, this.node)) {
      if (node.uid === ANY_INCARNATION) {
        this.deliverLocal(ref.path, message, sender?.id);
        return;
      }
      // our own address with another uid: a previous incarnation of this node
      this.deadLetter(ref.id, message, sender?.id, 'wrong-incarnation');
      return;
    }
    if (!this.transport) {
      this.deadLetter(ref.id, message, sender?.id, 'no-transport');
      return;
    }
    const trace = activeTraceparent();
    const path = ref.path;
    // two literals, not a spread: a spread built every envelope through a slow generic copy
    const envelope: Envelope =
      trace === undefined
        ? { to: path, toUid: node.uid, from: sender?.id, message }
        : { to: path, toUid: node.uid, from: sender?.id, message, trace };
    this.transport.send(node, envelope, laneOf(path));
  }

  /**
   * Entry point for messages from the network; the wire has validated the envelope already.
   * `origin` is the node incarnation the connection authenticated as: the only identity a
   * message may claim (see MessageTypes' identity rules).
   */
  receiveRemote(envelope: Envelope, origin: UniqueNodeAddress): void {
    if (this.terminated) {
      this.deadLetter(envelope.to, envelope.message, envelope.from, 'system-terminated');
      return;
    }
    if (envelope.toUid !== this.node.uid && envelope.toUid !== ANY_INCARNATION) {
      this.deadLetter(envelope.to, envelope.message, envelope.from, 'wrong-incarnation');
      return;
    }
    if (this.remoteRates.size > 0 && !this.withinRate(envelope.message.type, origin)) return;
    if (envelope.message.type === 'doyen.terminated') this.forgetRemoteWatch(envelope.message as Terminated);
    if (envelope.trace === undefined) {
      this.deliverLocal(envelope.to, envelope.message, envelope.from);
      return;
    }
    // the sender's span continues here: a server span around the delivery
    const attributes = { 'doyen.recipient': envelope.to, 'doyen.message.type': envelope.message.type };
    inSpan(
      'doyen.receive',
      'server',
      attributes,
      () => this.deliverLocal(envelope.to, envelope.message, envelope.from),
      envelope.trace,
    ).span.end();
  }

  /**
   * Caps how many messages of `type` each remote node may have delivered per second (a token
   * bucket per node on this system's clock, so simulations replay); beyond, they are dropped,
   * counted and logged. For requests whose answer costs far more than the request (a
   * `membership.pull` is answered with a whole membership). Infinity leaves the type unlimited.
   */
  limitRemoteRate(type: string, perSecond: number): void {
    if (perSecond === Number.POSITIVE_INFINITY) {
      this.remoteRates.delete(type);
      return;
    }
    this.remoteRates.set(type, new TokenBuckets(perSecond, () => this.clock.now()));
  }

  private withinRate(type: string, origin: UniqueNodeAddress): boolean {
    const buckets = this.remoteRates.get(type);
    if (!buckets) return true;
    const peer = nodeKey(origin);
    if (buckets.take(peer)) return true;
    this.metrics.inc('doyen_remote_rate_limited_total', 'Remote messages dropped over their per-node rate', {
      type,
    });
    this.limitLog.warn(
      `rate:${type}`,
      { event: 'remote.rate-limited', type, peer, perSecond: buckets.perSecond },
      `dropped ${type} from ${peer}: over ${buckets.perSecond} a second`,
    );
    return false;
  }

  private deliverLocal(path: string, message: Message, sender: string | undefined): void {
    const fn = this.functions.get(path);
    if (fn) {
      fn.handler(message, sender);
      return;
    }
    const cell = this.cells.get(path);
    if (!cell || cell.isStopped) {
      const reason = path.includes('/temp/ask-') ? 'ask-reply-after-timeout' : 'no-such-actor';
      this.deadLetter(this.addressOf(path), message, sender, reason);
      return;
    }
    this.enqueue(cell, message, sender);
  }

  private enqueue(cell: ActorCell, message: Message, sender: string | undefined): void {
    // a burst from outside any actor, already being worked off for this cell: the caller runs it
    if (this.dispatcher.inBurst(cell) && this.dispatcher.runInCaller(cell, message)) {
      if ((++this.enqueues & 63) === 0) this.mailboxDepthSampled.observe(0);
      return;
    }
    const result = cell.enqueue(message, sender);
    // nearly every offer returns the shared ACCEPTED: one comparison, and the rare outcomes out of line,
    // which keeps this small enough for V8 to inline into every sender's `send`
    if (result !== ACCEPTED && !this.offerOutcome(cell, message, sender, result)) return;
    // one enqueue in 64 samples the depth it found: the distribution without a cost per message
    if ((++this.enqueues & 63) === 0) this.mailboxDepthSampled.observe(cell.mailbox.size);
    // only a cell waiting for its turn: one backing off after a failure gains nothing from turns
    if (cell.mailbox.size >= this.drainBacklogAt && cell.scheduled) this.dispatcher.drainBurst(cell);
  }

  /** Acts on an offer that was not a plain ACCEPTED; returns whether the message was queued. */
  private offerOutcome(
    cell: ActorCell,
    message: Message,
    sender: string | undefined,
    result: OfferResult,
  ): boolean {
    if (!result.accepted) {
      this.refused(cell, message, sender, result.policy);
      return false;
    }
    if (result.evicted) {
      const e = result.evicted;
      this.mailboxDropped(cell, e.message, 'drop-oldest');
      this.deadLetter(cell.ref.id, e.message, e.sender, 'mailbox-overflow-dropped-oldest');
    } else if (result.highWater) this.mailboxHighWater(cell);
    return true;
  }

  /** A full bounded mailbox refused the message: dropped, dead-lettered, and a `reject` tells the sender. */
  private refused(
    cell: ActorCell,
    message: Message,
    sender: string | undefined,
    policy: OverflowPolicy,
  ): void {
    this.mailboxDropped(cell, message, policy);
    this.deadLetter(cell.ref.id, message, sender, 'mailbox-full');
    if (policy === 'reject' && sender !== undefined && message.type !== 'doyen.rejected') {
      const rejected: Rejected = {
        type: 'doyen.rejected',
        target: cell.ref.id,
        reason: 'mailbox-full',
        messageType: message.type,
      };
      this.safeRef(sender)?.send(rejected);
    }
  }

  /** A bounded mailbox was full: never silent, whatever the policy. */
  private mailboxDropped(cell: ActorCell, message: Message, policy: OverflowPolicy): void {
    const path = cell.ref.path;
    const capacity = cell.mailbox.config.capacity;
    this.metrics.inc('doyen_mailbox_dropped_total', 'Local messages dropped by a full bounded mailbox', {
      policy,
    });
    this.mailboxLog.warn(
      `mailbox:${path}`,
      { event: 'mailbox.overflow', path, capacity, policy, messageType: message.type },
      `mailbox of ${path} is full (capacity ${capacity}, ${policy}): ${policy === 'drop-oldest' ? 'oldest message' : 'message'} dropped`,
    );
  }

  /** The queue grew through the high-water mark: a backlog is building (the message was kept). */
  private mailboxHighWater(cell: ActorCell): void {
    const path = cell.ref.path;
    const highWaterMark = cell.mailbox.config.highWaterMark;
    this.metrics.inc(
      'doyen_mailbox_high_water_total',
      'Times a local mailbox grew through its high-water mark',
    );
    this.mailboxLog.warn(
      `mailbox:${path}`,
      { event: 'mailbox.high-water', path, highWaterMark, depth: cell.mailbox.size },
      `mailbox of ${path} holds ${cell.mailbox.size} messages (high-water mark ${highWaterMark}): it is falling behind`,
    );
  }

  private *mailboxDepths(): Iterable<[string, number]> {
    for (const [path, cell] of this.cells) yield [path, cell.mailbox.size];
  }

  deadLetter(
    recipient: string,
    message: Message,
    sender: string | undefined,
    reason: DeadLetterReason,
  ): void {
    this.deadLetters.publish({ recipient, message, reason, ...(sender !== undefined ? { sender } : {}) });
  }

  // ---- ask ------------------------------------------------------------------------------------

  ask<R extends Message>(
    target: ActorRef,
    build: (replyTo: ActorRef<R>) => Message,
    options: AskOptions | undefined,
  ): Promise<R> {
    if (this.terminated) return Promise.reject(new ActorSystemTerminatedError('ask'));
    const timeout = options?.timeout ?? 5000;
    const peer = target.isLocal ? undefined : nodeKey(target.address.node);
    let peerAsks: Set<PendingAsk> | undefined;
    if (peer !== undefined) {
      peerAsks = this.asksByNode.get(peer);
      if (!peerAsks) this.asksByNode.set(peer, (peerAsks = new Set()));
      if (peerAsks.size >= this.limits.maxPendingAsksPerNode) {
        this.metrics.inc('doyen_ask_refused_total', 'Asks refused: too many waiting for one remote node');
        this.limitLog.warn(
          'ask.limit',
          { event: 'ask.limit', peer, cap: this.limits.maxPendingAsksPerNode },
          `ask to ${target.id} refused: ${peerAsks.size} asks to ${peer} are waiting for replies`,
        );
        return Promise.reject(new TooManyPendingAsksError(target.id, this.limits.maxPendingAsksPerNode));
      }
    }
    const prefix = laneOf(target.path) === 'system' ? '/system/temp' : '/temp';
    const path = `${prefix}/ask-${(++this.seq).toString(36)}`;
    return new Promise<R>((resolve, reject) => {
      const pending = new PendingAsk(
        this,
        path,
        target,
        timeout,
        resolve as (m: Message) => void,
        reject,
        this.clock.now(),
      );
      this.functions.set(path, pending);
      this.askDeadlines.add(timeout, pending);
      if (peerAsks) {
        pending.peer = peer;
        peerAsks.add(pending);
      }
      const replyTo = this.makeLocalRef(path) as unknown as ActorRef<R>;
      // a client span when OpenTelemetry is there: the request carries its context to the target
      const { span } = inSpan('doyen.ask', 'client', { 'doyen.target': target.id }, () => {
        try {
          target.send(build(replyTo), replyTo);
        } catch (error) {
          pending.fail(error);
        }
      });
      pending.span = span;
      // answered before `send` returned (a target that runs in its caller, see Dispatcher.runInCaller):
      // settling found no span to end
      if (pending.settled) span?.end();
    });
  }

  /** Ends a pending ask: its temporary ref stops answering, its deadline is skipped. */
  settleAsk(ask: PendingAsk, expired: boolean): void {
    this.functions.delete(ask.path);
    if (ask.peer !== undefined) {
      const peerAsks = this.asksByNode.get(ask.peer);
      peerAsks?.delete(ask);
      if (peerAsks?.size === 0) this.asksByNode.delete(ask.peer);
    }
    if (!expired) this.askDeadlines.settled(ask.timeout);
    ask.span?.end(expired ? new AskTimeoutError(ask.path, ask.timeout) : undefined);
    (expired ? this.askTimedOut : this.askSettled).observe((this.clock.now() - ask.startedAt) / 1000);
  }

  /** The capacity of a local actor's mailbox, for the error an ask fails with when it was full. */
  mailboxCapacityOf(ref: ActorRef): number {
    return this.cells.get(ref.path)?.mailbox.config.capacity ?? 0;
  }

  // ---- death watch ----------------------------------------------------------------------------

  /** `watcher` receives `doyen.terminated` when `target` stops, fails for good, or its node goes. */
  watch(target: ActorRef, watcher: ActorRef): void {
    if (target.isLocal) {
      const cell = this.cells.get(target.path);
      if (!cell || cell.isStopped) watcher.send(this.terminatedMessage(target, 'not-found'));
      else this.addWatcher(cell, watcher);
      return;
    }
    const key = nodeKey(target.address.node);
    let byTarget = this.remoteWatched.get(key);
    if (!byTarget) this.remoteWatched.set(key, (byTarget = new Map()));
    let entry = byTarget.get(target.id);
    if (!entry) byTarget.set(target.id, (entry = { target, watchers: new Map() }));
    entry.watchers.set(watcher.id, watcher);
    const watch: Watch = { type: 'doyen.watch', target: target.path, watcher };
    this.remoteRef(target.address.node, '/system/death-watch').send(watch);
  }

  unwatch(target: ActorRef, watcher: ActorRef): void {
    if (target.isLocal) {
      const cell = this.cells.get(target.path);
      if (cell) this.removeWatcher(cell, watcher.id);
      return;
    }
    this.remoteWatched.get(nodeKey(target.address.node))?.get(target.id)?.watchers.delete(watcher.id);
    const unwatch: Unwatch = { type: 'doyen.unwatch', target: target.path, watcher };
    this.remoteRef(target.address.node, '/system/death-watch').send(unwatch);
  }

  /**
   * The cluster calls this when a node incarnation becomes unreachable or is removed: every
   * watcher of an actor there gets `Terminated`, and watches held by that node are dropped.
   * Without a uid, every incarnation at that address is meant.
   */
  nodeTerminated(node: NodeAddress & { uid?: string }, reason: 'node-unreachable' | 'node-removed'): void {
    const matches = (other: UniqueNodeAddress) =>
      sameNode(other, node) && (node.uid === undefined || node.uid === other.uid);
    for (const [key, byTarget] of this.remoteWatched) {
      const first = byTarget.values().next().value;
      if (!first || !matches(first.target.address.node)) continue;
      this.remoteWatched.delete(key);
      for (const { target, watchers } of byTarget.values()) {
        for (const watcher of watchers.values()) watcher.send(this.terminatedMessage(target, reason));
      }
    }
    this.releaseWatchesOf(matches);
    if (reason === 'node-removed') this.failAsksTo(matches);
    for (const buckets of this.remoteRates.values()) buckets.forgetWhere((key) => matches(nodeOfKey(key)));
  }

  /**
   * The transport calls this when a node incarnation that is not a member has no connection
   * left: the watches it registered here are dropped (a member's stay until the cluster says it
   * is unreachable or removed, so a reconnect does not lose them). Its rate buckets go too.
   */
  nodeDisconnected(node: UniqueNodeAddress): void {
    const key = nodeKey(node);
    for (const buckets of this.remoteRates.values()) buckets.forget(key);
    if (this.watchesByNode.of(key) === 0) return;
    this.releaseWatchesOf((other) => other.uid === node.uid && sameNode(other, node));
    this.logger.debug({ event: 'death-watch.released', peer: key }, `released the watches of ${key}`);
  }

  /** Remote watches held here by one remote node incarnation (for tests and metrics). */
  watchesHeldBy(node: UniqueNodeAddress): number {
    return this.watchesByNode.of(nodeKey(node));
  }

  /** Asks waiting for replies from one remote node incarnation (for tests and metrics). */
  pendingAsksTo(node: UniqueNodeAddress): number {
    return this.asksByNode.get(nodeKey(node))?.size ?? 0;
  }

  private releaseWatchesOf(matches: (node: UniqueNodeAddress) => boolean): void {
    for (const cell of this.cells.values()) {
      cell.forEachWatcher((watcher) => {
        if (!watcher.isLocal && matches(watcher.address.node)) this.removeWatcher(cell, watcher.id);
      });
    }
  }

  /** A removed node will not answer: its pending asks fail now rather than at their timeouts. */
  private failAsksTo(matches: (node: UniqueNodeAddress) => boolean): void {
    for (const [peer, asks] of [...this.asksByNode]) {
      if (!matches(nodeOfKey(peer))) continue;
      this.asksByNode.delete(peer);
      for (const ask of [...asks]) ask.fail(new AskTargetGoneError(ask.targetId));
    }
  }

  /** Adds a watcher; one held for a remote node counts against that node's cap (dropped beyond it). */
  private addWatcher(cell: ActorCell, watcher: ActorRef): void {
    if (cell.watcher(watcher.id) !== undefined) return;
    if (!watcher.isLocal) {
      const peer = nodeKey(watcher.address.node);
      if (!this.watchesByNode.tryAcquire(peer)) {
        this.metrics.inc(
          'doyen_watch_dropped_total',
          'Death-watch registrations dropped over the per-node cap',
        );
        this.limitLog.warn(
          'death-watch.limit',
          {
            event: 'death-watch.limit',
            peer,
            cap: this.watchesByNode.cap,
            totalCap: this.watchesByNode.totalCap,
          },
          `dropped a watch from ${peer}: it holds ${this.watchesByNode.of(peer)} (cap ${this.watchesByNode.cap}), all peers ${this.watchesByNode.total} (cap ${this.watchesByNode.totalCap})`,
        );
        return;
      }
    }
    cell.addWatcher(watcher);
  }

  private removeWatcher(cell: ActorCell, id: string): void {
    const watcher = cell.watcher(id);
    if (!watcher) return;
    cell.removeWatcher(id);
    if (!watcher.isLocal) this.watchesByNode.release(nodeKey(watcher.address.node));
  }

  private onDeathWatchMessage(message: Message): void {
    const m = message as Watch | Unwatch;
    if (m.type === 'doyen.watch') {
      const cell = this.cells.get(m.target);
      if (!cell || cell.isStopped)
        m.watcher.send(this.terminatedMessage(this.makeLocalRef(m.target), 'not-found'));
      else this.addWatcher(cell, m.watcher);
    } else if (m.type === 'doyen.unwatch') {
      const cell = this.cells.get(m.target);
      if (cell) this.removeWatcher(cell, m.watcher.id);
    }
  }

  private forgetRemoteWatch(message: Terminated): void {
    const ref = message.ref;
    if (ref.isLocal) return;
    const byTarget = this.remoteWatched.get(nodeKey(ref.address.node));
    byTarget?.delete(ref.id);
  }

  private terminatedMessage(ref: ActorRef, reason: TerminationReason): Terminated {
    return { type: 'doyen.terminated', ref, reason };
  }

  // ---- cell host ------------------------------------------------------------------------------

  schedule(cell: ActorCell): void {
    this.dispatcher.schedule(cell);
  }

  onFailure(cell: ActorCell, error: Error, decision: 'restart' | 'stop', delayMs: number): void {
    this.metrics.inc('doyen_actor_failures_total', 'Actor logic failures', { decision });
    this.logger.error(
      { event: 'actor.failed', path: cell.ref.path, err: error, decision, delayMs },
      decision === 'restart'
        ? `actor ${cell.ref.path} failed; restarting in ${delayMs} ms`
        : `actor ${cell.ref.path} failed; stopping it`,
    );
  }

  onStopped(cell: ActorCell, reason: TerminationReason, undelivered: Delivery[]): void {
    if (this.cells.get(cell.ref.path) === cell) this.cells.delete(cell.ref.path);
    this.mailboxLog.forget(`mailbox:${cell.ref.path}`);
    (cell.ref as CellRef)[CELL] = undefined;
    cell.parent?.removeChild(cell);
    for (const d of undelivered) this.deadLetter(cell.ref.id, d.message, d.sender, 'actor-stopped');
    cell.forEachWatcher((watcher) => {
      watcher.send(this.terminatedMessage(cell.ref, reason));
      if (!watcher.isLocal) this.watchesByNode.release(nodeKey(watcher.address.node));
    });
    cell.clearWatchers();
    this.logger.debug(
      { event: 'actor.stopped', path: cell.ref.path, reason },
      `actor ${cell.ref.path} stopped`,
    );
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** Stops every actor and fails pending asks. Idempotent. */
  terminate(): void {
    if (this.terminated) return;
    // what cannot be delivered now is the expected end of things: counted, not logged
    this.deadLetters.shutdownStarted();
    for (const cell of [...this.cells.values()]) if (!cell.parent) cell.stop('stopped');
    this.terminated = true;
    this.askDeadlines.clear();
    for (const [path, fn] of [...this.functions]) {
      if (fn.onTerminate) {
        this.functions.delete(path);
        fn.onTerminate();
      }
    }
  }

  get isTerminated(): boolean {
    return this.terminated;
  }

  // ---- helpers --------------------------------------------------------------------------------

  private isSelf(node: UniqueNodeAddress): boolean {
    return node.uid === this.node.uid && sameNode(node, this.node);
  }

  private addressOf(path: string): string {
    return formatActorAddress({ cluster: this.cluster, node: this.node, path });
  }

  private makeLocalRef(path: string): CellRef {
    const address: ActorAddress = { cluster: this.cluster, node: this.node, path };
    // formatActorAddress's result, from its two constant parts: one ref per ask makes this hot
    return new CellRef(this, address, `${this.localAddressPrefix}${path}${this.localAddressSuffix}`);
  }

  private safeRef(address: string): ActorRef | undefined {
    try {
      return this.refFor(address);
    } catch {
      return undefined;
    }
  }
}
