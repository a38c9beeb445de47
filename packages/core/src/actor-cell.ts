import {
  type AnyActorLogic,
  type AnyActorRef,
  createActor,
  type InspectionEvent,
  type Observer,
} from 'xstate';
import type { ActorRef } from './actor-ref.js';
import type { Clock } from './clock.js';
import type { Runnable } from './dispatcher.js';
import { toError } from './errors.js';
import { type Delivery, Mailbox, type MailboxConfig } from './mailbox.js';
import type { Message, TerminationReason } from './message.js';
import { decideRestart, type SupervisionStrategy } from './supervision.js';

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
 * One actor at run time: its mailbox, the xstate actor processing it one message at a time,
 * and its supervision. A failed xstate actor is replaced by a fresh one from the same logic.
 */
export class ActorCell implements Runnable {
  scheduled = false;
  readonly mailbox: Mailbox;
  readonly watchers = new Map<string, ActorRef>();
  readonly children = new Set<ActorCell>();
  private actor: AnyActorRef | undefined;
  private status: CellStatus = 'running';
  private failures: number[] = [];
  private restartTimer: unknown;
  private stoppingOnPurpose = false;
  private snapshotListeners = new Set<(snapshot: unknown) => void>();

  constructor(
    private readonly host: CellHost,
    readonly ref: ActorRef,
    private readonly logic: AnyActorLogic,
    private readonly makeInput: () => unknown,
    mailbox: MailboxConfig,
    private readonly supervision: SupervisionStrategy,
    readonly parent: ActorCell | undefined,
    /** A persisted snapshot to resume from on the first start (e.g. a handed-over singleton). */
    private initialSnapshot?: unknown,
  ) {
    this.mailbox = new Mailbox(mailbox);
  }

  /** xstate's persisted snapshot of the running actor (plain data), for hand-over. */
  getPersistedSnapshot(): unknown {
    const actor = this.actor as { getPersistedSnapshot?: () => unknown } | undefined;
    return actor?.getPersistedSnapshot?.();
  }

  get isStopped(): boolean {
    return this.status === 'stopped';
  }

  /** The xstate actor's current snapshot (undefined while restarting). */
  getSnapshot(): unknown {
    return this.actor?.getSnapshot();
  }

  subscribe(listener: (snapshot: unknown) => void): () => void {
    this.snapshotListeners.add(listener);
    return () => this.snapshotListeners.delete(listener);
  }

  start(): void {
    const snapshot = this.initialSnapshot;
    this.initialSnapshot = undefined;
    const actor = createActor(this.logic, {
      input: this.makeInput(),
      ...(snapshot !== undefined ? { snapshot: snapshot as never } : {}),
      clock: this.host.clock,
      id: this.ref.path,
      ...(this.host.inspect ? { inspect: this.host.inspect } : {}),
    });
    this.actor = actor;
    // An error observer on every actor: xstate would otherwise rethrow on a timer and crash the process.
    actor.subscribe({
      next: (snapshot) => {
        for (const l of this.snapshotListeners) l(snapshot);
      },
      error: (error) => this.failed(toError(error)),
      complete: () => {
        if (!this.stoppingOnPurpose && this.actor === actor) this.stop('stopped');
      },
    });
    actor.start();
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
    let n = 0;
    while (n < max && this.status === 'running') {
      const message = this.mailbox.takeMessage();
      if (message === undefined) break;
      n++;
      this.actor!.send(message);
    }
    return n;
  }

  private failed(error: Error): void {
    if (this.status === 'stopped') return;
    const now = this.host.clock.now();
    this.failures.push(now);
    const decision = decideRestart(this.supervision, this.failures, now, this.host.random());
    const strategy = this.supervision;
    if (strategy.kind === 'restart') this.failures = this.failures.filter((t) => now - t < strategy.withinMs);
    this.actor = undefined;
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

  /** Stops this actor and its children; queued messages become dead letters. */
  stop(reason: TerminationReason): void {
    if (this.status === 'stopped') return;
    this.status = 'stopped';
    for (const child of [...this.children]) child.stop(reason === 'failed' ? 'stopped' : reason);
    if (this.restartTimer !== undefined) this.host.clock.clearTimeout(this.restartTimer);
    const actor = this.actor;
    this.actor = undefined;
    if (actor) {
      this.stoppingOnPurpose = true;
      try {
        actor.stop();
      } catch {
        // stopping a broken actor must not prevent the bookkeeping below
      }
    }
    this.snapshotListeners.clear();
    this.host.onStopped(this, reason, this.mailbox.drain());
  }
}
