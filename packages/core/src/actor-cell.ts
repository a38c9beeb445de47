import type { AnyActorLogic, InspectionEvent, Observer } from 'xstate';
import type { ActorRef } from './actor-ref.js';
import type { CellRuntime, RuntimeHost } from './cell-runtime.js';
import type { Clock } from './clock.js';
import type { Runnable } from './dispatcher.js';
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
export class ActorCell implements Runnable, RuntimeHost {
  scheduled = false;
  readonly mailbox: Mailbox;
  readonly watchers = new Map<string, ActorRef>();
  readonly children = new Set<ActorCell>();
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  private readonly runtime: CellRuntime;
  private status: CellStatus = 'running';
  private failures: number[] = [];
  private restartTimer: unknown;
  private snapshotListeners = new Set<(snapshot: unknown) => void>();

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
    this.snapshotListeners.add(listener);
    if (this.snapshotListeners.size === 1) this.runtime.setListening(true);
    return () => {
      if (this.snapshotListeners.delete(listener) && this.snapshotListeners.size === 0)
        this.runtime.setListening(false);
    };
  }

  emit(snapshot: unknown): void {
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
    if (result.accepted && this.status === 'running' && !this.scheduled) this.host.schedule(this);
    return result;
  }

  hasWork(): boolean {
    return this.status === 'running' && this.mailbox.size > 0;
  }

  runBatch(max: number): number {
    return this.status === 'running' ? this.runtime.run(max) : 0;
  }

  failed(error: Error): void {
    if (this.status === 'stopped') return;
    const now = this.host.clock.now();
    this.failures.push(now);
    const decision = decideRestart(this.supervision, this.failures, now, this.host.random());
    const strategy = this.supervision;
    if (strategy.kind === 'restart') this.failures = this.failures.filter((t) => now - t < strategy.withinMs);
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
    this.snapshotListeners.clear();
    this.host.onStopped(this, reason, this.mailbox.drain());
  }
}

function inspectionFunction(inspect: CellHost['inspect']): ((event: InspectionEvent) => void) | undefined {
  if (typeof inspect === 'function') return inspect;
  if (inspect?.next) return (event) => inspect.next!(event);
  return undefined;
}
