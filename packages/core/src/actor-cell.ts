import type { AnyActorLogic, InspectionEvent, Observer } from 'xstate';
import type { ActorRef } from './actor-ref.js';
import type { CellRuntime, RuntimeHost } from './cell-runtime.js';
import type { Clock } from './clock.js';
import type { CallerRunnable } from './dispatcher.js';
import { type Delivery, Mailbox, type MailboxConfig } from './mailbox.js';
import type { Message } from './message.js';
import { decideRestart, type SupervisionStrategy } from './supervision.js';
import type { TerminationReason } from './system-messages.js';
import { reducerOf } from './transition-logic.js';
import { TransitionRuntime } from './transition-runtime.js';
import { XstateRuntime } from './xstate-runtime.js';

/** What a cell needs from its system. */
export interface CellHost {
  readonly clock: Clock;
  readonly random: () => number;
  readonly inspect: Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined;
  schedule(cell: ActorCell): void;
  onFailure(cell: ActorCell, error: Error, decision: 'restart' | 'stop', delayMs: number): void;
  onStopped(cell: ActorCell, reason: TerminationReason, undelivered: Delivery[]): void;
}

type CellStatus = 'running' | 'backing-off' | 'stopped';

/**
 * One actor at run time: its mailbox, the runtime processing it one message at a time (an xstate
 * actor, or the reducer itself for transition logic), and its supervision. A failed runtime is
 * started afresh from the same logic.
 */
export class ActorCell implements CallerRunnable<Message>, RuntimeHost {
  scheduled = false;
  /** Read before each turn (`SpawnOptions.gate`); undefined for nearly every actor. */
  gate: (() => boolean) | undefined = undefined;
  readonly mailbox: Mailbox;
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  private readonly runtime: CellRuntime;
  private status: CellStatus = 'running';
  // Allocated on first use: most of a million actors never get a watcher, a child, a listener or
  // a failure, and each empty Map or Set costs ~130 bytes (issue 31: per-actor memory). A lone
  // watcher is kept as its ref, no Map: nearly every watched actor has one (a sharded entity, its
  // region), and a Map with one entry cost each entity ~185 bytes.
  private watchedBy: ActorRef | Map<string, ActorRef> | undefined;
  private childSet: Set<ActorCell> | undefined;
  private failures: number[] | undefined;
  private restartTimer: unknown;
  private snapshotListeners: Set<(snapshot: unknown) => void> | undefined;

  constructor(
    private readonly host: CellHost,
    readonly ref: ActorRef,
    logic: AnyActorLogic,
    private readonly makeInput: () => unknown,
    mailbox: MailboxConfig,
    private readonly supervision: SupervisionStrategy,
    readonly parent: ActorCell | undefined,
    /** A persisted snapshot to resume from on the first start (e.g. a handed-over singleton). */
    private initialSnapshot?: unknown,
  ) {
    this.mailbox = new Mailbox(mailbox);
    this.inspect = inspectionFunction(host.inspect);
    const reducer = reducerOf(logic);
    this.runtime = reducer
      ? new TransitionRuntime(this, logic, reducer)
      : new XstateRuntime(this, logic, host.inspect);
  }

  /** The watcher with this id (a ref's `id`), if it watches this actor. */
  watcher(id: string): ActorRef | undefined {
    const by = this.watchedBy;
    if (by === undefined) return undefined;
    if (by instanceof Map) return by.get(id);
    return by.id === id ? by : undefined;
  }

  /** Calls `visit` with every watcher; `visit` may remove the one it is given. */
  forEachWatcher(visit: (watcher: ActorRef) => void): void {
    const by = this.watchedBy;
    if (by === undefined) return;
    if (by instanceof Map) for (const watcher of by.values()) visit(watcher);
    else visit(by);
  }

  /** Adds `watcher` under its id (once: adding it again changes nothing). */
  addWatcher(watcher: ActorRef): void {
    const by = this.watchedBy;
    if (by === undefined || (!(by instanceof Map) && by.id === watcher.id)) this.watchedBy = watcher;
    else if (by instanceof Map) by.set(watcher.id, watcher);
    else
      this.watchedBy = new Map([
        [by.id, by],
        [watcher.id, watcher],
      ]);
  }

  removeWatcher(id: string): void {
    const by = this.watchedBy;
    if (by instanceof Map) {
      if (by.delete(id) && by.size === 0) this.watchedBy = undefined;
    } else if (by?.id === id) this.watchedBy = undefined;
  }

  clearWatchers(): void {
    this.watchedBy = undefined;
  }

  get children(): ReadonlySet<ActorCell> {
    return this.childSet ?? NO_CHILDREN;
  }

  addChild(child: ActorCell): void {
    (this.childSet ??= new Set()).add(child);
  }

  removeChild(child: ActorCell): void {
    if (this.childSet?.delete(child) && this.childSet.size === 0) this.childSet = undefined;
  }

  get path(): string {
    return this.ref.path;
  }

  get clock(): Clock {
    return this.host.clock;
  }

  get running(): boolean {
    return this.status === 'running';
  }

  /** xstate's persisted snapshot of the running actor (plain data), for hand-over. */
  getPersistedSnapshot(): unknown {
    return this.runtime.getPersistedSnapshot();
  }

  get isStopped(): boolean {
    return this.status === 'stopped';
  }

  /** The actor's current xstate snapshot (undefined while restarting). */
  getSnapshot(): unknown {
    return this.runtime.getSnapshot();
  }

  subscribe(listener: (snapshot: unknown) => void): () => void {
    const listeners = (this.snapshotListeners ??= new Set());
    listeners.add(listener);
    if (listeners.size === 1) this.runtime.setListening(true);
    return () => {
      if (listeners.delete(listener) && listeners.size === 0) {
        if (this.snapshotListeners === listeners) this.snapshotListeners = undefined;
        this.runtime.setListening(false);
      }
    };
  }

  emit(snapshot: unknown): void {
    if (this.snapshotListeners === undefined) return;
    for (const listener of this.snapshotListeners) {
      try {
        listener(snapshot);
      } catch {
        // a listener's failure is not the actor's
      }
    }
  }

  start(): void {
    const snapshot = this.initialSnapshot;
    this.initialSnapshot = undefined;
    this.runtime.start(snapshot, this.makeInput());
    if (this.status === 'running' && this.mailbox.size > 0) this.host.schedule(this);
  }

  enqueue(message: Message, sender: string | undefined): ReturnType<Mailbox['offer']> {
    const result = this.mailbox.offerMessage(message, sender);
    // while the actor's turn is pending (nearly every message of a burst) this is one flag read
    if (!this.scheduled && this.status === 'running' && result.accepted) this.host.schedule(this);
    return result;
  }

  /** Processes `message` now, unless the actor is not running or has messages of its own waiting. */
  runOne(message: Message): boolean {
    // a gated actor's message waits in its mailbox for a turn, where the gate is read
    if (this.status !== 'running' || this.scheduled || this.mailbox.size > 0 || this.gate !== undefined)
      return false;
    return this.runtime.runOne(message);
  }

  hasWork(): boolean {
    return this.status === 'running' && this.mailbox.size > 0;
  }

  runBatch(max: number): number {
    if (this.status !== 'running') return 0;
    // before the turn takes anything: a refused turn leaves every message in the mailbox, in order
    if (this.gate !== undefined && !this.gate()) return 0;
    return this.runtime.run(max);
  }

  failed(error: Error): void {
    if (this.status === 'stopped') return;
    const now = this.host.clock.now();
    const failures = (this.failures ??= []);
    failures.push(now);
    const decision = decideRestart(this.supervision, failures, now, this.host.random());
    const strategy = this.supervision;
    if (strategy.kind === 'restart') this.failures = failures.filter((t) => now - t < strategy.withinMs);
    this.runtime.discard();
    if (decision.action === 'stop') {
      this.host.onFailure(this, error, 'stop', 0);
      this.stop('failed');
      return;
    }
    this.host.onFailure(this, error, 'restart', decision.delayMs);
    this.status = 'backing-off';
    this.restartTimer = this.host.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (this.status !== 'backing-off') return;
      this.status = 'running';
      this.start();
    }, decision.delayMs);
  }

  completed(): void {
    this.stop('stopped');
  }

  /** Stops this actor and its children; queued messages become dead letters. */
  stop(reason: TerminationReason): void {
    if (this.status === 'stopped') return;
    this.status = 'stopped';
    for (const child of [...this.children]) child.stop(reason === 'failed' ? 'stopped' : reason);
    if (this.restartTimer !== undefined) this.host.clock.clearTimeout(this.restartTimer);
    this.runtime.stop();
    this.snapshotListeners?.clear();
    this.host.onStopped(this, reason, this.mailbox.drain());
  }
}

const NO_CHILDREN: ReadonlySet<ActorCell> = new Set();

function inspectionFunction(inspect: CellHost['inspect']): ((event: InspectionEvent) => void) | undefined {
  if (typeof inspect === 'function') return inspect;
  if (inspect?.next) return (event) => inspect.next!(event);
  return undefined;
}
